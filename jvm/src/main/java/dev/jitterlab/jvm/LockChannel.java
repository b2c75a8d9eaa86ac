package dev.jitterlab.jvm;

import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/** java-lock: ReentrantLock with two Conditions on a single slot (the seeds' "Java threads with mutex"). */
final class LockChannel implements Channel {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition full = lock.newCondition();
    private final Condition empty = lock.newCondition();
    private Message slot;

    @Override
    public void send(Message m) throws InterruptedException {
        lock.lock();
        try {
            while (slot != null) empty.await();
            slot = m;
            full.signal();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public Message receive() throws InterruptedException {
        lock.lock();
        try {
            while (slot == null) full.await();
            Message m = slot;
            slot = null;
            empty.signal();
            return m;
        } finally {
            lock.unlock();
        }
    }
}

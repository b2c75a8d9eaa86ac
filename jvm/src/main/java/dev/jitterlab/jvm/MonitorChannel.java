package dev.jitterlab.jvm;

/** java-monitor: synchronized with wait/notify on a single slot. */
final class MonitorChannel implements Channel {
    private Message slot;

    @Override
    public synchronized void send(Message m) throws InterruptedException {
        while (slot != null) wait();
        slot = m;
        notifyAll();
    }

    @Override
    public synchronized Message receive() throws InterruptedException {
        while (slot == null) wait();
        Message m = slot;
        slot = null;
        notifyAll();
        return m;
    }
}

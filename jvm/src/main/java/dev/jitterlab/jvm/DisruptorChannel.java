package dev.jitterlab.jvm;

import com.lmax.disruptor.AlertException;
import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.BusySpinWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import com.lmax.disruptor.TimeoutException;
import com.lmax.disruptor.WaitStrategy;
import com.lmax.disruptor.YieldingWaitStrategy;

/**
 * disruptor: an LMAX Disruptor 4 ring buffer per pair. The receiver waits on the ring's
 * SequenceBarrier, which is where a Disruptor consumer waits, so the chosen WaitStrategy
 * (blocking, yielding, busy-spin) is the one in use; the receiver thread stays the
 * harness's own, as in the other techniques.
 */
final class DisruptorChannel implements Channel {
    /** The ring's event: a reference to the message, so a new Message per sample stays garbage. */
    static final class Slot {
        Message message;
    }

    private final RingBuffer<Slot> ring;
    private final SequenceBarrier barrier;
    private final Sequence consumed = new Sequence(-1);
    private long next;

    DisruptorChannel(String waitStrategy) {
        WaitStrategy strategy = switch (waitStrategy) {
            case "blocking" -> new BlockingWaitStrategy();
            case "yielding" -> new YieldingWaitStrategy();
            case "busy-spin" -> new BusySpinWaitStrategy();
            default -> throw new IllegalArgumentException("--wait-strategy expects blocking, yielding or busy-spin");
        };
        ring = RingBuffer.createSingleProducer(Slot::new, 64, strategy);
        barrier = ring.newBarrier();
        ring.addGatingSequences(consumed);
    }

    @Override
    public void send(Message m) {
        long seq = ring.next();
        ring.get(seq).message = m;
        ring.publish(seq);
    }

    @Override
    public Message receive() throws InterruptedException {
        try {
            barrier.waitFor(next);
        } catch (AlertException | TimeoutException e) {
            throw new InterruptedException("disruptor barrier: " + e);
        }
        Slot slot = ring.get(next);
        Message m = slot.message;
        slot.message = null;
        consumed.set(next++);
        return m;
    }

    @Override
    public void close() {
        barrier.alert();
    }
}

package dev.jitterlab.jvm;

import com.lmax.disruptor.AlertException;
import com.lmax.disruptor.BusySpinWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import com.lmax.disruptor.TimeoutException;
import com.lmax.disruptor.YieldingWaitStrategy;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * pipeline: seed 002's System Jitter Utility on its own runtime. A producer busy-spins
 * --interval-ns between publications into one Disruptor ring; an accumulator and a
 * journaller each consume every event, busy-waiting on the ring's barrier. The journaller
 * writes each transit latency to a journal file. The hot path allocates nothing: the ring's
 * events are preallocated longs, the samples go to preallocated arrays, and the journal goes
 * through one reused direct buffer.
 *
 * Four series, one per "pair" of the run file: 0 accumulator transit, 1 accumulator
 * inter-message, 2 journaller transit, 3 journaller inter-message (as jitterlab-pipeline).
 */
final class PipelineBenchmark extends Benchmark {
    static final String[] SERIES = {
        "accumulator-transit", "accumulator-inter-message", "journaller-transit", "journaller-inter-message"};
    private static final int RING_SLOTS = 4096;
    private static final int JOURNAL_BUFFER = 1 << 16;

    /** The ring's event: the producer's timestamp, written in place. */
    static final class Event {
        long tPublish;
    }

    /** Three threads spin (producer and two consumers); with fewer CPUs one is always off a CPU. */
    static final int SPINNING_THREADS = 3;

    private final long intervalNs;
    private final Path journalPath;
    // Like jitterlab-pipeline: busy-spin when every spinning thread has a CPU, else yield.
    final boolean yielding = Runtime.getRuntime().availableProcessors() < SPINNING_THREADS;
    private final RingBuffer<Event> ring = RingBuffer.createSingleProducer(Event::new, RING_SLOTS,
            yielding ? new YieldingWaitStrategy() : new BusySpinWaitStrategy());
    private final SequenceBarrier[] barriers = {ring.newBarrier(), ring.newBarrier()};
    private final Sequence[] consumed = {new Sequence(-1), new Sequence(-1)};
    private volatile long journalBytes;
    private volatile String journalError = "";

    PipelineBenchmark(int messages, int warmup, long intervalNs, Path journalPath) {
        super(SERIES.length, messages, warmup, 1, 0);
        this.intervalNs = intervalNs;
        this.journalPath = journalPath;
        ring.addGatingSequences(consumed);
    }

    String spinFallbackReason() {
        return yielding ? SPINNING_THREADS + " spinning threads on " + Runtime.getRuntime().availableProcessors()
                + " CPUs: waiting by yielding (Disruptor YieldingWaitStrategy) instead of busy-spinning" : "";
    }

    long journalBytes() {
        return journalBytes;
    }

    String journalError() {
        return journalError;
    }

    @Override
    void requestStop() {
        super.requestStop();
        for (SequenceBarrier b : barriers) b.alert();
    }

    @Override
    boolean run() throws InterruptedException {
        final long total = (long) warmup + samples;
        Thread accumulator = new Thread(() -> consume(0, total, null), "accumulator");
        Thread journaller = new Thread(() -> journal(total), "journaller");
        accumulator.start();
        journaller.start();
        placements().note("producer", -1);
        long next = System.nanoTime();
        for (long n = 0; n < total && !stop; n++) {
            while (System.nanoTime() < next) {  // the seed's busy-spin between publications
                if (yielding) Thread.yield();
                else Thread.onSpinWait();
            }
            long t = System.nanoTime();
            long seq = ring.next();
            ring.get(seq).tPublish = t;
            ring.publish(seq);
            next = t + intervalNs;
        }
        accumulator.join();
        journaller.join();
        return !stop;
    }

    private void journal(long total) {
        ByteBuffer buffer = ByteBuffer.allocateDirect(JOURNAL_BUFFER).order(ByteOrder.LITTLE_ENDIAN);
        try (FileChannel file = FileChannel.open(journalPath, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            consume(1, total, new Journal(file, buffer));
            flush(file, buffer);
            file.force(false);
        } catch (IOException e) {
            journalError = e.toString();
        }
    }

    /** Where the journaller writes; write failures are kept, not thrown, so samples survive. */
    private final class Journal {
        final FileChannel file;
        final ByteBuffer buffer;

        Journal(FileChannel file, ByteBuffer buffer) {
            this.file = file;
            this.buffer = buffer;
        }

        void append(long transitNs) {
            if (buffer.remaining() < Long.BYTES) {
                try {
                    flush(file, buffer);
                } catch (IOException e) {
                    journalError = e.toString();
                    buffer.clear();
                }
            }
            buffer.putLong(transitNs);
        }
    }

    private void flush(FileChannel file, ByteBuffer buffer) throws IOException {
        buffer.flip();
        while (buffer.hasRemaining()) journalBytes += file.write(buffer);
        buffer.clear();
    }

    /** Consumer c: every event, busy-waiting on its barrier; records transit and inter-message time. */
    private void consume(int c, long total, Journal journal) {
        placements().note(c == 0 ? "accumulator" : "journaller", -1);
        PairRecord transit = records()[2 * c];
        PairRecord inter = records()[2 * c + 1];
        SequenceBarrier barrier = barriers[c];
        long next = 0;
        long previous = -1;
        try {
            while (next < total) {
                long available = barrier.waitFor(next);
                for (long s = next; s <= available; s++) {
                    long now = System.nanoTime();
                    long tPublish = ring.get(s).tPublish;
                    if (s >= warmup) {
                        int i = (int) (s - warmup);
                        transit.record(i, tPublish, now);
                        inter.record(i, previous < 0 ? now : previous, now);
                    }
                    if (journal != null) journal.append(now - tPublish);
                    previous = now;
                }
                consumed[c].set(available);
                next = available + 1;
            }
        } catch (AlertException | TimeoutException e) {
            // stopped: what was recorded stays
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

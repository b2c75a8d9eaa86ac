package dev.jitterlab.jvm;

import java.util.SplittableRandom;
import java.util.concurrent.Phaser;
import java.util.function.Supplier;

/**
 * The seeds' n x (1:1) protocol: n sender/receiver pairs. Each round the senders meet at a
 * barrier, read the time and a random int of a shared block, and send it; each receiver
 * writes the int to another random place, reads the time and records the pair's sample.
 * Receivers only arrive at the barrier (they do not wait), so they are back in receive()
 * before the next round starts: one message in flight per pair, no queue build-up.
 */
final class Harness extends Benchmark {
    private final Supplier<Channel> channels;
    private final Phaser round;
    private final boolean virtualThreads;

    Harness(int pairs, int samples, int warmup, int blockInts, long seed, Supplier<Channel> channels,
            boolean virtualThreads) {
        super(pairs, samples, warmup, blockInts, seed);
        this.channels = channels;
        this.virtualThreads = virtualThreads;
        this.round = new Phaser(2 * pairs);
    }

    @Override
    void requestStop() {
        super.requestStop();
        round.forceTermination();
    }

    @Override
    boolean run() throws InterruptedException {
        final int rounds = warmup + samples;
        Thread[] threads = new Thread[2 * pairs];
        Channel[] open = new Channel[pairs];
        for (int p = 0; p < pairs; p++) {
            final int pair = p;
            final Channel channel = channels.get();
            open[p] = channel;
            threads[2 * p] = newThread(() -> sender(pair, channel, rounds), "sender-" + p);
            threads[2 * p + 1] = newThread(() -> receiver(pair, channel, rounds), "receiver-" + p);
        }
        for (Thread t : threads) t.start();
        for (int p = 0; p < pairs; p++) threads[2 * p].join();
        for (int p = 0; p < pairs; p++) {
            Thread receiver = threads[2 * p + 1];
            receiver.join(stop ? 200 : 0);
            if (receiver.isAlive()) {  // stopped: its last message was never sent
                open[p].close();
                receiver.interrupt();
                receiver.join();
            }
        }
        return !stop;
    }

    /**
     * A platform thread, or a virtual one for java-vthread. The module compiles for JDK 17, so
     * Thread.ofVirtual() (JDK 21) is reached by reflection.
     */
    private Thread newThread(Runnable body, String name) {
        if (!virtualThreads) return new Thread(body, name);
        try {
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            Class<?> builderType = Class.forName("java.lang.Thread$Builder");
            builder = builderType.getMethod("name", String.class).invoke(builder, name);
            return (Thread) builderType.getMethod("unstarted", Runnable.class).invoke(builder, body);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("virtual threads need JDK 21 or later", e);
        }
    }

    private void sender(int pair, Channel channel, int rounds) {
        SplittableRandom random = new SplittableRandom(seed * 7919 + pair);
        placements().note("sender", pair);
        try {
            for (int r = 0; r < rounds && !stop; r++) {
                if (round.arriveAndAwaitAdvance() < 0) return;  // terminated by a stop
                long t = System.nanoTime();
                int value = block[random.nextInt(block.length)];
                channel.send(new Message(r, t, value));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void receiver(int pair, Channel channel, int rounds) {
        SplittableRandom random = new SplittableRandom(seed * 104729 + pair);
        PairRecord rec = records()[pair];
        placements().note("receiver", pair);
        round.arrive();
        try {
            for (int r = 0; r < rounds; r++) {
                Message m = channel.receive();
                block[random.nextInt(block.length)] = m.value;
                long t = System.nanoTime();
                if (r >= warmup) rec.record(r - warmup, m.tSendNs, t);
                if (r + 1 < rounds) round.arrive();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

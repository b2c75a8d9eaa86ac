package dev.jitterlab.jvm;

/**
 * A run of the n x (1:1) protocol, on threads (Harness) or on actors (PekkoHarness): the
 * shared block, the per-pair sample records and the threads' placements live here.
 */
abstract class Benchmark {
    protected final int pairs;
    protected final int samples;
    protected final int warmup;
    protected final int[] block;
    protected final long seed;
    private final PairRecord[] records;
    private final Placements placements = new Placements();
    protected volatile boolean stop;

    Benchmark(int pairs, int samples, int warmup, int blockInts, long seed) {
        this.pairs = pairs;
        this.samples = samples;
        this.warmup = warmup;
        this.block = new int[Math.max(blockInts, 1)];
        this.seed = seed;
        this.records = new PairRecord[pairs];
        for (int p = 0; p < pairs; p++) records[p] = new PairRecord(samples);
    }

    /** Runs every pair to the end (or to a stop); returns false when stopped early. */
    abstract boolean run() throws InterruptedException;

    /** Per-pair samples; complete once run() has returned. */
    final PairRecord[] records() {
        return records;
    }

    /** Samples recorded so far, over all pairs. */
    final long recorded() {
        long n = 0;
        for (PairRecord r : records) n += r.count;
        return n;
    }

    /** The threads that ran senders and receivers, with the policy each obtained. */
    final Placements placements() {
        return placements;
    }

    /** Stops at the next round; what was recorded stays. */
    void requestStop() {
        stop = true;
    }
}

package dev.jitterlab.jvm;

/** A run of the n x (1:1) protocol: on threads (Harness) or on actors (PekkoHarness). */
interface Benchmark {
    /** Runs every pair to the end (or to a stop); returns false when stopped early. */
    boolean run() throws InterruptedException;

    /** Per-pair samples; complete once run() has returned. */
    PairRecord[] records();

    /** Samples recorded so far, over all pairs. */
    default long recorded() {
        long n = 0;
        for (PairRecord r : records()) n += r.count;
        return n;
    }

    /** Stops at the next round; what was recorded stays. */
    void requestStop();

    /** The threads that ran senders and receivers, with the policy each obtained. */
    Placements placements();
}

package dev.jitterlab.jvm;

/** One pair's samples, preallocated so recording allocates nothing. */
final class PairRecord {
    final long[] tSend;
    final long[] tRecv;
    volatile int count;

    PairRecord(int samples) {
        tSend = new long[samples];
        tRecv = new long[samples];
    }

    /** Stores sample i (the writer is the pair's only receiver; count publishes it). */
    void record(int i, long sendNs, long recvNs) {
        tSend[i] = sendNs;
        tRecv[i] = recvNs;
        count = i + 1;
    }
}

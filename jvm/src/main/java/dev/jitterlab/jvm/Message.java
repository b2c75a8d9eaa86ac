package dev.jitterlab.jvm;

/**
 * One sample's message. A new object per sample on purpose: like the seeds' harness, the JVM
 * side uses ordinary Java, so the garbage collector's behaviour shows in the latencies.
 */
public final class Message {
    public final long seq;
    public final long tSendNs;
    public final int value;

    public Message(long seq, long tSendNs, int value) {
        this.seq = seq;
        this.tSendNs = tSendNs;
        this.value = value;
    }
}

package dev.jitterlab.jvm;

/** A one-slot hand-over from one sender to one receiver. */
public interface Channel extends AutoCloseable {
    void send(Message m) throws InterruptedException;

    /** Blocks until a message arrives. */
    Message receive() throws InterruptedException;

    @Override
    default void close() {}
}

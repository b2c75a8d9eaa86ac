package dev.jitterlab.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** The pekko-artery agent's server rules: the same answers as the native Responder. */
class NetAgentTest {
    @Test
    void aPingIsAnsweredWithItsBytesAndTheServersNode() {
        NetAgent.Responder r = new NetAgent.Responder(3, 64, 8);
        byte[] ping = NetAgent.message(64, NetAgent.PING, 0, 7, 111, 222);
        ping[40] = 42;
        byte[] pong = r.handle(ping, 1000);
        ByteBuffer h = NetAgent.header(pong);
        assertEquals(NetAgent.PONG, h.getInt(0));
        assertEquals(3, h.getInt(4));
        assertEquals(7, h.getLong(8));
        assertEquals(222, h.getLong(24));
        assertEquals(42, pong[40]);
    }

    @Test
    void aStreamIsCountedTimedAndKeptUpToCapacity() {
        NetAgent.Responder r = new NetAgent.Responder(1, 64, 2);
        assertNull(r.handle(NetAgent.message(64, NetAgent.START, 0, 3, 0, 0), 100));
        for (int k = 0; k < 3; k++) assertNull(r.handle(NetAgent.message(64, NetAgent.DATA, 0, k, 0, 50 + k), 200 + k));
        ByteBuffer ready = NetAgent.header(r.handle(NetAgent.message(64, NetAgent.END, 0, 3, 0, 0), 500));
        assertEquals(NetAgent.READY, ready.getInt(0));
        assertEquals(3, ready.getLong(8));
        assertEquals(400, ready.getLong(16));
        assertEquals(2, r.records.size());
        assertEquals(1, r.dropped);
        assertArrayEquals(new long[] {0, 0, 1, 0, 51, 201}, r.records.get(1));
    }

    @Test
    void aFrameIsAnsweredWithWhenItArrived() {
        NetAgent.Responder r = new NetAgent.Responder(2, 64, 1);
        assertNull(r.handle(NetAgent.message(64, NetAgent.STATE, 0, 5, 0, 0), 10));
        ByteBuffer done = NetAgent.header(r.handle(NetAgent.message(64, NetAgent.FRAME, 0, 5, 0, 0), 900));
        assertEquals(NetAgent.DONE, done.getInt(0));
        assertEquals(2, done.getInt(4));
        assertEquals(900, done.getLong(16));
    }
}

package dev.jitterlab.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.zip.CRC32;
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
        // the run format's net record: pair, seq, t_send, t_recv, t_intended (none: the send),
        // t_actual_send, src node (the sender), dst node (this receiver)
        assertArrayEquals(new long[] {0, 1, 51, 201, 51, 51, 0, 1}, r.records.get(1));
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

    @Test
    void recordsGoOverAsARawSampleFileOfNetRecords() throws Exception {
        // docs/run-format.md: header (magic, version 1, record size 56), records, footer
        // (count, CRC-32 of the record bytes, flags); the open-loop record counts from when it was due
        List<long[]> records = List.of(NetAgent.sample(0, 0, 1, 7, 1000, 1040, 5000, true),
                NetAgent.sample(2, 0, 2, 8, 0, 2000, 6000, false));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        NetAgent.writeRaw(out, records, 0, 2);
        byte[] file = out.toByteArray();
        assertEquals(64 + 2 * 56 + 32, file.length);
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals("JLSAMPLE", new String(file, 0, 8, StandardCharsets.US_ASCII));
        assertEquals(1, b.getInt(8));
        assertEquals(56, b.getInt(12));
        int r0 = 64, r1 = 64 + 56;
        assertEquals(7, b.getLong(r0 + 8));
        assertEquals(1000, b.getLong(r0 + 16));  // t_send_ns: the intended time (open loop)
        assertEquals(5000, b.getLong(r0 + 24));
        assertEquals(1000, b.getLong(r0 + 32));  // t_intended_ns
        assertEquals(1040, b.getLong(r0 + 40));  // t_actual_send_ns
        assertEquals(1, b.getInt(r0 + 52));  // dst_node
        assertEquals(2, b.getInt(r1));  // pair
        assertEquals(2000, b.getLong(r1 + 16));  // t_send_ns: the actual send
        assertEquals(2000, b.getLong(r1 + 32));  // no intended time: due when sent
        int footer = file.length - 32;
        assertEquals("JLFOOTER", new String(file, footer, 8, StandardCharsets.US_ASCII));
        assertEquals(2, b.getLong(footer + 8));
        CRC32 crc = new CRC32();
        crc.update(file, 64, 2 * 56);
        assertEquals((int) crc.getValue(), b.getInt(footer + 16));
        assertEquals(0, b.getLong(footer + 24));
    }

    @Test
    void aStopRequestEndsEveryScenarioAtItsFirstCheckAsInterrupted() throws Exception {
        // SIGINT while measuring sets stopRequested (issue 24): no scenario sends another
        // message (there is no peer here: a send would fail) and each reports interrupted
        try {
            NetAgent.stopRequested = true;
            for (String scenario : List.of("ping", "open-loop", "stream", "frame-sync")) {
                NetAgent.Scenario s = new NetAgent.Scenario(
                        Map.of("scenario", scenario, "duration_ns", "60000000000", "steps", "3"), List.of(), null,
                        new LinkedBlockingQueue<>(), null);
                long t0 = System.nanoTime();
                s.run(t0);
                assertTrue(s.interrupted, scenario);
                assertEquals(0, s.sent, scenario);
                assertTrue(System.nanoTime() - t0 < 5_000_000_000L, scenario);
            }
        } finally {
            NetAgent.stopRequested = false;
        }
    }
}

package dev.jitterlab.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HarnessTest {
    @ParameterizedTest
    @ValueSource(strings = {"java-monitor", "java-lock", "disruptor"})
    void everyPairRecordsEverySampleInOrderWithReceiveAfterSend(String technique) throws Exception {
        Main.Options o = new Main.Options(technique, 3, 500, 50, 1024, "blocking", "default", 1, 10_000, Path.of("."));
        Harness h = new Harness(3, 500, 50, 1024, 1, Main.channels(o), false);
        assertTrue(h.run());
        for (PairRecord r : h.records()) {
            assertEquals(500, r.count);
            for (int i = 0; i < r.count; i++) {
                assertTrue(r.tRecv[i] >= r.tSend[i], "receive before send at " + i);
                if (i > 0) assertTrue(r.tSend[i] > r.tRecv[i - 1] - 1, "rounds overlap at " + i);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"yielding", "busy-spin"})
    void disruptorWaitStrategiesDeliver(String wait) throws Exception {
        Main.Options o = new Main.Options("disruptor", 1, 200, 0, 16, wait, "default", 1, 10_000, Path.of("."));
        Harness h = new Harness(1, 200, 0, 16, 1, Main.channels(o), false);
        assertTrue(h.run());
        assertEquals(200, h.records()[0].count);
    }

    @Test
    void aStopKeepsWhatWasRecorded() throws Exception {
        Main.Options o = new Main.Options("java-lock", 2, 50_000_000, 0, 16, "blocking", "default", 1, 10_000, Path.of("."));
        Harness h = new Harness(2, 1_000_000, 0, 16, 1, Main.channels(o), false);
        Thread stopper = new Thread(() -> {
            while (h.recorded() < 1000) Thread.onSpinWait();
            h.requestStop();
        });
        stopper.start();
        assertTrue(!h.run());
        stopper.join();
        assertTrue(h.recorded() >= 1000);
    }

    @ParameterizedTest
    @ValueSource(strings = {"default", "throughput-1", "pinned", "affinity"})
    void pekkoDispatchersDeliverEverySampleOnceInOrder(String dispatcher) throws Exception {
        PekkoHarness h = new PekkoHarness(3, 400, 20, 1024, 1, dispatcher);
        assertTrue(h.run());
        for (PairRecord r : h.records()) {
            assertEquals(400, r.count);
            for (int i = 0; i < r.count; i++) {
                assertTrue(r.tRecv[i] >= r.tSend[i], "receive before send at " + i);
                if (i > 0) assertTrue(r.tSend[i] >= r.tRecv[i - 1], "rounds overlap at " + i);
            }
        }
        List<Placements.Entry> placed = h.placements().entries();
        assertEquals(6, placed.size(), placed.toString());
        for (Placements.Entry e : placed) assertTrue(List.of("other", "fifo", "rr").contains(e.policy()), e.toString());
    }

    @Test
    void aPekkoStopKeepsWhatWasRecorded() throws Exception {
        PekkoHarness h = new PekkoHarness(2, 10_000_000, 0, 16, 1, "default");
        Thread stopper = new Thread(() -> {
            while (h.recorded() < 1000) Thread.onSpinWait();
            h.requestStop();
        });
        stopper.start();
        assertFalse(h.run());
        stopper.join();
        assertTrue(h.recorded() >= 1000);
    }

    @Test
    void harnessJsonNamesEverySenderAndReceiverThread(@TempDir Path dir) throws Exception {
        Main.Options o = new Main.Options("java-lock", 2, 100, 0, 16, "blocking", "default", 1, 10_000, dir);
        Benchmark h = Main.benchmark(o);
        assertTrue(h.run());
        Main.writeHarnessJson(o, h, Main.clockReadsNs(1000), true, 0, 1, 2);
        String json = Files.readString(dir.resolve("harness.json"));
        for (String thread : List.of("main", "sender-0", "receiver-0", "sender-1", "receiver-1"))
            assertTrue(json.contains("\"thread\":\"" + thread + "\""), thread + " missing in " + json);
        assertTrue(json.contains("\"dispatcher\":\"default\""), json);
        assertTrue(json.contains("\"floor\":{\"clock_overhead_ns\":{\"min\":"), json);
    }

    @Test
    void warningsAreCodedAndEscapedByTheJsonLibrary(@TempDir Path dir) throws Exception {
        String nasty = "quote \" backslash \\ newline \n tab \t bell \u0007 é";
        java.io.StringWriter out = new java.io.StringWriter();
        try (com.fasterxml.jackson.core.JsonGenerator j = Main.JSON.createGenerator(out)) {
            Main.warning(j, WarningCode.SPIN_FALLBACK, nasty);
        }
        try (com.fasterxml.jackson.core.JsonParser parser = Main.JSON.createParser(out.toString())) {
            java.util.Map<String, String> fields = new java.util.HashMap<>();
            parser.nextToken();
            while (parser.nextToken() == com.fasterxml.jackson.core.JsonToken.FIELD_NAME) {
                String name = parser.currentName();
                parser.nextToken();
                fields.put(name, parser.getText());
            }
            assertEquals("spin-fallback", fields.get("code"));
            assertEquals(nasty, fields.get("detail"));
        }
    }

    @Test
    void rawFileMatchesTheDocumentedLayout(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("samples.jlraw");
        try (RawSampleWriter w = new RawSampleWriter(file)) {
            w.write(0, 0, 100, 250);
            w.write(1, 7, -5, Long.MAX_VALUE);
            w.finish(true);
        }
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(64 + 2 * 32 + 32, b.capacity());
        assertEquals("JLSAMPLE", new String(b.array(), 0, 8, "US-ASCII"));
        assertEquals(1, b.getInt(8));
        assertEquals(32, b.getInt(12));
        assertEquals(1, b.getInt(64 + 32));
        assertEquals(7L, b.getLong(64 + 32 + 8));
        assertEquals(Long.MAX_VALUE, b.getLong(64 + 32 + 24));
        int footer = 64 + 64;
        assertEquals("JLFOOTER", new String(b.array(), footer, 8, "US-ASCII"));
        assertEquals(2L, b.getLong(footer + 8));
        CRC32 crc = new CRC32();
        crc.update(b.array(), 64, 64);
        assertEquals((int) crc.getValue(), b.getInt(footer + 16));
        assertEquals(1L, b.getLong(footer + 24));
        assertTrue(!Files.exists(dir.resolve("samples.jlraw.tmp")));
    }

    /**
     * Known answer: records (i % 3, 0, i, 1000 + i, 1500 + 2i) for i below 100,000 (the writer's
     * batches of 4,096 split them) have the CRC-32 Python's zlib.crc32 gives, the constant the
     * native test RawFile.Crc32OfKnownRecordsMatchesJavaAndPython checks too.
     */
    @Test
    void crcOfKnownRecordsMatchesNativeAndPython(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("samples.jlraw");
        try (RawSampleWriter w = new RawSampleWriter(file)) {
            for (int i = 0; i < 100_000; i++) w.write(i % 3, i, 1000 + i, 1500 + 2L * i);
            w.finish(false);
        }
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        int footer = 64 + 100_000 * 32;
        assertEquals(100_000L, b.getLong(footer + 8));
        assertEquals(0xB2096047, b.getInt(footer + 16));
    }

    @Test
    void thePipelineRecordsFourSeriesAndJournalsEveryMessage(@TempDir Path dir) throws Exception {
        PipelineBenchmark p = new PipelineBenchmark(5_000, 100, 10_000, dir.resolve("journal.bin"));
        assertTrue(p.run());
        PairRecord[] series = p.records();
        assertEquals(4, series.length);
        for (PairRecord r : series) {
            assertEquals(5_000, r.count);
            for (int i = 0; i < r.count; i++) assertTrue(r.tRecv[i] >= r.tSend[i], "negative at " + i);
        }
        for (int i = 1; i < series[1].count; i++)  // inter-message: from the previous message's arrival
            assertEquals(series[1].tRecv[i - 1], series[1].tSend[i]);
        assertEquals("", p.journalError());
        assertEquals(5_100L * Long.BYTES, p.journalBytes());
        assertEquals(5_100L * Long.BYTES, Files.size(dir.resolve("journal.bin")));
    }
}

package dev.jitterlab.jvm;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * jitterlab-jvm: runs the n x (1:1) protocol for one JVM technique and writes samples.jlraw
 * and harness.json into --out (docs/run-format.md), printing "progress N TOTAL" lines.
 * Bad arguments: one line on stderr and exit code 2. SIGINT/SIGTERM: the samples so far are
 * written and marked partial.
 */
public final class Main {
    static final String TOOL = "jitterlab-jvm";
    static final String VERSION = "0.1.0";
    static final List<String> TECHNIQUES = List.of("java-monitor", "java-lock", "disruptor", "java-vthread", "pekko", "pipeline");

    record Options(String technique, int pairs, int samples, int warmup, int blockInts, String waitStrategy,
                   String dispatcher, long seed, long intervalNs, Path out) {}

    static final class UsageError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UsageError(String message) {
            super(message);
        }
    }

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = parse(args);
        } catch (UsageError e) {
            System.err.println(TOOL + ": error: " + e.getMessage());
            System.exit(2);
            return;
        }
        System.exit(run(o));
    }

    static Options parse(String[] args) {
        String technique = null, wait = "blocking", dispatcher = "default";
        int pairs = 1, samples = 100_000, warmup = 1_000, blockInts = 256 * 1024;
        long seed = 1, intervalNs = 10_000;
        Path out = Path.of(".");
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (flag.equals("--list")) {
                for (String t : TECHNIQUES) System.out.println(t + "\t" + (available(t) ? "yes" : "no"));
                System.exit(0);
            }
            if (i + 1 >= args.length) throw new UsageError(flag + " needs a value");
            String v = args[++i];
            switch (flag) {
                case "--technique" -> technique = v;
                case "--pairs" -> pairs = integer(flag, v, 1, 4096);
                case "--samples" -> samples = integer(flag, v, 1, 200_000_000);
                case "--warmup" -> warmup = integer(flag, v, 0, 200_000_000);
                case "--block-ints" -> blockInts = integer(flag, v, 0, 1 << 28);
                case "--wait-strategy" -> wait = v;
                case "--dispatcher" -> dispatcher = v;
                case "--seed" -> seed = integer(flag, v, 0, Integer.MAX_VALUE);
                case "--interval-ns" -> intervalNs = integer(flag, v, 0, 1_000_000_000);
                case "--out" -> out = Path.of(v);
                default -> throw new UsageError("unknown option '" + flag + "'");
            }
        }
        if (technique == null || !TECHNIQUES.contains(technique))
            throw new UsageError("--technique expects one of " + String.join(", ", TECHNIQUES));
        if (!available(technique))
            throw new UsageError(technique + " needs JDK 21 or later (this is " + Runtime.version().feature() + ")");
        if (!List.of("blocking", "yielding", "busy-spin").contains(wait))
            throw new UsageError("--wait-strategy expects blocking, yielding or busy-spin");
        if (!PekkoHarness.DISPATCHERS.contains(dispatcher))
            throw new UsageError("--dispatcher expects " + String.join(", ", PekkoHarness.DISPATCHERS));
        if (!Files.isDirectory(out) || !Files.isWritable(out)) throw new UsageError("cannot write to --out " + out);
        return new Options(technique, pairs, samples, warmup, blockInts, wait, dispatcher, seed, intervalNs, out);
    }

    static boolean available(String technique) {
        return !technique.equals("java-vthread") || Runtime.version().feature() >= 21;
    }

    private static int integer(String flag, String v, long lo, long hi) {
        try {
            long x = Long.parseLong(v);
            if (x < lo || x > hi) throw new NumberFormatException();
            return (int) x;
        } catch (NumberFormatException e) {
            throw new UsageError(flag + " expects an integer in [" + lo + ", " + hi + "], got '" + v + "'");
        }
    }

    static Supplier<Channel> channels(Options o) {
        return switch (o.technique()) {
            case "java-monitor" -> MonitorChannel::new;
            case "java-lock", "java-vthread" -> LockChannel::new;
            case "disruptor" -> () -> new DisruptorChannel(o.waitStrategy());
            default -> throw new UsageError("unknown technique " + o.technique());
        };
    }

    static Benchmark benchmark(Options o) {
        if (o.technique().equals("pipeline"))
            return new PipelineBenchmark(o.samples(), o.warmup(), o.intervalNs(), o.out().resolve("journal.bin"));
        if (o.technique().equals("pekko"))
            return new PekkoHarness(o.pairs(), o.samples(), o.warmup(), o.blockInts(), o.seed(), o.dispatcher());
        return new Harness(o.pairs(), o.samples(), o.warmup(), o.blockInts(), o.seed(), channels(o),
                o.technique().equals("java-vthread"));
    }

    static int run(Options o) throws Exception {
        long startedRealtime = System.currentTimeMillis() * 1_000_000L;
        long[] clockReads = clockReadsNs(100_000);
        long tStart = System.nanoTime();
        Benchmark harness = benchmark(o);
        CountDownLatch written = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            harness.requestStop();
            try {
                written.await(30, TimeUnit.SECONDS);  // the JVM exits when the hook returns
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        });
        Runtime.getRuntime().addShutdownHook(hook);
        Thread progress = new Thread(() -> {
            int series = harness.records().length;  // pairs, or the pipeline's four series
            while (!Thread.currentThread().isInterrupted()) {
                System.out.println("progress " + harness.recorded() / series + " " + o.samples());
                System.out.flush();
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "progress");
        progress.setDaemon(true);
        progress.start();
        boolean complete = harness.run();
        progress.interrupt();
        long tEnd = System.nanoTime();
        try (RawSampleWriter writer = new RawSampleWriter(o.out().resolve("samples.jlraw"))) {
            PairRecord[] records = harness.records();
            for (int p = 0; p < records.length; p++) {
                PairRecord r = records[p];
                for (int i = 0; i < r.count; i++) writer.write(p, i, r.tSend[i], r.tRecv[i]);
            }
            writer.finish(!complete);
        }
        writeHarnessJson(o, harness, clockReads, complete, startedRealtime, tStart, tEnd);
        written.countDown();
        if (complete) Runtime.getRuntime().removeShutdownHook(hook);
        return complete ? 0 : 130;
    }

    /** Sorted differences of back-to-back System.nanoTime() reads: what one timestamp costs. */
    static long[] clockReadsNs(int n) {
        long[] d = new long[n];
        long previous = System.nanoTime();
        for (int i = 0; i < n; i++) {
            long t = System.nanoTime();
            d[i] = t - previous;
            previous = t;
        }
        Arrays.sort(d);
        return d;
    }

    static void writeHarnessJson(Options o, Benchmark harness, long[] clockReads, boolean complete,
                                 long startedRealtime, long tStart, long tEnd) throws IOException {
        Placements placements = harness.placements();
        List<String> gcs = new ArrayList<>();
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) gcs.add(gc.getName());
        String[] policy = Placements.obtainedPolicy();
        Path path = o.out().resolve("harness.json");
        Path tmp = o.out().resolve("harness.json.tmp");
        try (JsonGenerator j = JSON.createGenerator(Files.newBufferedWriter(tmp, StandardCharsets.UTF_8))) {
            j.writeStartObject();
            j.writeStringField("harness", "jvm");
            j.writeStringField("tool", "jvm-bench");
            j.writeStringField("harness_version", VERSION);
            j.writeStringField("technique", o.technique());
            j.writeNumberField("pairs", o.pairs());
            j.writeNumberField("samples", o.samples());
            j.writeNumberField("warmup", o.warmup());
            j.writeNumberField("block_ints", o.blockInts());
            j.writeStringField("wait_strategy", o.waitStrategy());
            j.writeStringField("dispatcher", o.dispatcher());
            PipelineBenchmark pipeline = harness instanceof PipelineBenchmark p ? p : null;
            if (pipeline != null) {
                j.writeNumberField("interval_ns", o.intervalNs());
                strings(j, "series", List.of(PipelineBenchmark.SERIES));
                j.writeNumberField("journal_bytes", pipeline.journalBytes());
                j.writeStringField("journal_error", pipeline.journalError());
                j.writeStringField("spin_mode", pipeline.yielding ? "yield" : "busy");
                j.writeStringField("spin_fallback_reason", pipeline.spinFallbackReason());
            }
            j.writeObjectFieldStart("java");
            j.writeStringField("version", System.getProperty("java.version"));
            j.writeNumberField("feature", Runtime.version().feature());
            j.writeStringField("vm_name", System.getProperty("java.vm.name"));
            j.writeStringField("vm_version", System.getProperty("java.vm.version"));
            strings(j, "gc_beans", gcs);
            strings(j, "input_arguments", ManagementFactory.getRuntimeMXBean().getInputArguments());
            j.writeEndObject();
            j.writeArrayFieldStart("placements");
            placement(j, "jvm", -1, "main", policy[0], Integer.parseInt(policy[1]));
            for (Placements.Entry e : placements.entries()) placement(j, e.role(), e.pair(), e.thread(), e.policy(), e.priority());
            j.writeEndArray();
            j.writeObjectFieldStart("floor");
            j.writeObjectFieldStart("clock_overhead_ns");
            j.writeNumberField("min", clockReads[0]);
            j.writeNumberField("median", clockReads[clockReads.length / 2]);
            double mean = Arrays.stream(clockReads).average().orElse(Double.NaN);
            if (Double.isFinite(mean)) j.writeNumberField("mean", mean);
            else j.writeNullField("mean");
            j.writeNumberField("p99", clockReads[(int) (clockReads.length * 0.99)]);
            j.writeEndObject();
            j.writeObjectFieldStart("c2c_one_way_ns");
            j.writeBooleanField("measured", false);
            j.writeStringField("skipped_reason", "the JVM harness does not pin threads");
            j.writeEndObject();
            j.writeEndObject();
            j.writeArrayFieldStart("warnings");
            if (pipeline != null && pipeline.yielding) warning(j, WarningCode.SPIN_FALLBACK, pipeline.spinFallbackReason());
            j.writeEndArray();
            j.writeStringField("status", complete ? "complete" : "partial");
            j.writeStringField("partial_reason", complete ? "" : "interrupted by a signal");
            j.writeNumberField("started_realtime_ns", startedRealtime);
            j.writeNumberField("t_start_ns", tStart);
            j.writeNumberField("t_end_ns", tEnd);
            j.writeEndObject();
        }
        Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    static final JsonFactory JSON = new JsonFactory();

    static void strings(JsonGenerator j, String name, List<String> values) throws IOException {
        j.writeArrayFieldStart(name);
        for (String v : values) j.writeString(v);
        j.writeEndArray();
    }

    static void placement(JsonGenerator j, String role, int pair, String thread, String policy, int priority)
            throws IOException {
        j.writeStartObject();
        j.writeStringField("role", role);
        j.writeNumberField("pair", pair);
        j.writeStringField("thread", thread);
        j.writeStringField("policy", policy);
        j.writeNumberField("priority", priority);
        j.writeEndObject();
    }

    /** A warning of the closed set (WarningCode, generated from core/warning_codes.toml). */
    static void warning(JsonGenerator j, WarningCode code, String detail) throws IOException {
        j.writeStartObject();
        j.writeStringField("code", code.code());
        j.writeStringField("detail", detail);
        j.writeEndObject();
    }
}

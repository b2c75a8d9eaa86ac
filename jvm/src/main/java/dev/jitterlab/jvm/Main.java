package dev.jitterlab.jvm;

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
        Json j = new Json();
        j.begin().field("harness", "jvm").field("tool", "jvm-bench").field("harness_version", VERSION);
        j.field("technique", o.technique()).field("pairs", o.pairs()).field("samples_requested", o.samples());
        j.field("warmup", o.warmup()).field("block_ints", o.blockInts()).field("wait_strategy", o.waitStrategy());
        j.field("dispatcher", o.dispatcher());
        if (harness instanceof PipelineBenchmark pipeline) {
            j.field("interval_ns", o.intervalNs()).strings("series", List.of(PipelineBenchmark.SERIES));
            j.field("journal_bytes", pipeline.journalBytes()).field("journal_error", pipeline.journalError());
            j.field("spin_mode", pipeline.yielding ? "yield" : "busy").field("spin_fallback_reason", pipeline.spinFallbackReason());
        }
        j.key("java").begin().field("version", System.getProperty("java.version"))
                .field("feature", Runtime.version().feature()).field("vm_name", System.getProperty("java.vm.name"))
                .field("vm_version", System.getProperty("java.vm.version")).strings("gc_beans", gcs)
                .strings("input_arguments", ManagementFactory.getRuntimeMXBean().getInputArguments()).end();
        j.key("placements").array().begin().field("role", "jvm").field("pair", -1).field("thread", "main")
                .field("policy", policy[0]).field("priority", Integer.parseInt(policy[1])).end();
        for (Placements.Entry e : placements.entries()) {
            j.begin().field("role", e.role()).field("pair", e.pair()).field("thread", e.thread())
                    .field("policy", e.policy()).field("priority", e.priority()).end();
        }
        j.endArray();
        double mean = Arrays.stream(clockReads).average().orElse(Double.NaN);
        j.key("floor").begin().key("clock_overhead_ns").begin().field("min", clockReads[0])
                .field("median", clockReads[clockReads.length / 2]).field("mean", mean)
                .field("p99", clockReads[(int) (clockReads.length * 0.99)]).end();
        j.key("c2c_one_way_ns").begin().field("measured", false)
                .field("skipped_reason", "the JVM harness does not pin threads").end().end();
        j.key("warnings").array();
        if (harness instanceof PipelineBenchmark pipeline && pipeline.yielding)
            j.begin().field("code", "spin-fallback").field("detail", pipeline.spinFallbackReason()).end();
        j.endArray();
        j.field("status", complete ? "complete" : "partial");
        j.field("partial_reason", complete ? "" : "interrupted by a signal");
        j.field("started_realtime_ns", startedRealtime).field("t_start_ns", tStart).field("t_end_ns", tEnd);
        j.end();
        Path path = o.out().resolve("harness.json");
        Path tmp = o.out().resolve("harness.json.tmp");
        Files.writeString(tmp, j.toString() + "\n", StandardCharsets.UTF_8);
        Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}

package dev.jitterlab.jvm;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.DoubleHistogram;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;
import org.HdrHistogram.HistogramLogWriter;

/**
 * HdrHistogram Java 2.2.2 as the reference for jitterlab's HdrHistogram room (issue 26): the
 * Python test suite (tests/store/test_hdr_oracle.py) hands it jobs and compares its figures with
 * jitterlab's, equal and not close. Test scope only: it is no part of the harness jar.
 *
 * <p>Usage: {@code HdrOracle JOBS_FILE}, one job per line, fields separated by tabs; the answer is
 * one JSON array on standard output, an object per job. Doubles are printed with
 * {@link Double#toString}, which reads back to the same double.
 *
 * <ul>
 *   <li>{@code log PATH FROM TO CO TICKS RATIO}: read a log with {@link HistogramLogReader} (FROM and
 *       TO in seconds relative to StartTime as HistogramLogProcessor's -start/-end, "-" for the
 *       whole log, which reads every interval); CO &gt; 0 corrects each interval with
 *       copyCorrectedForCoordinatedOmission. Each interval's figures, and per tag the whole log's
 *       accumulated as HistogramLogProcessor accumulates it, with its percentile distribution
 *       (outputPercentileDistribution with TICKS and RATIO).
 *   <li>{@code hist VALUES DIGITS LOWEST HIGHEST TICKS RATIO CO}: record the VALUES file ("value
 *       count" per line) into a Histogram (HIGHEST 0: auto-resizing); its figures, distribution,
 *       the copy corrected for coordinated omission with interval CO and the same values
 *       recorded with recordValueWithExpectedInterval.
 *   <li>{@code write SPEC OUT}: write a log with {@link HistogramLogWriter} from a spec file (see
 *       {@link #write}).
 * </ul>
 */
public final class HdrOracle {
    private static final double[] PERCENTILES = {50.0, 90.0, 99.0, 99.9, 99.99, 99.999};

    private HdrOracle() {}

    public static void main(String[] args) throws Exception {
        List<String> jobs = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder("[");
        boolean first = true;
        for (String job : jobs) {
            if (job.isBlank()) {
                continue;
            }
            if (!first) {
                out.append(",\n");
            }
            first = false;
            String[] f = job.split("\t", -1);
            StringBuilder answer = new StringBuilder();
            try {
                switch (f[0]) {
                    case "log" -> log(answer, f);
                    case "hist" -> hist(answer, f);
                    case "write" -> write(answer, f);
                    default -> throw new IllegalArgumentException("unknown job " + f[0]);
                }
            } catch (Exception e) {
                answer.setLength(0);
                answer.append("{\"error\":");
                string(answer, e.toString());
                answer.append('}');
            }
            out.append(answer);
        }
        out.append("]\n");
        System.out.print(out);
    }

    // ------------------------------------------------------------------ log

    private static final class Stream {
        EncodableHistogram accumulated;
        int intervals;
    }

    private static void log(StringBuilder out, String[] f) throws Exception {
        boolean ranged = !f[2].equals("-");
        double from = ranged ? Double.parseDouble(f[2]) : 0.0;
        double to = ranged ? Double.parseDouble(f[3]) : Double.MAX_VALUE;
        double co = Double.parseDouble(f[4]);
        int ticks = Integer.parseInt(f[5]);
        double ratio = Double.parseDouble(f[6]);
        Map<String, Stream> streams = new LinkedHashMap<>();
        out.append("{\"intervals\":[");
        try (HistogramLogReader reader = new HistogramLogReader(f[1])) {
            boolean first = true;
            String readerError = null;
            while (true) {
                EncodableHistogram h;
                try {
                    h = ranged ? reader.nextIntervalHistogram(from, to) : reader.nextIntervalHistogram();
                } catch (RuntimeException e) {
                    // e.g. a log ending in a blank line: the scanner's nextLine() throws after it
                    readerError = e.toString();
                    break;
                }
                if (h == null) {
                    break;
                }
                if (co > 0) {
                    h = corrected(h, co);
                }
                if (!first) {
                    out.append(',');
                }
                first = false;
                figures(out, h);
                String tag = h.getTag() == null ? "" : h.getTag();
                Stream s = streams.computeIfAbsent(tag, t -> new Stream());
                accumulate(s, h);
            }
            out.append("],\"start_time_sec\":").append(reader.getStartTimeSec());
            out.append(",\"reader_error\":");
            if (readerError == null) {
                out.append("null");
            } else {
                string(out, readerError);
            }
        }
        out.append(",\"streams\":{");
        boolean first = true;
        for (Map.Entry<String, Stream> e : streams.entrySet()) {
            if (!first) {
                out.append(',');
            }
            first = false;
            string(out, e.getKey());
            out.append(":{\"whole\":");
            figures(out, e.getValue().accumulated);
            out.append(",\"hgrm\":");
            string(out, distribution(e.getValue().accumulated, ticks, ratio));
            out.append('}');
        }
        out.append("}}");
    }

    private static EncodableHistogram corrected(EncodableHistogram h, double co) {
        // as HistogramLogProcessor's -correctLogWithKnownCoordinatedOmission does
        if (h instanceof DoubleHistogram d) {
            return d.copyCorrectedForCoordinatedOmission(co);
        }
        EncodableHistogram c = ((Histogram) h).copyCorrectedForCoordinatedOmission((long) co);
        c.setTag(h.getTag());
        return c;
    }

    /** The whole log of one tag, accumulated as HistogramLogProcessor.run() does. */
    private static void accumulate(Stream s, EncodableHistogram h) {
        if (s.accumulated == null) {
            if (h instanceof DoubleHistogram d) {
                DoubleHistogram a = d.copy();
                a.reset();
                a.setAutoResize(true);
                s.accumulated = a;
            } else {
                Histogram a = ((Histogram) h).copy();
                a.reset();
                a.setAutoResize(true);
                s.accumulated = a;
            }
        }
        if (s.accumulated instanceof DoubleHistogram a) {
            a.add((DoubleHistogram) h);
        } else {
            ((Histogram) s.accumulated).add((Histogram) h);
        }
        s.intervals++;
    }

    private static String distribution(EncodableHistogram h, int ticks, double ratio) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream print = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        if (h instanceof DoubleHistogram d) {
            d.outputPercentileDistribution(print, ticks, ratio);
        } else {
            ((Histogram) h).outputPercentileDistribution(print, ticks, ratio);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    private static void figures(StringBuilder out, EncodableHistogram e) {
        out.append('{');
        if (e instanceof DoubleHistogram h) {
            out.append("\"kind\":\"double\",\"count\":").append(h.getTotalCount());
            out.append(",\"min\":").append(h.getMinValue());
            out.append(",\"max\":").append(h.getMaxValue());
            out.append(",\"mean\":").append(h.getMean());
            out.append(",\"std\":").append(h.getStdDeviation());
            out.append(",\"p\":[");
            for (int i = 0; i < PERCENTILES.length; i++) {
                out.append(i == 0 ? "" : ",").append(h.getValueAtPercentile(PERCENTILES[i]));
            }
            out.append("],\"ratio\":").append(h.getIntegerToDoubleValueConversionRatio());
            out.append(",\"highest_to_lowest\":").append(h.getHighestToLowestValueRatio());
            out.append(",\"digits\":").append(h.getNumberOfSignificantValueDigits());
        } else {
            Histogram h = (Histogram) e;
            out.append("\"kind\":\"integer\",\"count\":").append(h.getTotalCount());
            out.append(",\"min\":").append(h.getMinValue());
            out.append(",\"max\":").append(h.getMaxValue());
            out.append(",\"mean\":").append(h.getMean());
            out.append(",\"std\":").append(h.getStdDeviation());
            out.append(",\"p\":[");
            for (int i = 0; i < PERCENTILES.length; i++) {
                out.append(i == 0 ? "" : ",").append(h.getValueAtPercentile(PERCENTILES[i]));
            }
            out.append("],\"lowest\":").append(h.getLowestDiscernibleValue());
            out.append(",\"highest\":").append(h.getHighestTrackableValue());
            out.append(",\"digits\":").append(h.getNumberOfSignificantValueDigits());
        }
        out.append(",\"tag\":");
        if (e.getTag() == null) {
            out.append("null");
        } else {
            string(out, e.getTag());
        }
        out.append(",\"start_ms\":").append(e.getStartTimeStamp());
        out.append(",\"end_ms\":").append(e.getEndTimeStamp());
        out.append('}');
    }

    // ------------------------------------------------------------------ hist

    private static void hist(StringBuilder out, String[] f) throws IOException {
        int digits = Integer.parseInt(f[2]);
        long lowest = Long.parseLong(f[3]);
        long highest = Long.parseLong(f[4]);
        int ticks = Integer.parseInt(f[5]);
        double ratio = Double.parseDouble(f[6]);
        long co = Long.parseLong(f[7]);
        Histogram h = newHistogram(lowest, highest, digits);
        Histogram atRecording = newHistogram(lowest, highest, digits);
        try (BufferedReader in = Files.newBufferedReader(Path.of(f[1]))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                String[] vc = line.trim().split(" ");
                long value = Long.parseLong(vc[0]);
                long count = Long.parseLong(vc[1]);
                h.recordValueWithCount(value, count);
                if (co > 0) {
                    for (long i = 0; i < count; i++) {
                        atRecording.recordValueWithExpectedInterval(value, co);
                    }
                }
            }
        }
        out.append("{\"figures\":");
        figures(out, h);
        out.append(",\"hgrm\":");
        string(out, distribution(h, ticks, ratio));
        if (co > 0) {
            Histogram c = h.copyCorrectedForCoordinatedOmission(co);
            out.append(",\"corrected\":");
            figures(out, c);
            out.append(",\"corrected_hgrm\":");
            string(out, distribution(c, ticks, ratio));
            out.append(",\"at_recording\":");
            figures(out, atRecording);
        }
        out.append('}');
    }

    private static Histogram newHistogram(long lowest, long highest, int digits) {
        if (highest > 0) {
            return new Histogram(lowest, highest, digits);
        }
        Histogram h = new Histogram(lowest, 2 * lowest, digits);
        h.setAutoResize(true);
        return h;
    }

    // ------------------------------------------------------------------ write

    /**
     * Spec lines (space-separated): {@code start MS}, {@code base MS}, {@code comment TEXT},
     * {@code version}, {@code legend}; {@code int LOWEST HIGHEST DIGITS TAG START_MS END_MS} or
     * {@code double RATIO DIGITS TAG START_MS END_MS} begin a histogram (HIGHEST or RATIO 0:
     * auto-resizing; TAG "-" for none), {@code v VALUE COUNT} records into it, {@code end} writes
     * it with outputIntervalHistogram(histogram).
     */
    private static void write(StringBuilder out, String[] f) throws IOException {
        int written = 0;
        try (PrintStream file = new PrintStream(new FileOutputStream(f[2]), false, StandardCharsets.UTF_8);
                BufferedReader in = Files.newBufferedReader(Path.of(f[1]))) {
            HistogramLogWriter writer = new HistogramLogWriter(file);
            EncodableHistogram current = null;
            String line;
            while ((line = in.readLine()) != null) {
                String[] w = line.split(" ", 2);
                String[] a = w.length > 1 ? w[1].split(" ") : new String[0];
                switch (w[0]) {
                    case "start" -> writer.outputStartTime(Long.parseLong(a[0]));
                    case "base" -> {
                        writer.outputBaseTime(Long.parseLong(a[0]));
                        writer.setBaseTime(Long.parseLong(a[0]));
                    }
                    case "comment" -> writer.outputComment(w[1]);
                    case "version" -> writer.outputLogFormatVersion();
                    case "legend" -> writer.outputLegend();
                    case "int" -> {
                        current = newHistogram(Long.parseLong(a[0]), Long.parseLong(a[1]), Integer.parseInt(a[2]));
                        stamp(current, a[3], a[4], a[5]);
                    }
                    case "double" -> {
                        long r = Long.parseLong(a[0]);
                        current = r > 0 ? new DoubleHistogram(r, Integer.parseInt(a[1]))
                                : new DoubleHistogram(Integer.parseInt(a[1]));
                        stamp(current, a[2], a[3], a[4]);
                    }
                    case "v" -> {
                        if (current instanceof DoubleHistogram d) {
                            d.recordValueWithCount(Double.parseDouble(a[0]), Long.parseLong(a[1]));
                        } else {
                            ((Histogram) current).recordValueWithCount(Long.parseLong(a[0]), Long.parseLong(a[1]));
                        }
                    }
                    case "end" -> {
                        writer.outputIntervalHistogram(current);
                        written++;
                    }
                    default -> throw new IllegalArgumentException("unknown spec line " + line);
                }
            }
        }
        out.append("{\"written\":").append(written).append('}');
    }

    private static void stamp(EncodableHistogram h, String tag, String startMs, String endMs) {
        h.setTag(tag.equals("-") ? null : tag);
        h.setStartTimeStamp(Long.parseLong(startMs));
        h.setEndTimeStamp(Long.parseLong(endMs));
    }

    // ------------------------------------------------------------------ JSON

    private static void string(StringBuilder out, String s) {
        out.append('"');
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}

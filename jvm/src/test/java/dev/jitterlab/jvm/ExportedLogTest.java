package dev.jitterlab.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;
import org.junit.jupiter.api.Test;

/**
 * Java's HdrHistogram reads the interval log jitterlab exports (`jitterlab export --format
 * hlog`): src/test/resources/exported.hlog, which tests/test_interop.py checks is what the
 * exporter writes today.
 */
class ExportedLogTest {
    @Test
    void javasHdrHistogramReadsTheExportedLogAndItsIntervalMaxima() throws Exception {
        List<String> lines = new ArrayList<>();
        try (InputStream in = getClass().getResourceAsStream("/exported.hlog")) {
            assertNotNull(in, "exported.hlog missing");
            new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8)).lines().forEach(lines::add);
        }
        List<String> intervals = lines.stream().filter(l -> !l.isEmpty() && Character.isDigit(l.charAt(0))).toList();
        try (InputStream in = getClass().getResourceAsStream("/exported.hlog")) {
            HistogramLogReader reader = new HistogramLogReader(in);
            long total = 0;
            int n = 0;
            EncodableHistogram h;
            while ((h = reader.nextIntervalHistogram()) != null) {
                Histogram histogram = (Histogram) h;
                double loggedMaxMs = Double.parseDouble(intervals.get(n).split(",")[2]);
                // the Interval_Max column is the interval's max in ms of the ns values, not floored
                assertEquals(histogram.getMaxValue() / 1e6, loggedMaxMs, 0.0006, intervals.get(n));
                assertTrue(loggedMaxMs > 0);
                total += histogram.getTotalCount();
                n++;
            }
            assertEquals(intervals.size(), n);
            assertEquals(2041, total);
        }
    }
}

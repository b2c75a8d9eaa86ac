"""The HdrHistogram room: histograms, their encodings, interval logs and the percentile
distribution text, with the figures of HdrHistogram Java 2.2.2 (docs/statistics.md)."""

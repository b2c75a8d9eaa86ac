"""The OpenMetrics / Prometheus endpoint of ``monitor serve`` (prometheus-client).

A custom collector reads the server's counters at scrape time, so the drain loop never
pays per sample for the metrics: it adds whole batches to numpy counters.

Metrics (label ``channel``):
- ``jitterlab_monitor_latency_seconds``: histogram of every sample (1-2-5 buckets, 1 µs … 10 s)
- ``jitterlab_monitor_latency_percentile_seconds{percentile}``: with ``--percentiles``, the
  latency at each level from an HdrHistogram of every sample (3 significant digits, Java
  2.2.2's getValueAtPercentile; a bounded-memory live figure, not the exact type-7 value
  that ``show --percentiles`` gives for the stored run)
  (text formats); in the protobuf exposition (Accept ``application/vnd.google.protobuf;
  proto=io.prometheus.client.MetricFamily; encoding=delimited``, what Prometheus sends with
  ``--enable-feature=native-histograms``) the same family carries the native histogram
  (schema from ``--native-error``; its buckets are ``(base^(i-1), base^i]``, base 2^(2^-schema))
- ``jitterlab_monitor_latency_summary_seconds{quantile}``: summary at the chosen quantiles
  (``--percentiles``, default 50, 90, 99, 99.9) from the HdrHistogram of every sample
- ``jitterlab_monitor_samples_total``, ``jitterlab_monitor_dropped_total`` (ring full)
- ``jitterlab_monitor_outliers_total{category}``: samples per stacked-z category above the main one
- ``jitterlab_monitor_trial_samples{trial,writer,index}``, ``…_trial_outlier_share``,
  ``…_trial_contaminated`` (1 contaminated, 0 clean), ``…_trial_max_latency_seconds``: per
  trial = its tag, its writer (``PID.N``, a Monitor handle) and its index in the run
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from jitterlab.core.errors import JitterlabError
from jitterlab.monitor.state import BUCKETS_S, LiveState

DEFAULT_QUANTILES = (50.0, 90.0, 99.0, 99.9)
# latencies at or below this (0 ns and clock steps) are the native histogram's zero bucket
NATIVE_ZERO_THRESHOLD = 0.5e-9


class MonitorCollector(Collector):
    def __init__(self, state: LiveState) -> None:
        self.state = state

    def collect(self) -> Iterator[Any]:
        s = self.state
        with s.lock:
            channel = [s.channel]
            cumulative = s.bucket_counts.cumsum()
            buckets = [(f"{b:g}", float(c)) for b, c in zip(BUCKETS_S, cumulative[:-1], strict=True)]
            buckets.append(("+Inf", float(cumulative[-1])))
            histogram = HistogramMetricFamily(
                "jitterlab_monitor_latency_seconds", "latency of every recorded sample", labels=["channel"]
            )
            histogram.add_metric(channel, buckets, s.latency_sum_s)
            yield histogram
            if s.histogram is not None and s.histogram.total:
                summary = Metric(
                    "jitterlab_monitor_latency_summary_seconds",
                    "latency at the chosen quantiles (--percentiles, default 50,90,99,99.9) from an "
                    "HdrHistogram of every sample (3 significant digits)",
                    "summary",
                )
                for p in s.percentiles or DEFAULT_QUANTILES:
                    summary.add_sample(
                        "jitterlab_monitor_latency_summary_seconds",
                        {"channel": s.channel, "quantile": f"{p / 100:g}"},
                        s.histogram.value_at_percentile(p) / 1e9,
                    )
                summary.add_sample(
                    "jitterlab_monitor_latency_summary_seconds_count",
                    {"channel": s.channel},
                    float(s.samples),
                )
                summary.add_sample(
                    "jitterlab_monitor_latency_summary_seconds_sum", {"channel": s.channel}, s.latency_sum_s
                )
                yield summary
            if s.histogram is not None and s.histogram.total and s.percentiles:
                chosen = GaugeMetricFamily(
                    "jitterlab_monitor_latency_percentile_seconds",
                    "latency at each --percentiles level (HdrHistogram, 3 significant digits)",
                    labels=["channel", "percentile"],
                )
                for p in s.percentiles:
                    chosen.add_metric([s.channel, f"{p:g}"], s.histogram.value_at_percentile(p) / 1e9)
                yield chosen
            samples = CounterMetricFamily("jitterlab_monitor_samples", "samples drained", labels=["channel"])
            samples.add_metric(channel, s.samples)
            yield samples
            dropped = CounterMetricFamily(
                "jitterlab_monitor_dropped", "samples dropped because the ring was full", labels=["channel"]
            )
            dropped.add_metric(channel, s.ring_dropped)
            yield dropped
            if s.baseline is not None:
                outliers = CounterMetricFamily(
                    "jitterlab_monitor_outliers",
                    "samples per outlier category of the baseline's stacked z-score thresholds",
                    labels=["channel", "category"],
                )
                for k, count in enumerate(s.category_counts[1:], start=1):
                    outliers.add_metric([s.channel, str(k)], float(count))
                yield outliers
            families = {
                "samples": GaugeMetricFamily(
                    "jitterlab_monitor_trial_samples", "samples of a trial", labels=TRIAL_LABELS
                ),
                "share": GaugeMetricFamily(
                    "jitterlab_monitor_trial_outlier_share",
                    "outlier share of a trial",
                    labels=TRIAL_LABELS,
                ),
                "contaminated": GaugeMetricFamily(
                    "jitterlab_monitor_trial_contaminated",
                    "1 when the trial is contaminated against the baseline",
                    labels=TRIAL_LABELS,
                ),
                "max": GaugeMetricFamily(
                    "jitterlab_monitor_trial_max_latency_seconds",
                    "largest latency of a trial",
                    labels=TRIAL_LABELS,
                ),
            }
            for trial in s.trials:
                labels = [s.channel, trial.tag, trial.writer_name, str(trial.index)]
                verdict = s.verdict(trial)
                families["samples"].add_metric(labels, float(trial.samples))
                families["max"].add_metric(labels, max(trial.max_ns, 0.0) / 1e9)
                if verdict is not None:
                    families["share"].add_metric(labels, verdict.share)
                    families["contaminated"].add_metric(labels, 1.0 if verdict.contaminated else 0.0)
        yield from families.values()


# a trial is its tag, the writer that marked it and its place in the run: label sets stay
# unique when several writers (or one writer twice) use the same tag
TRIAL_LABELS = ["channel", "trial", "writer", "index"]


def parse_listen(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise JitterlabError(f"--listen wants HOST:PORT (for example 127.0.0.1:9464), got '{text}'")
    return host.strip("[]"), int(port)


def native_buckets(state: LiveState) -> tuple[int, float, int, np.ndarray, np.ndarray]:
    """The latency's native histogram now: (schema, zero threshold, zero count, bucket
    indices, counts); bucket k of ``state.native_counts`` is index ``state.native_low + k``."""
    low = state.native_low
    with state.lock:
        nonzero = np.flatnonzero(state.native_counts)
        return (
            state.native_schema,
            NATIVE_ZERO_THRESHOLD,
            state.native_zero,
            nonzero + low,
            state.native_counts[nonzero].copy(),
        )


def start_endpoint(state: LiveState, listen: str, info: dict[str, Any]) -> Any:
    """Serve the live page, its events and /metrics on ``listen`` in background threads;
    returns the endpoint (``shutdown()``)."""
    from prometheus_client.exposition import choose_encoder

    from jitterlab.monitor import live, promproto

    host, port = parse_listen(listen)
    collector = MonitorCollector(state)
    registry = CollectorRegistry()
    registry.register(collector)

    def text(accept: str) -> tuple[bytes, str]:
        encoder, content_type = choose_encoder(accept)
        return encoder(registry), content_type

    def proto() -> bytes:
        native = {"jitterlab_monitor_latency_seconds": native_buckets(state)}
        return promproto.encode_delimited(promproto.from_client_families(collector.collect(), native))

    return live.start_endpoint(state, host, port, info, text, proto)

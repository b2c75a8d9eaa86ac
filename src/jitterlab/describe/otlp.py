"""``export --format otlp``: a run's latency as an OpenTelemetry exponential histogram.

The file is one ``ExportMetricsServiceRequest`` (opentelemetry-proto's
``opentelemetry/proto/collector/metrics/v1/metrics_service.proto``, binary protobuf): what
an OTLP/HTTP exporter POSTs to a collector's ``/v1/metrics`` with
``Content-Type: application/x-protobuf``. It holds one metric, ``jitterlab.latency``
(unit ``s``), an exponential histogram with one data point (cumulative temporality) over
the run's samples, with the run's id, technique and host as attributes.

Scale: bucket ``i`` holds the values in ``(base^i, base^(i+1)]`` with ``base =
2^(2^-scale)``. The scale is the finest (at most 20, OTLP's limit) at which the run's
values fit in :data:`MAX_BUCKETS` buckets (160, the OpenTelemetry SDK's default). A
quantile read from the histogram as ``2·L·U / (L + U)`` of the bucket ``(L, U]`` that holds
its rank is within ``(base − 1) / (base + 1)`` of the exact order statistic at that rank
(:func:`relative_error`); the export prints this bound. Latencies of 0 ns or less (clock
steps) go to the zero bucket (threshold 0).
"""

from __future__ import annotations

import math
import sys
from typing import Any, BinaryIO

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.version import __version__
from jitterlab.store import Run

MAX_BUCKETS = 160
MAX_SCALE, MIN_SCALE = 20, -10
METRIC = "jitterlab.latency"


def relative_error(scale: int) -> float:
    """The bound of a quantile read from a bucket at ``scale``: ``(base − 1) / (base + 1)``."""
    base = float(2.0 ** (2.0**-scale))
    return (base - 1.0) / (base + 1.0)


def bucket_index(values_s: np.ndarray, scale: int) -> np.ndarray:
    """OTLP's index of each positive value: ``ceil(log2(v) · 2^scale) − 1`` (bucket ``i`` is
    ``(base^i, base^(i+1)]``), corrected where floating point crosses an exact boundary."""
    factor = 2.0**scale
    index = np.ceil(np.log2(values_s) * factor).astype(np.int64) - 1
    index[values_s <= np.exp2(index / factor)] -= 1
    index[values_s > np.exp2((index + 1) / factor)] += 1
    result: np.ndarray = index
    return result


def choose_scale(low_s: float, high_s: float, max_buckets: int = MAX_BUCKETS) -> int:
    """The finest scale at which ``[low_s, high_s]`` spans at most ``max_buckets`` buckets."""
    for scale in range(MAX_SCALE, MIN_SCALE - 1, -1):
        first, last = bucket_index(np.array([low_s, high_s]), scale).tolist()
        if last - first + 1 <= max_buckets:
            return scale
    raise JitterlabError(f"latencies from {low_s:g} s to {high_s:g} s do not fit {max_buckets} buckets")


def histogram_of(latency_ns: np.ndarray) -> tuple[int, int, int, np.ndarray, float]:
    """(scale, zero count, offset, bucket counts, sum in seconds) of the latencies."""
    values = latency_ns[latency_ns > 0].astype(np.float64) / 1e9
    zero = int(latency_ns.size - values.size)
    if not values.size:
        return MAX_SCALE, zero, 0, np.zeros(0, np.uint64), 0.0
    scale = choose_scale(float(values.min()), float(values.max()))
    index = bucket_index(values, scale)
    offset = int(index.min())
    counts = np.bincount(index - offset).astype(np.uint64)
    return scale, zero, offset, counts, float(latency_ns.astype(np.float64).sum()) / 1e9


def request_of(run: Run) -> tuple[Any, int]:
    """The ExportMetricsServiceRequest of ``run`` and the scale it was written at."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality

    latency = run.latency_ns
    if not latency.size:
        raise JitterlabError(f"run {run.id} has no samples: nothing to export as otlp")
    scale, zero, offset, counts, total_s = histogram_of(latency)
    request = ExportMetricsServiceRequest()
    resource = request.resource_metrics.add()
    host = str((run.meta.get("environment") or {}).get("host", ""))
    resource.resource.attributes.extend(
        [
            KeyValue(key="service.name", value=AnyValue(string_value="jitterlab")),
            KeyValue(key="host.name", value=AnyValue(string_value=host)),
        ]
    )
    scope = resource.scope_metrics.add()
    scope.scope.name, scope.scope.version = "jitterlab", __version__
    metric = scope.metrics.add()
    metric.name, metric.unit = METRIC, "s"
    metric.description = "latency of every sample of a jitterlab run"
    histogram = metric.exponential_histogram
    histogram.aggregation_temporality = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
    point = histogram.data_points.add()
    point.attributes.extend(
        [
            KeyValue(key="jitterlab.run", value=AnyValue(string_value=run.id)),
            KeyValue(
                key="jitterlab.technique", value=AnyValue(string_value=str(run.config.get("technique", "")))
            ),
        ]
    )
    t_send = run.t_send_ns
    point.start_time_unix_nano, point.time_unix_nano = _unix_span(run, int(t_send.max() - t_send.min()))
    point.count, point.sum = int(latency.size), total_s
    point.min, point.max = float(latency.min()) / 1e9, float(latency.max()) / 1e9
    point.scale, point.zero_count, point.zero_threshold = scale, zero, 0.0
    point.positive.offset = offset
    point.positive.bucket_counts.extend(counts.tolist())
    return request, scale


def _unix_span(run: Run, length_ns: int) -> tuple[int, int]:
    """The run's start (its ``created_utc`` time) and end in Unix nanoseconds."""
    import datetime as dt

    started = run.meta.get("created_utc")
    try:
        start = dt.datetime.fromisoformat(str(started).replace("Z", "+00:00"))
        start_ns = int(start.timestamp()) * 1_000_000_000 + start.microsecond * 1000
    except ValueError:
        start_ns = 0
    return start_ns, start_ns + max(length_ns, 0)


def quantile_from(point: Any, q: float) -> float:
    """The q-quantile (seconds) read from a decoded exponential-histogram data point: the
    bucket holding rank ``max(1, ceil(q · count))``, read as ``2·L·U / (L + U)``."""
    rank = max(1, math.ceil(q * point.count))
    if rank <= point.zero_count:
        return 0.0
    seen = point.zero_count
    base = 2.0 ** (2.0**-point.scale)
    for k, c in enumerate(point.positive.bucket_counts):
        seen += c
        if seen >= rank:
            i = point.positive.offset + k
            lower, upper = float(base**i), float(base ** (i + 1))
            return 2.0 * lower * upper / (lower + upper)
    raise ValueError("the histogram holds fewer values than its count says")


def export_otlp(run: Run, o: Any, out: BinaryIO) -> None:
    """Write ``run`` as an OTLP ExportMetricsServiceRequest; say the scale's error bound."""
    request, scale = request_of(run)
    out.write(request.SerializeToString())
    sys.stderr.write(
        f"otlp: exponential histogram at scale {scale} (base 2^(2^-{scale})): a quantile read from it "
        f"is within {relative_error(scale):.3%} of the exact value (HdrHistogram, 3 digits: 0.098%)\n"
    )

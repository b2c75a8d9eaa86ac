"""The OpenTelemetry exponential histogram: its buckets, its error bound and the
``ExportMetricsServiceRequest`` that carries it (opentelemetry-proto's
``opentelemetry/proto/collector/metrics/v1/metrics_service.proto``, binary protobuf: what
an OTLP/HTTP exporter POSTs to a collector's ``/v1/metrics`` with ``Content-Type:
application/x-protobuf``). One encoder for ``export --format otlp`` (describe/otlp.py, a
stored run) and ``monitor serve --otlp`` (monitor/otlp_push.py, a live channel).

Scale: bucket ``i`` holds the values in ``(base^i, base^(i+1)]`` with ``base =
2^(2^-scale)``. A quantile read from the histogram as ``2·L·U / (L + U)`` of the bucket
``(L, U]`` that holds its rank is within ``(base − 1) / (base + 1)`` of the exact order
statistic at that rank (:func:`relative_error`). Latencies of 0 ns or less (clock steps) go
to the zero bucket (threshold 0). The metric is ``jitterlab.latency`` (unit ``s``), one
data point, cumulative temporality.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.version import __version__

MAX_BUCKETS = 160  # the OpenTelemetry SDK's default
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


@dataclass(frozen=True)
class ExponentialHistogram:
    """One data point's histogram: ``counts[k]`` values in bucket ``offset + k`` at
    ``scale``, ``zero`` values at or below 0, their ``sum_s``, ``min_s`` and ``max_s``."""

    scale: int
    zero: int
    offset: int
    counts: np.ndarray
    sum_s: float
    min_s: float | None  # None: not known (OTLP's min and max are optional)
    max_s: float | None

    @property
    def count(self) -> int:
        return self.zero + int(self.counts.sum())


def histogram_of(latency_ns: np.ndarray) -> ExponentialHistogram:
    """The exponential histogram of latencies (ns) at the finest scale that fits
    :data:`MAX_BUCKETS` buckets."""
    values = latency_ns[latency_ns > 0].astype(np.float64) / 1e9
    zero = int(latency_ns.size - values.size)
    low, high = (float(latency_ns.min()) / 1e9, float(latency_ns.max()) / 1e9) if latency_ns.size else (0, 0)
    if not values.size:
        return ExponentialHistogram(MAX_SCALE, zero, 0, np.zeros(0, np.uint64), 0.0, low, high)
    scale = choose_scale(float(values.min()), float(values.max()))
    index = bucket_index(values, scale)
    offset = int(index.min())
    counts = np.bincount(index - offset).astype(np.uint64)
    return ExponentialHistogram(
        scale, zero, offset, counts, float(latency_ns.astype(np.float64).sum()) / 1e9, low, high
    )


def downscaled(
    scale: int, index: np.ndarray, counts: np.ndarray, max_buckets: int = MAX_BUCKETS
) -> tuple[int, int, np.ndarray]:
    """(scale, offset, counts) of buckets ``index`` (OTLP indices at ``scale``, ascending)
    merged to the finest scale at or below ``scale`` where they span at most
    ``max_buckets``: bucket ``i`` at scale ``s`` lies in bucket ``i >> 1`` at ``s − 1``
    (OpenTelemetry's downscaling: exact, no value moves out of its bucket)."""
    if not index.size:
        return scale, 0, np.zeros(0, np.uint64)
    shift = 0
    while (int(index[-1]) >> shift) - (
        int(index[0]) >> shift
    ) + 1 > max_buckets and scale - shift > MIN_SCALE:
        shift += 1
    merged = index >> shift
    offset = int(merged[0])
    return scale - shift, offset, np.bincount(merged - offset, weights=counts).astype(np.uint64)


def request_of(
    histogram: ExponentialHistogram,
    start_unix_ns: int,
    time_unix_ns: int,
    resource: Mapping[str, str],
    attributes: Mapping[str, str],
    description: str,
) -> Any:
    """The ExportMetricsServiceRequest of one histogram (the ``jitterlab.latency`` metric,
    one cumulative data point with ``attributes``, under a resource with ``resource``)."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality

    def pairs(items: Mapping[str, str]) -> list[Any]:
        return [KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in items.items()]

    request = ExportMetricsServiceRequest()
    res = request.resource_metrics.add()
    res.resource.attributes.extend(pairs({"service.name": "jitterlab", **resource}))
    scope = res.scope_metrics.add()
    scope.scope.name, scope.scope.version = "jitterlab", __version__
    metric = scope.metrics.add()
    metric.name, metric.unit, metric.description = METRIC, "s", description
    exponential = metric.exponential_histogram
    exponential.aggregation_temporality = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
    point = exponential.data_points.add()
    point.attributes.extend(pairs(attributes))
    point.start_time_unix_nano, point.time_unix_nano = start_unix_ns, max(start_unix_ns, time_unix_ns)
    point.count, point.sum = histogram.count, histogram.sum_s
    if histogram.count and histogram.min_s is not None and histogram.max_s is not None:
        point.min, point.max = histogram.min_s, histogram.max_s
    point.scale, point.zero_count, point.zero_threshold = histogram.scale, histogram.zero, 0.0
    point.positive.offset = histogram.offset
    point.positive.bucket_counts.extend(histogram.counts.tolist())
    return request


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


def bound_text(scale: int) -> str:
    """What is said of a histogram at ``scale``: its base and error bound, beside HdrHistogram's."""
    return (
        f"exponential histogram at scale {scale} (base 2^(2^-{scale})): a quantile read from it "
        f"is within {relative_error(scale):.3%} of the exact value (HdrHistogram, 3 digits: 0.098%)"
    )

"""Prometheus' protobuf exposition (``io.prometheus.client.MetricFamily``, length-delimited).

Prometheus scrapes native histograms only in the protobuf format (its text format has no
way to write them). The messages are those of prometheus/client_model's ``metrics.proto``
(proto2, package ``io.prometheus.client``): only the messages and fields this endpoint
writes are declared here, with the field numbers of that file, and the ``protobuf`` package
builds and encodes them; each family goes out as a varint length followed by the message
(``encoding=delimited``).

Native histogram (Prometheus' sparse exponential buckets): at schema ``s`` the bucket
boundaries are the powers of ``base = 2^(2^-s)``; bucket ``i`` holds the values in
``(base^(i-1), base^i]``. Values at or below the zero threshold go to the zero bucket.
Buckets are sent as spans of consecutive indices with the counts as deltas.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

CONTENT_TYPE = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
PROTO_NAME = "io.prometheus.client.MetricFamily"
MIN_SCHEMA, MAX_SCHEMA = -4, 8

# MetricType
COUNTER, GAUGE, SUMMARY, UNTYPED, HISTOGRAM = 0, 1, 2, 3, 4

_CLASSES: dict[str, Any] = {}


def wants_protobuf(accept: str) -> bool:
    """Whether an Accept header asks for the delimited MetricFamily protobuf (Prometheus
    sends it first, with a q value, when native histograms are enabled)."""
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        if fields[0].lower() != "application/vnd.google.protobuf":
            continue
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if params.get("proto") == PROTO_NAME and params.get("encoding") == "delimited":
            return params.get("q", "1") not in ("0", "0.0")
    return False


def schema_for(relative_error: float) -> int:
    """The coarsest schema whose buckets are narrow enough: ``base − 1 ≤ relative_error``
    (a value read anywhere inside its bucket is then within ``relative_error`` of every value
    in that bucket, relative to the bucket's lower bound), clamped to Prometheus' −4 … 8."""
    if not relative_error > 0:
        raise ValueError("the relative error must be positive")
    s = math.ceil(-math.log2(math.log2(1.0 + relative_error)))
    return min(max(s, MIN_SCHEMA), MAX_SCHEMA)


def schema_error(schema: int) -> float:
    """The bound of a schema: ``base − 1`` with ``base = 2^(2^-schema)``."""
    return float(2.0 ** (2.0**-schema) - 1.0)


def bucket_indices(values_s: np.ndarray, schema: int) -> np.ndarray:
    """The native bucket index of each positive value (seconds): ``ceil(log2(v) · 2^schema)``,
    corrected where floating point moves a value across a bucket's bound ``exp2(i / 2^schema)``."""
    scale = 2.0**schema
    index = np.ceil(np.log2(values_s) * scale).astype(np.int64)
    index[values_s <= np.exp2((index - 1) / scale)] -= 1  # on the lower bound: the bucket below
    index[values_s > np.exp2(index / scale)] += 1
    result: np.ndarray = index
    return result


def _classes() -> dict[str, Any]:
    """The message classes, built once from a descriptor declared here."""
    if _CLASSES:
        return _CLASSES
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    proto = descriptor_pb2.FileDescriptorProto(
        name="jitterlab_prometheus_metrics.proto", package="io.prometheus.client", syntax="proto2"
    )

    def message(name: str, fields: Iterable[tuple[str, int, int, int, str]]) -> None:
        m = proto.message_type.add(name=name)
        for fname, number, label, ftype, type_name in fields:
            f = m.field.add(name=fname, number=number, label=label, type=ftype)
            if type_name:
                f.type_name = f".io.prometheus.client.{type_name}"

    enum = proto.enum_type.add(name="MetricType")
    for name, number in (("COUNTER", 0), ("GAUGE", 1), ("SUMMARY", 2), ("UNTYPED", 3), ("HISTOGRAM", 4)):
        enum.value.add(name=name, number=number)
    S, D, U64, S32, S64, U32, I64, E, M = (
        F.TYPE_STRING,
        F.TYPE_DOUBLE,
        F.TYPE_UINT64,
        F.TYPE_SINT32,
        F.TYPE_SINT64,
        F.TYPE_UINT32,
        F.TYPE_INT64,
        F.TYPE_ENUM,
        F.TYPE_MESSAGE,
    )
    message("LabelPair", [("name", 1, opt, S, ""), ("value", 2, opt, S, "")])
    message("Gauge", [("value", 1, opt, D, "")])
    message("Counter", [("value", 1, opt, D, "")])
    message("Quantile", [("quantile", 1, opt, D, ""), ("value", 2, opt, D, "")])
    message(
        "Summary",
        [
            ("sample_count", 1, opt, U64, ""),
            ("sample_sum", 2, opt, D, ""),
            ("quantile", 3, rep, M, "Quantile"),
        ],
    )
    message("Untyped", [("value", 1, opt, D, "")])
    message("Bucket", [("cumulative_count", 1, opt, U64, ""), ("upper_bound", 2, opt, D, "")])
    message("BucketSpan", [("offset", 1, opt, S32, ""), ("length", 2, opt, U32, "")])
    message(
        "Histogram",
        [
            ("sample_count", 1, opt, U64, ""),
            ("sample_sum", 2, opt, D, ""),
            ("bucket", 3, rep, M, "Bucket"),
            ("schema", 5, opt, S32, ""),
            ("zero_threshold", 6, opt, D, ""),
            ("zero_count", 7, opt, U64, ""),
            ("negative_span", 9, rep, M, "BucketSpan"),
            ("negative_delta", 10, rep, S64, ""),
            ("positive_span", 12, rep, M, "BucketSpan"),
            ("positive_delta", 13, rep, S64, ""),
        ],
    )
    message(
        "Metric",
        [
            ("label", 1, rep, M, "LabelPair"),
            ("gauge", 2, opt, M, "Gauge"),
            ("counter", 3, opt, M, "Counter"),
            ("summary", 4, opt, M, "Summary"),
            ("untyped", 5, opt, M, "Untyped"),
            ("timestamp_ms", 6, opt, I64, ""),
            ("histogram", 7, opt, M, "Histogram"),
        ],
    )
    message(
        "MetricFamily",
        [
            ("name", 1, opt, S, ""),
            ("help", 2, opt, S, ""),
            ("type", 3, opt, E, "MetricType"),
            ("metric", 4, rep, M, "Metric"),
        ],
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    for name in ("MetricFamily", "Metric", "Histogram", "BucketSpan", "Summary"):
        descriptor = pool.FindMessageTypeByName(f"io.prometheus.client.{name}")
        _CLASSES[name] = message_factory.GetMessageClass(descriptor)
    return _CLASSES


def metric_family_class() -> Any:
    """The ``MetricFamily`` message class (for decoding in tests and tools)."""
    return _classes()["MetricFamily"]


def spans_and_deltas(index: np.ndarray, counts: np.ndarray) -> tuple[list[tuple[int, int]], list[int]]:
    """Sparse buckets (sorted indices with non-zero counts) as Prometheus spans
    (offset from the previous span's end, length) and count deltas. Gaps of one or two
    empty buckets are bridged with zero counts, as client_golang does (cheaper than a span)."""
    spans: list[tuple[int, int]] = []
    deltas: list[int] = []
    previous_count, next_index = 0, 0
    for i, c in zip(index.tolist(), counts.tolist(), strict=True):
        gap = i - next_index
        if spans and 0 < gap <= 2:
            for _ in range(gap):
                deltas.append(-previous_count)
                previous_count = 0
            spans[-1] = (spans[-1][0], spans[-1][1] + gap)
            gap = 0
        if not spans or gap > 0:
            spans.append((i if not spans else gap, 1))
        else:
            spans[-1] = (spans[-1][0], spans[-1][1] + 1)
        deltas.append(int(c) - previous_count)
        previous_count, next_index = int(c), i + 1
    return spans, deltas


def encode_delimited(families: Iterable[Any]) -> bytes:
    """Families as Prometheus reads them: each as varint length + message."""
    from google.protobuf.internal.encoder import _VarintBytes  # the varint writer protobuf uses

    out = bytearray()
    for family in families:
        body = family.SerializeToString()
        out += _VarintBytes(len(body))
        out += body
    return bytes(out)


def decode_delimited(data: bytes) -> list[Any]:
    """The families of a delimited stream (what Prometheus does with a scrape)."""
    from google.protobuf.internal.decoder import _DecodeVarint

    cls = metric_family_class()
    families, pos = [], 0
    while pos < len(data):
        size, pos = _DecodeVarint(data, pos)
        family = cls()
        family.ParseFromString(data[pos : pos + size])
        families.append(family)
        pos += size
    return families


def from_client_families(
    families: Iterable[Any], native: dict[str, tuple[int, float, int, np.ndarray, np.ndarray]]
) -> list[Any]:
    """prometheus-client families (what the collector yields) as MetricFamily messages;
    ``native`` maps a histogram's name to (schema, zero_threshold, zero_count, indices,
    counts) of its native buckets, sent beside its classic ones."""
    classes = _classes()
    out = []
    for fam in families:
        kind = {"counter": COUNTER, "gauge": GAUGE, "summary": SUMMARY, "histogram": HISTOGRAM}.get(
            fam.type, UNTYPED
        )
        name = fam.name + "_total" if fam.type == "counter" else fam.name
        message = classes["MetricFamily"](name=name, help=fam.documentation, type=kind)
        groups: dict[tuple[tuple[str, str], ...], list[Any]] = {}
        for sample in fam.samples:
            labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k not in ("le", "quantile")))
            groups.setdefault(labels, []).append(sample)
        for labels, samples in groups.items():
            metric = message.metric.add()
            for k, v in labels:
                metric.label.add(name=k, value=v)
            if kind == COUNTER:
                metric.counter.value = next(s.value for s in samples if s.name.endswith("_total"))
            elif kind == GAUGE:
                metric.gauge.value = samples[0].value
            elif kind == SUMMARY:
                for s in samples:
                    if s.name.endswith("_count"):
                        metric.summary.sample_count = int(s.value)
                    elif s.name.endswith("_sum"):
                        metric.summary.sample_sum = s.value
                    elif "quantile" in s.labels:
                        metric.summary.quantile.add(quantile=float(s.labels["quantile"]), value=s.value)
            elif kind == HISTOGRAM:
                h = metric.histogram
                for s in samples:
                    if s.name.endswith("_count"):
                        h.sample_count = int(s.value)
                    elif s.name.endswith("_sum"):
                        h.sample_sum = s.value
                    elif s.name.endswith("_bucket") and s.labels["le"] != "+Inf":
                        h.bucket.add(cumulative_count=int(s.value), upper_bound=float(s.labels["le"]))
                if fam.name in native:
                    schema, zero_threshold, zero_count, index, counts = native[fam.name]
                    h.schema, h.zero_threshold, h.zero_count = schema, zero_threshold, zero_count
                    spans, deltas = spans_and_deltas(index, counts)
                    if not spans:  # an empty native histogram still says it is one
                        spans = [(0, 0)]
                    for offset, length in spans:
                        h.positive_span.add(offset=offset, length=length)
                    h.positive_delta.extend(deltas)
            else:
                metric.untyped.value = samples[0].value
        out.append(message)
    return out

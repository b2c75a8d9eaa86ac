"""What ``describe`` and the report say about a histogram-only run (an imported HdrHistogram
log): every tag's whole-log figures side by side, the chosen tag's intervals, and with an
expected interval the figures corrected for coordinated omission beside the measured ones.

The figures stored at import are used as they are; a tag, a time range or an expected
interval other than the import's re-reads the run's log (:func:`store.hdr.streams.read_figures`,
HdrHistogram Java's HistogramLogProcessor rules).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jitterlab.core.errors import JitterlabError
from jitterlab.store import Run
from jitterlab.store.hdr.streams import figures, in_unit, read_figures
from jitterlab.store.schema import summary_fields

HISTOGRAM_ONLY = "outlier categories (stacked-z, GESD, Walsh) and windows by send time need raw samples"


@dataclass(frozen=True)
class HistogramDescription:
    run: Run
    tag: str | None  # the stream whose intervals are listed
    streams: list[dict[str, Any]]  # every tag: intervals, summary (and corrected)
    windows: list[dict[str, Any]]  # the chosen tag's intervals
    expected_interval_ns: int | None
    from_s: float | None
    to_s: float | None

    @property
    def summary(self) -> dict[str, Any]:
        return next(s["summary"] for s in self.streams if s["tag"] == self.tag)


def _stored_streams(run: Run) -> list[dict[str, Any]]:
    info = run.meta["histogram"]
    if "streams" in info:
        return list(info["streams"])
    # runs imported before tags were kept apart: one stream, the run's summary
    return [
        {"tag": None, "intervals": info.get("intervals", 0), "summary": run.meta["summary"]["latency_ns"]}
    ]


def describe_histogram(
    run: Run,
    tag: str | None = None,
    from_s: float | None = None,
    to_s: float | None = None,
    expected_interval_ns: int | None = None,
) -> HistogramDescription:
    """The streams and intervals of a histogram-only run (``tag`` None: the run's own)."""
    info = run.meta["histogram"]
    chosen = tag if tag is not None else info.get("tag")
    stored_expected = info.get("expected_interval_ns")
    if from_s is None and to_s is None and expected_interval_ns in (None, stored_expected):
        streams = _stored_streams(run)
        windows = [w for w in info.get("windows", []) if w.get("tag") == chosen]
        expected = stored_expected
    else:
        scale = int(info.get("scale_ns", 1))
        path = run.path / str(info["file"])
        expected = expected_interval_ns if expected_interval_ns is not None else stored_expected
        with open(path, "rb") as f:
            result = read_figures(
                f,
                str(path),
                scale=scale,
                from_s=from_s,
                to_s=to_s,
                expected_interval=in_unit(expected, scale),
            )
        streams = []
        for stream in result.streams.values():
            assert stream.whole is not None
            entry: dict[str, Any] = {
                "tag": stream.tag,
                "intervals": stream.intervals,
                "summary": figures(stream.whole, scale),
            }
            if stream.corrected is not None:
                entry["corrected"] = figures(stream.corrected, scale)
            streams.append(entry)
        windows = [w for w in result.windows if w["tag"] == chosen]
    if all(s["tag"] != chosen for s in streams):
        names = ", ".join(_name(s["tag"]) for s in streams) or "none"
        raise JitterlabError(f"run {run.id}: no intervals of {_name(chosen)} here (streams: {names})")
    return HistogramDescription(run, chosen, streams, windows, expected, from_s, to_s)


def _name(tag: str | None) -> str:
    return "(untagged)" if tag is None else f"tag {tag}"


def stream_name(tag: str | None) -> str:
    """How a stream is named in tables: its tag, or "(untagged)"."""
    return "(untagged)" if tag is None else tag


def histogram_json(d: HistogramDescription) -> dict[str, Any]:
    """``describe --json`` of a histogram-only run."""
    chosen = next(s for s in d.streams if s["tag"] == d.tag)
    out: dict[str, Any] = {
        "id": d.run.id,
        "histogram_only": True,
        "tag": d.tag,
        **summary_fields(chosen["summary"]),
        "streams": d.streams,
        "intervals": d.windows,
        "from_s": d.from_s,
        "to_s": d.to_s,
        "expected_interval_ns": d.expected_interval_ns,
        "percentile_definition": "hdrhistogram-java-2.2.2",
        "not_available": HISTOGRAM_ONLY,
    }
    if "corrected" in chosen:
        out["summary_corrected_ns"] = chosen["corrected"]
    return out


def histogram_intervals(run: Run, levels: tuple[float, ...], confidence: float) -> list[Any]:
    """Each level of a histogram-only run (the run's own tag) with the binomial interval on
    its counts (method ``binomial-counts``: a histogram keeps no order, so no block method
    and no test of dependence can be had): the bounds are the values at the binomial ranks
    as HdrHistogram gives a rank (getValueAtPercentile of 100·rank/n: the highest value
    equivalent to its bucket), the value HdrHistogram's own percentile."""
    import dataclasses

    from jitterlab.stats.quantile_ci import quantile_intervals

    info = run.meta["histogram"]
    scale = int(info.get("scale_ns", 1))
    path = run.path / str(info["file"])
    with open(path, "rb") as f:
        result = read_figures(f, str(path), scale=scale)
    tag = info.get("tag")
    stream = next((s for s in result.streams.values() if s.tag == tag), None)
    h = stream.whole if stream is not None else None
    n = int(h.total) if h is not None else 0
    if h is None or n == 0:
        return quantile_intervals(0, levels, lambda r: {}, None, confidence)

    def at_ranks(ranks: list[int]) -> dict[int, float]:
        return {r: float(h.value_at_percentile(min(100.0, 100.0 * (r + 1) / n))) * scale for r in ranks}

    found = quantile_intervals(n, levels, at_ranks, None, confidence)
    return [
        dataclasses.replace(q, value=float(h.value_at_percentile(q.level)) * scale)
        if q.value is not None
        else q
        for q in found
    ]

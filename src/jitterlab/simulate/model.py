"""Latency models (thesis ch. 6 §3.1) and the reference simulation of injecting them.

A model is a time-invariant base delay plus time-variant spikes. Built from a run, the
base is the main cluster of the stacked z-test and every outlier category contributes
spikes: an empirical distribution of spike *duration* and one of the *inter-arrival time*
between that category's spikes (by send time), each stored as a sampled quantile function.

Spike duration is defined as the excess of a spike sample over the main cluster's median:
the injector adds it on top of the base delay it already applies, so base + duration
reproduces the measured spike latency without counting the typical delay twice.

``simulate_delays`` is the reference semantics of the injector (§7.1's availability
queue): each item's availability is its arrival plus a base delay, plus a spike duration
when a spike of some category is due (the next one is then scheduled from that
category's inter-arrival distribution); items leave in order, so a spike also delays the
items queued behind it. With ``reorder`` every item keeps its own delay.

Format: docs/model-format.md (schema_version 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np
import numpy.typing as npt
from scipy import stats

from jitterlab.core.errors import JitterlabError
from jitterlab.core.units import format_ns, parse_duration_ns
from jitterlab.stats import StackedResult, percentiles, stacked_z_test
from jitterlab.stats.outofcore import stacked_z_scan
from jitterlab.stats.scan import LocalScan, Scan
from jitterlab.stats.summary import (
    extent_by,
    percentiles_by,
    percentiles_of_scan,
    percentiles_sorted,
    refine_by,
)
from jitterlab.store import Run
from jitterlab.store.memory import fits_in_memory, memory_bound_bytes, stored_rows
from jitterlab.store.reader import LOCAL, Engine
from jitterlab.store.runs import verified_samples_path
from jitterlab.store.schema import strict_json

SCHEMA_VERSION = 1
KIND = "jitterlab.model"
DEFAULT_POINTS = 256
MAX_POINTS = 1_000_000  # per quantile function; the native reader has the same bound
MAX_FILE_BYTES = 256 * 1024 * 1024
MIN_MEAN_GAP_NS = 1_000.0  # spikes closer than 1 µs on average model no system (native: the same)


def levels(n: int, points: int) -> np.ndarray:
    """The percentiles a quantile function of ``points`` points samples: 100 (i + 0.5) / m,
    i = 0..m-1, m = min(points, n) (at least 1)."""
    m = min(points, max(n, 1))
    return (np.arange(m) + 0.5) / m * 100.0


@dataclass(frozen=True)
class QuantileFunction:
    """A distribution as its quantile function sampled at p = (i + 0.5) / n, i = 0..n-1."""

    values: np.ndarray  # ascending, nanoseconds

    @classmethod
    def of(cls, sample: npt.ArrayLike, points: int = DEFAULT_POINTS) -> QuantileFunction:
        """Type-7 percentiles (docs/statistics.md) at ``levels(n, points)``."""
        x = np.sort(np.asarray(sample, dtype=np.float64))
        return cls(percentiles_sorted(x, [float(p) for p in levels(x.size, points)]))

    @classmethod
    def of_chunks(
        cls,
        chunks: Callable[[], Iterable[np.ndarray]],
        points: int,
        transform: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> QuantileFunction:
        """:meth:`of` of ``transform`` (non-decreasing) of an integer sample read as chunks,
        exactly (order statistics by refinement, then transformed and interpolated)."""
        return cls.of_scan(LocalScan(chunks), points, transform)

    @classmethod
    def of_scan(
        cls, scan: Scan, points: int, transform: Callable[[np.ndarray], np.ndarray] | None = None
    ) -> QuantileFunction:
        """:meth:`of_chunks` of a sample read by ``scan`` (here or on a cluster's workers)."""
        count, lowest, highest, _ = extent_by(scan)
        ps = tuple(float(p) for p in levels(count, points))
        return cls(percentiles_by(refine_by(scan), ps, (count, lowest, highest), transform))

    def draw(self, rng: np.random.Generator, size: int | None = None) -> Any:
        """Inverse-transform draws: a uniform u picks a point between the stored quantiles."""
        v = self.values
        if v.size == 1:
            return v[0] if size is None else np.full(size, v[0])
        u = rng.random(size)
        position = u * v.size - 0.5
        return np.interp(position, np.arange(v.size), v)

    def to_json(self) -> list[float]:
        return [round(float(x), 3) for x in self.values]


@dataclass(frozen=True)
class SpikeCategory:
    index: int
    duration: QuantileFunction  # excess over the main cluster's median
    interarrival: QuantileFunction  # time between this category's spikes
    rate_hz: float
    count: int
    share: float


@dataclass(frozen=True)
class LatencyModel:
    base: QuantileFunction | None  # None when the base is a sine
    sine: tuple[float, float, float] | None  # (mean, amplitude, period) in ns
    categories: tuple[SpikeCategory, ...]
    source: dict[str, Any]

    def base_delay(self, t_ns: float, rng: np.random.Generator) -> float:
        if self.sine is not None:
            mean, amplitude, period = self.sine
            return max(0.0, mean + amplitude * math.sin(2 * math.pi * t_ns / period))
        assert self.base is not None
        return float(self.base.draw(rng))


def _kde_quantiles(sample: np.ndarray, points: int, seed: int = 0) -> QuantileFunction:
    """Quantiles of a Gaussian KDE fitted to log values, so the smoothed values stay positive."""
    positive = sample[sample > 0].astype(np.float64)
    if positive.size < 3 or np.ptp(np.log(positive)) == 0:
        return QuantileFunction.of(sample, points)
    kde = stats.gaussian_kde(np.log(positive))
    drawn = np.exp(kde.resample(200_000, seed=seed)[0])
    return QuantileFunction.of(drawn, points)


# What the in-memory model (--kde, or --scale 0) takes per sample: the run's columns and
# latency array as every in-memory analysis (store/runs.py: 80 B), and the KDE's float64
# copies of the main cluster (its positive values, their logs, the fitted dataset: 24 B)
IN_MEMORY_MODEL_BYTES_PER_SAMPLE = 104


def _check_fits_in_memory(run: Run, kde: bool) -> None:
    """Refuse, in one line and before reading a sample, a run whose in-memory model would
    not fit the memory available (the one rule: :func:`jitterlab.store.memory.fits_in_memory`)."""
    rows = stored_rows(run) or 0
    if not fits_in_memory(rows, IN_MEMORY_MODEL_BYTES_PER_SAMPLE):
        need, bound = rows * IN_MEMORY_MODEL_BYTES_PER_SAMPLE, memory_bound_bytes()
        what = "--kde" if kde else "--scale 0"
        raise JitterlabError(
            f"run {run.id}: model build {what} holds all {rows:,} samples in memory (about "
            f"{need / 1e9:.2f} GB at {IN_MEMORY_MODEL_BYTES_PER_SAMPLE} B a sample, more than the "
            f"{bound / 1e9:.2f} GB available); without {what} the model is built in row groups"
        )


MIN_SPIKES_PER_CATEGORY = 30  # below this a category's empirical distributions are rough


def thin_parts(model: LatencyModel) -> list[str]:
    """What a model built from a run rests on too few samples for, in words: the main
    cluster when it has fewer samples than quantile points, a category with fewer than
    MIN_SPIKES_PER_CATEGORY spikes (each is an empirical distribution of durations and of
    the gaps between them)."""
    out = []
    main_count = int(model.source.get("main_count", 0))
    points = int(model.source.get("points", DEFAULT_POINTS))
    if main_count and main_count < points:
        out.append(
            f"the main cluster has {main_count} samples for a quantile function of {points} points: "
            "record a longer run, or lower --points"
        )
    for c in model.categories:
        if c.count < MIN_SPIKES_PER_CATEGORY:
            out.append(
                f"category {c.index} rests on {c.count} spikes (fewer than {MIN_SPIKES_PER_CATEGORY}): its "
                "duration and inter-arrival distributions are rough; record a longer run"
            )
    return out


def build_model(
    run: Run,
    points: int = DEFAULT_POINTS,
    kde: bool = False,
    min_category: int = 2,
    scale: float = 1.0,
    engine: Engine | None = None,
) -> LatencyModel:
    """The model of a measured run (see module docs). Categories with fewer than
    ``min_category`` spikes are left out (said in ``source.dropped_categories``).
    ``engine``: where the passes over the samples run (a cluster's,
    jitterlab.cluster.engine; it builds in row groups, so not with ``kde``)."""
    if run.histogram_only:
        raise JitterlabError(
            f"run {run.id} holds a histogram only: a model needs raw samples with send times"
        )
    if engine is not None and (kde or run.loaded):
        raise JitterlabError(CLUSTER_NEEDS_STREAMED)
    if not kde and scale > 0 and not run.loaded:
        return _build_streamed(run, points, min_category, scale, engine or LOCAL)
    if not run.loaded:
        _check_fits_in_memory(run, kde)
    latency = run.latency_ns
    if latency.size < 10:
        raise JitterlabError(f"run {run.id} has too few samples for a model ({latency.size})")
    t_send = run.t_send_ns
    result = stacked_z_test(latency)
    labels = result.labels(latency)
    main = latency[labels == 0]
    median = float(percentiles(main, (50.0,))[0])
    span_s = max(float(t_send.max() - t_send.min()), 1.0) / 1e9

    def quantiles(sample: np.ndarray) -> QuantileFunction:
        return _kde_quantiles(sample, points) if kde else QuantileFunction.of(sample, points)

    categories = []
    dropped = []
    for c in result.categories:
        if c.index < 1:
            continue
        members = labels == c.index
        if c.count < min_category:
            dropped.append(c.index)
            continue
        durations = (np.sort(latency[members]) - median) * scale  # sorted: as the streamed path
        times = np.sort(t_send[members])
        gaps = np.diff(times).astype(np.float64)
        interarrival = quantiles(gaps) if gaps.size else QuantileFunction(np.array([span_s * 1e9]))
        categories.append(
            SpikeCategory(c.index, quantiles(durations), interarrival, c.count / span_s, c.count, c.share)
        )
    source = _source(run, result, median, span_s, points, kde, scale, min_category, dropped, int(main.size))
    return LatencyModel(quantiles(main), None, tuple(categories), source)


CLUSTER_NEEDS_STREAMED = (
    "--cluster builds the model in row groups: drop --kde (it holds every sample here) or --cluster"
)


def keep_between(x: np.ndarray, lower: float | None, upper: float | None) -> np.ndarray:
    """The values of ``x`` in ``(lower, upper]`` (a scan's step: one category's samples)."""
    keep = np.ones(x.size, bool)
    if lower is not None:
        keep &= x > lower
    if upper is not None:
        keep &= x <= upper
    return x[keep]


def spike_times(
    chunk: tuple[np.ndarray, np.ndarray], result: StackedResult, indices: tuple[int, ...]
) -> tuple[int, int, int, list[np.ndarray]]:
    """Of one timed chunk: its count and send-time extent, and the send times of the samples
    of each outlier category in ``indices`` (a scan's pass, here or on a worker)."""
    t, x = chunk
    if t.size == 0:
        return 0, 0, 0, [t[:0] for _ in indices]
    labels = result.labels(x)
    return int(t.size), int(t.min()), int(t.max()), [t[labels == index] for index in indices]


def _build_streamed(
    run: Run, points: int, min_category: int, scale: float, engine: Engine = LOCAL
) -> LatencyModel:
    """:func:`build_model` (without KDE) of a run read in row groups, identical to the
    in-memory build: the stacked test and every quantile function by exact selection
    (stats/outofcore.py, stats/summary.py), each pass run by ``engine`` (here, or on a
    cluster's workers); what is held is the send times of the outlier categories' spikes
    (their inter-arrival gaps need them in order), never the main cluster."""
    path = verified_samples_path(run)
    latency = engine.latency(path)
    count, _, _, _ = extent_by(latency)
    if count < 10:
        raise JitterlabError(f"run {run.id} has too few samples for a model ({count})")
    result = stacked_z_scan(latency)
    cuts = result.thresholds

    def between(lower: float | None, upper: float | None) -> Scan:
        return latency.then(keep_between, lower, upper)

    main = between(None, cuts[0] if cuts else None)
    main_count = extent_by(main)[0]
    median = float(percentiles_of_scan(main, (50.0,))[0])
    first, last, seen = 0, 0, False
    indices = tuple(c.index for c in result.categories if c.index >= 1)
    times: dict[int, list[np.ndarray]] = {index: [] for index in indices}
    for n, low, high, parts in engine.timed(path).map(spike_times, result, indices):
        if n:
            first, last = (min(first, low), max(last, high)) if seen else (low, high)
            seen = True
        for index, part in zip(indices, parts, strict=True):
            times[index].append(part)
    span_s = max(float(last - first), 1.0) / 1e9
    categories = []
    dropped = []
    for c in result.categories:
        if c.index < 1:
            continue
        if c.count < min_category:
            dropped.append(c.index)
            continue
        members = between(cuts[c.index - 1], cuts[c.index] if c.index < len(cuts) else None)
        durations = QuantileFunction.of_scan(members, points, lambda v: (v - median) * scale)
        gaps = np.diff(np.sort(np.concatenate(times[c.index]))).astype(np.float64)
        interarrival = (
            QuantileFunction.of(gaps, points) if gaps.size else QuantileFunction(np.array([span_s * 1e9]))
        )
        categories.append(SpikeCategory(c.index, durations, interarrival, c.count / span_s, c.count, c.share))
    source = _source(run, result, median, span_s, points, False, scale, min_category, dropped, main_count)
    return LatencyModel(QuantileFunction.of_scan(main, points), None, tuple(categories), source)


def _source(
    run: Run,
    result: StackedResult,
    median: float,
    span_s: float,
    points: int,
    kde: bool,
    scale: float,
    min_category: int,
    dropped: list[int],
    main_count: int,
) -> dict[str, Any]:
    return {
        "run": run.id,
        "label": run.label,
        "test": "stacked-z",
        "thresholds_ns": list(result.thresholds),
        "main_median_ns": median,
        "span_s": span_s,
        "points": points,
        "kde": kde,
        "scale": scale,
        "min_category": min_category,
        "dropped_categories": dropped,
        "main_count": main_count,
    }


def parametric_model(
    constant_ns: float | None = None,
    normal: tuple[float, float] | None = None,
    uniform: tuple[float, float] | None = None,
    sine: tuple[float, float, float] | None = None,
    spikes: list[tuple[float, float]] | None = None,
    points: int = DEFAULT_POINTS,
    seed: int = 0,
) -> LatencyModel:
    """A designed model: one base (constant, normal clipped at 0, uniform or St. Pierre et
    al.'s periodic sine) and spikes of given duration (ns) and rate (Hz) with exponential
    inter-arrival times (Poisson spikes)."""
    given = [b for b in (constant_ns, normal, uniform, sine) if b is not None]
    if len(given) != 1:
        raise JitterlabError("give exactly one base: --constant, --normal, --uniform or --sine")
    p = (np.arange(points) + 0.5) / points
    base: QuantileFunction | None = None
    if constant_ns is not None:
        base = QuantileFunction(np.array([float(constant_ns)]))
    elif normal is not None:
        base = QuantileFunction(np.clip(stats.norm.ppf(p, normal[0], normal[1]), 0, None))
    elif uniform is not None:
        base = QuantileFunction(uniform[0] + p * (uniform[1] - uniform[0]))
    categories = []
    for k, (duration, rate) in enumerate(spikes or [], start=1):
        if rate <= 0 or duration < 0:
            raise JitterlabError("--spikes needs a duration ≥ 0 and a rate > 0, e.g. 20ms@0.5")
        interarrival = QuantileFunction(stats.expon.ppf(p, scale=1e9 / rate))
        categories.append(
            SpikeCategory(k, QuantileFunction(np.array([duration])), interarrival, rate, 0, 0.0)
        )
    source = {
        "parametric": {
            "constant_ns": constant_ns,
            "normal_ns": normal,
            "uniform_ns": uniform,
            "sine_ns": sine,
            "spikes": [{"duration_ns": d, "rate_hz": r} for d, r in spikes or []],
        }
    }
    model = LatencyModel(base, sine, tuple(categories), source)
    validate(model_to_json(model), "parametric model")
    return model


class ReferenceSchedule:
    """The reference availability queue, one item at a time (see module docs): call
    ``available_at`` with each item's arrival time, in arrival order."""

    def __init__(self, model: LatencyModel, seed: int = 0, reorder: bool = False) -> None:
        self.model = model
        self.rng = np.random.default_rng(seed)
        self.reorder = reorder
        self.next_spike: list[float] | None = None
        self.previous = -math.inf

    def available_at(self, now: float) -> float:
        if self.next_spike is None:  # the first spike of each category: one drawn gap after the first item
            self.next_spike = [now + float(c.interarrival.draw(self.rng)) for c in self.model.categories]
        delay = self.model.base_delay(now, self.rng)
        for k, category in enumerate(self.model.categories):
            if now >= self.next_spike[k]:
                delay += float(category.duration.draw(self.rng))
                self.next_spike[k] = now + float(category.interarrival.draw(self.rng))
        available = now + delay
        if not self.reorder:
            available = max(
                available, self.previous
            )  # in-order drain: a spike holds back what queues behind it
        self.previous = available
        return available


def simulate_delays(
    model: LatencyModel, arrivals_ns: npt.ArrayLike, seed: int = 0, reorder: bool = False
) -> np.ndarray:
    """Delay the injector adds to each item arriving at ``arrivals_ns`` (see module docs)."""
    t = np.asarray(arrivals_ns, dtype=np.float64)
    schedule = ReferenceSchedule(model, seed, reorder)
    return np.array([schedule.available_at(now) - now for now in t.tolist()], dtype=np.float64)


REPLAY_RATE_FACTOR = 2.0  # a replay further than this from the run's rate is compared with it


def run_rate_hz(model: LatencyModel) -> float | None:
    """Items per second of the run a model was built from (None for a designed model)."""
    source = model.source
    span_s = source.get("span_s")
    if not isinstance(source.get("main_count"), int) or not _is_number(span_s) or span_s <= 0:
        return None
    items = source["main_count"] + sum(c.count for c in model.categories)
    return float(items / span_s) if items > 1 else None


@dataclass(frozen=True)
class ReplayShift:
    """How replaying a model at another rate than its run's changes the delays: the median
    and the share above ``threshold_ns`` (where the run's spikes start) at each rate."""

    run_rate_hz: float
    rate_hz: float
    threshold_ns: float
    median_run_ns: float
    median_ns: float
    share_run: float
    share: float

    def message(self) -> str:
        return (
            f"replaying at {_hz(self.rate_hz)} a model of a run at {_hz(self.run_rate_hz)} changes the "
            f"distribution (spikes come per time, not per item): median {format_ns(self.median_ns)} "
            f"against the run's {format_ns(self.median_run_ns)}, {_percent(self.share)} above "
            f"{format_ns(self.threshold_ns)} against the run's {_percent(self.share_run)}; "
            f"--rate {self.run_rate_hz:.6g} keeps the run's distribution"
        )


def _hz(rate: float) -> str:
    return f"{rate / 1000:.3g} kHz" if rate >= 1000 else f"{rate:.3g} Hz"


def _percent(share: float) -> str:
    return f"{100 * share:.2g} %"


def replay_shift(model: LatencyModel, rate_hz: float, delays: npt.ArrayLike) -> ReplayShift | None:
    """The figures that tell a user who replays ``model`` at ``rate_hz`` (``delays``: what the
    replay drew) that the delays are not distributed as in the model's run: the run's
    median and share of spikes (from the model) against the replay's. None when the model
    has no run (a designed model) or no spike category (then nothing depends on the rate),
    or when ``rate_hz`` is within a factor of :data:`REPLAY_RATE_FACTOR` of the run's rate."""
    own = run_rate_hz(model)
    thresholds = model.source.get("thresholds_ns") or []
    drawn = np.asarray(delays, dtype=np.float64)
    if own is None or not model.categories or not thresholds or not drawn.size:
        return None
    if 1 / REPLAY_RATE_FACTOR <= rate_hz / own <= REPLAY_RATE_FACTOR:
        return None
    threshold = float(thresholds[0])
    return ReplayShift(
        own,
        rate_hz,
        threshold,
        float(model.source.get("main_median_ns") or 0.0),
        float(percentiles(drawn, (50.0,))[0]),
        float(sum(c.share for c in model.categories)),
        float(np.mean(drawn > threshold)),
    )


def model_to_json(model: LatencyModel) -> dict[str, Any]:
    base: dict[str, Any]
    if model.sine is not None:
        base = {
            "kind": "sine",
            "mean_ns": model.sine[0],
            "amplitude_ns": model.sine[1],
            "period_ns": model.sine[2],
        }
    else:
        assert model.base is not None
        base = {"kind": "quantiles", "quantiles_ns": model.base.to_json()}
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "duration_definition": "excess over the main cluster's median",
        "quantile_points": "p = (i + 0.5) / n",
        "base": base,
        "categories": [
            {
                "category": c.index,
                "rate_hz": c.rate_hz,
                "count": c.count,
                "share": c.share,
                "duration_quantiles_ns": c.duration.to_json(),
                "interarrival_quantiles_ns": c.interarrival.to_json(),
            }
            for c in model.categories
        ],
        "source": model.source,
    }


def _is_number(value: Any) -> TypeGuard[float]:
    """A JSON number (bool is not one, as in nlohmann/json's is_number)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _quantiles(value: Any, what: str, where: str) -> np.ndarray:
    """The rules of the native reader (native/src/injector.cpp, ``quantiles``), in the same
    order, so Python and the engine accept and refuse the same files."""
    if not isinstance(value, list) or not value:
        raise JitterlabError(f"{where}: {what} must be a non-empty list of numbers")
    if len(value) > MAX_POINTS:
        raise JitterlabError(f"{where}: {what} has {len(value):,} points (at most {MAX_POINTS:,})")
    if not all(_is_number(v) for v in value):
        raise JitterlabError(f"{where}: {what} must be a list of numbers")
    q = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(q)):
        raise JitterlabError(f"{where}: {what} holds a value that is not finite")
    if np.any(q < 0):
        raise JitterlabError(f"{where}: {what} holds a negative value")
    if np.any(np.diff(q) < 0):
        raise JitterlabError(f"{where}: {what} is not monotone (quantiles must not decrease)")
    return q


def _optional(c: dict[str, Any], key: str, kind: type, default: Any, where: str) -> Any:
    value = c.get(key, default)
    ok = isinstance(value, kind) and not isinstance(value, bool) if kind is not float else _is_number(value)
    if not ok:
        raise JitterlabError(f"{where}: {key} must be {'an integer' if kind is int else 'a number'}")
    return value


def validate(doc: Any, where: str) -> LatencyModel:
    """A model from its JSON form, checked; every problem is a one-line JitterlabError."""
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise JitterlabError(f"{where}: not a jitterlab model (kind must be {KIND!r})")
    version = doc.get("schema_version")
    if not _is_number(version) or version != SCHEMA_VERSION:
        raise JitterlabError(f"{where}: schema_version {version!r} is not {SCHEMA_VERSION}")
    base = doc.get("base", {})
    if not isinstance(base, dict):
        base = {}
    sine = None
    base_q = None
    if base.get("kind") == "sine":
        values = [v for k in ("mean_ns", "amplitude_ns", "period_ns") if _is_number(v := base.get(k))]
        if len(values) != 3:
            raise JitterlabError(f"{where}: a sine base needs mean_ns, amplitude_ns and period_ns")
        sine = (float(values[0]), float(values[1]), float(values[2]))
        if not all(math.isfinite(v) for v in sine) or sine[0] < 0 or sine[2] <= 0:
            raise JitterlabError(f"{where}: a sine base needs mean_ns ≥ 0 and period_ns > 0")
    elif base.get("kind") == "quantiles":
        base_q = QuantileFunction(_quantiles(base.get("quantiles_ns"), "base.quantiles_ns", where))
    else:
        raise JitterlabError(f"{where}: base.kind must be 'quantiles' or 'sine'")
    listed = doc.get("categories", [])
    if not isinstance(listed, list):
        raise JitterlabError(f"{where}: categories must be a list")
    categories = []
    for n, c in enumerate(listed):
        label = f"categories[{n}]"
        if not isinstance(c, dict):
            raise JitterlabError(f"{where}: {label} must be an object")
        rate = c.get("rate_hz")
        if not _is_number(rate) or not math.isfinite(rate) or rate < 0:
            raise JitterlabError(f"{where}: {label}.rate_hz must be a number ≥ 0")
        duration = QuantileFunction(
            _quantiles(c.get("duration_quantiles_ns"), f"{label}.duration_quantiles_ns", where)
        )
        gaps = QuantileFunction(
            _quantiles(c.get("interarrival_quantiles_ns"), f"{label}.interarrival_quantiles_ns", where)
        )
        if gaps.values[-1] <= 0:
            raise JitterlabError(f"{where}: {label}.interarrival_quantiles_ns must not be all zero")
        if float(np.mean(gaps.values)) < MIN_MEAN_GAP_NS:
            raise JitterlabError(f"{where}: {label}.interarrival_quantiles_ns must average at least 1 us")
        categories.append(
            SpikeCategory(
                _optional(c, "category", int, n + 1, f"{where}: {label}"),
                duration,
                gaps,
                float(rate),
                _optional(c, "count", int, 0, f"{where}: {label}"),
                float(_optional(c, "share", float, 0.0, f"{where}: {label}")),
            )
        )
    source = doc.get("source", {})
    return LatencyModel(base_q, sine, tuple(categories), dict(source) if isinstance(source, dict) else {})


def load_model(path: Path) -> LatencyModel:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise JitterlabError(f"{path}: {path.stat().st_size:,} bytes is too large for a model file")
        doc = strict_json(path.read_bytes())
    except FileNotFoundError:
        raise JitterlabError(f"{path}: no such model file") from None
    except IsADirectoryError:
        raise JitterlabError(f"{path}: a folder, not a model file") from None
    except (ValueError, RecursionError) as e:
        raise JitterlabError(f"{path}: not JSON ({e})") from None
    return validate(doc, str(path))


# --- models described for people ------------------------------------------------------

MODEL_HEADERS = ["category", "rate (Hz)", "duration p50", "duration max", "inter-arrival p50", "spikes"]


def base_line(model: LatencyModel) -> str:
    """One line on the model's base delay."""
    if model.sine is not None:
        mean, amplitude, period = model.sine
        return f"base: sine, mean {format_ns(mean)}, amplitude {format_ns(amplitude)}, period {format_ns(period)}"
    assert model.base is not None
    q = model.base.values
    return (
        f"base: {q.size} quantiles, min {format_ns(q[0])}, median {format_ns(float(percentiles(q, (50.0,))[0]))}, "
        f"max {format_ns(q[-1])}"
    )


def category_rows(model: LatencyModel) -> list[list[str]]:
    """One row per spike category: rate, duration and inter-arrival medians, count."""
    rows = []
    for c in model.categories:
        d, g = c.duration.values, c.interarrival.values
        rows.append(
            [
                str(c.index),
                f"{c.rate_hz:.3g}",
                format_ns(float(percentiles(d, (50.0,))[0])),
                format_ns(d[-1]),
                format_ns(float(percentiles(g, (50.0,))[0])),
                f"{c.count:,}",
            ]
        )
    return rows


def parse_durations(text: str, count: int, flag: str) -> tuple[float, ...]:
    """``count`` comma-separated durations in ns (each with a unit; a bare number other than 0
    is refused: core.options.bare_number_rule)."""
    parts = [p for p in text.split(",") if p.strip()]
    if len(parts) != count:
        raise JitterlabError(f"{flag} expects {count} comma-separated durations, got '{text}'")
    return tuple(float(parse_duration_ns(p.strip(), "ms")) for p in parts)


def parse_spike(text: str) -> tuple[float, float]:
    """``DURATION@RATE_HZ`` (for example 20ms@0.5) as (duration ns, rate Hz)."""
    duration, _, rate = text.partition("@")
    try:
        return float(parse_duration_ns(duration, "ms")), float(rate)
    except ValueError:
        raise JitterlabError(f"--spikes expects DURATION@RATE_HZ such as 20ms@0.5, got '{text}'") from None

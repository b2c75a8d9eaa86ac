"""How well a proxy reproduced its model: validation on arrays (thesis ch. 6 §4).

The realised delays through the model's proxy are compared with what the model predicts on
top of the pass-through floor: each item's reference delay is a draw of the reference
simulation (:func:`jitterlab.simulate.model.simulate_delays`, at the probe's send times)
plus a pass-through sample, so the proxy's own cost is not counted twice. The distance is
the two-sample Kolmogorov–Smirnov statistic (scipy.stats.ks_2samp).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from jitterlab.simulate.model import LatencyModel, simulate_delays
from jitterlab.stats import percentiles
from jitterlab.store import Run


@dataclass(frozen=True)
class Validation:
    injected_ns: np.ndarray  # what the proxy added: release − arrival, as it recorded them
    injected_reference_ns: np.ndarray  # the reference simulation at the same arrival times
    realised_ns: np.ndarray  # end-to-end delay through the model's proxy
    reference_ns: np.ndarray  # model draw + pass-through sample, per item
    passthrough_ns: np.ndarray
    direct_ns: np.ndarray
    ks: float  # injected vs its reference
    ks_end_to_end: float
    quantile_error_ns: dict[str, float]  # injected − reference


def reference_delays(
    model: LatencyModel, send_times_ns: np.ndarray, passthrough_ns: np.ndarray, seed: int, reorder: bool
) -> np.ndarray:
    """What the model predicts end to end: the reference simulation at the same send times
    plus a pass-through delay drawn (seeded) from the measured pass-through run."""
    modelled = simulate_delays(model, send_times_ns, seed=seed + 1, reorder=reorder)
    floor = np.random.default_rng(seed).choice(passthrough_ns, size=modelled.size)
    return np.asarray(modelled + floor, dtype=np.float64)


def compare_to_model(
    model: LatencyModel,
    injected_run: Run,
    through: Run,
    passthrough: Run,
    direct: Run,
    seed: int,
    reorder: bool,
) -> Validation:
    """``injected_run``: the proxy's own record (arrival → release); ``through``, ``passthrough``
    and ``direct``: the probe's end-to-end runs through the model's proxy, a zero proxy, none."""
    injected = injected_run.latency_ns.astype(np.float64)
    injected_reference = simulate_delays(
        model, np.sort(injected_run.t_send_ns), seed=seed + 1, reorder=reorder
    )
    realised = through.latency_ns.astype(np.float64)
    floor = passthrough.latency_ns.astype(np.float64)
    reference = reference_delays(model, np.sort(through.t_send_ns), floor, seed, reorder)
    ps = (50.0, 90.0, 99.0, 99.9)
    difference = percentiles(injected, ps) - percentiles(injected_reference, ps)
    errors = {f"p{p:g}": float(d) for p, d in zip(ps, difference, strict=True)}
    return Validation(
        injected,
        injected_reference,
        realised,
        reference,
        floor,
        direct.latency_ns.astype(np.float64),
        float(stats.ks_2samp(injected, injected_reference).statistic),
        float(stats.ks_2samp(realised, reference).statistic),
        errors,
    )


KS_LIMIT = 0.05  # the injected delays' CDF within 5 percentage points of the model's everywhere


@dataclass(frozen=True)
class Reproduction:
    reproduced: bool
    floor_ns: float  # the proxy's own cost: pass-through median minus direct median
    model_p50_ns: float
    reason: str


def judge(v: Validation, busy_poll: bool) -> Reproduction:
    """Whether the proxy reproduced the model, against which floor, and why not.

    Reproduced: the two-sample KS distance between what the proxy injected and the
    reference simulation is at most ``KS_LIMIT``. A sleeping proxy cannot release a datagram
    sooner than it wakes up, so a model whose median delay is below twice the proxy's
    measured pass-through floor is named as the likely cause, with ``--busy-poll`` as the fix.
    """
    floor = float(np.median(v.passthrough_ns) - np.median(v.direct_ns))
    model_p50 = float(np.median(v.injected_reference_ns))
    errors = ", ".join(f"{k} {e / 1000:+.1f} µs" for k, e in v.quantile_error_ns.items())
    if v.ks <= KS_LIMIT:
        return Reproduction(
            True,
            floor,
            model_p50,
            f"KS {v.ks:.3f} ≤ {KS_LIMIT} (quantile errors {errors}); floor {floor / 1000:.1f} µs",
        )
    if model_p50 < 2 * floor and not busy_poll:
        why = (
            f"the model's median delay {model_p50 / 1000:.1f} µs is below twice the proxy's pass-through floor "
            f"{floor / 1000:.1f} µs: a sleeping proxy wakes too late for it; run again with --busy-poll"
        )
    else:
        why = f"the injected delays differ from the model (quantile errors {errors})"
    return Reproduction(False, floor, model_p50, f"KS {v.ks:.3f} > {KS_LIMIT}: {why}")

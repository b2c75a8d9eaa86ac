"""``monitor trials``: every trial of a stored monitor run with its screening verdict.

The baseline stored with the run (thresholds, outlier share, top cut) and the samples of
each trial go through :func:`jitterlab.stats.screen`, the same function ``describe
--baseline`` uses. A trial's samples are those its own writer recorded between its marks
(the samples file's ``trial`` column); runs stored before writers were told apart have rows
``first_seq`` to ``end_seq`` instead."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.units import format_ns
from jitterlab.stats import Baseline, Verdict, screen
from jitterlab.store import Run


@dataclass(frozen=True)
class TrialResult:
    tag: str
    writer: str
    t_begin_ns: int
    t_end_ns: int | None
    verdict: Verdict


def stored_baseline(run: Run) -> Baseline:
    block = run.meta.get("monitor")
    if not isinstance(block, dict):
        raise JitterlabError(f"run {run.id} is not a monitor run (no 'monitor' block)")
    if not block.get("thresholds_ns"):
        raise JitterlabError(f"run {run.id} was served without a baseline: its trials cannot be screened")
    return Baseline(
        tuple(float(t) for t in block["thresholds_ns"]),
        float(block["baseline_outlier_share"]),
        float(block["top_cut_ns"]),
        int(block["baseline_samples"]),
    )


def trial_latencies(run: Run, index: int) -> np.ndarray:
    """The latencies of trial ``index`` of a monitor run (its writer's samples only)."""
    trial = run.meta["monitor"]["trials"][index]
    if "trial" in (run.meta.get("samples") or {}).get("columns", []):
        selected: np.ndarray = run.latency_ns[run.column("trial") == index]
        return selected
    end = trial.get("end_seq")
    return run.latency_ns[int(trial["first_seq"]) : int(end) if end is not None else None]


def tag_latencies(run: Run, tag: str) -> np.ndarray:
    """Every sample of the trials tagged ``tag`` (of whichever writer), in trial order."""
    indexes = [i for i, t in enumerate(run.meta["monitor"]["trials"]) if t["tag"] == tag]
    return np.concatenate([trial_latencies(run, i) for i in indexes])


def trial_results(run: Run) -> list[TrialResult]:
    baseline = stored_baseline(run)
    alpha = float(run.meta["monitor"].get("alpha", 0.01))
    out = []
    for index, trial in enumerate(run.meta["monitor"].get("trials") or []):
        values = trial_latencies(run, index)
        out.append(
            TrialResult(
                str(trial["tag"]),
                str(trial.get("writer", "")),
                int(trial["t_begin_ns"]),
                trial.get("t_end_ns"),
                screen(values, baseline, alpha),
            )
        )
    return out


HEADERS = ["trial", "writer", "samples", "outlier share", "by category", "max", "verdict", "reason"]


def results_json(results: list[TrialResult]) -> list[dict[str, Any]]:
    """``monitor trials --json`` (docs/schemas/monitor-trials.schema.json): per trial its
    tag, writer, span and screening verdict."""
    return [
        {"trial": r.tag, "writer": r.writer, "t_begin_ns": r.t_begin_ns, "t_end_ns": r.t_end_ns}
        | r.verdict.to_dict()
        for r in results
    ]


def rows(results: list[TrialResult]) -> list[list[Any]]:
    return [
        [
            r.tag,
            r.writer,
            r.verdict.samples,
            f"{r.verdict.share:.2%}",
            "/".join(str(c) for c in r.verdict.category_counts),
            format_ns(r.verdict.max_value),
            "CONTAMINATED" if r.verdict.contaminated else "clean",
            r.verdict.reason,
        ]
        for r in results
    ]

"""How a motion-to-photon result becomes a run: the blocks of an analysed file (it was not
measured on this machine, so no environment or doctor block) and an ``mtp`` block."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.store.runs import ResultsStore, Run
from jitterlab.store.schema import run_meta, safe_id_part


def store_latencies(
    store: ResultsStore,
    *,
    name: str,
    technique: str,
    source: Path,
    source_format: str,
    t_send_ns: np.ndarray,
    t_recv_ns: np.ndarray,
    warnings: list[dict[str, str]],
    mtp: dict[str, Any],
    variant: str | None = None,
    partial_reason: str = "",
) -> Run:
    """A run of latencies computed here; ``partial_reason`` marks one that covers only part
    of its input (a video cut short)."""
    meta = run_meta(
        store.new_run_id("mtp", safe_id_part(name)),
        dt.datetime.now(dt.timezone.utc),
        environment=None,
        doctor=None,
        config={
            "runtime": "mtp",
            "technique": technique,
            "variant": variant,
            "pairs": 1,
            "policy": "n/a",
            "source": str(source.resolve()),
            "source_format": source_format,
            "samples": len(t_recv_ns),
        },
        obtained={"warnings": warnings},
        floor={},
        timing={"t_start_ns": int(t_recv_ns[0]), "t_end_ns": int(t_recv_ns[-1])},
        mtp=mtp,
    )
    if partial_reason:
        meta["status"], meta["partial_reason"] = "partial", partial_reason
    return store.commit_latencies(meta, t_send_ns, t_recv_ns, partial=bool(partial_reason))

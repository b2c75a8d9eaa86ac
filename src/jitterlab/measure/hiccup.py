"""`jitterlab hiccup`: the per-CPU OS-noise meter, stored as a run.

Each sample of a hiccup run is one interruption: ``pair`` is the CPU, ``t_send_ns`` and
``t_recv_ns`` the last clock read before the gap and the first after it, so
``latency_ns`` is the gap's duration and describe, report and models read it like any
other run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jitterlab.measure.jobs import NativeJob, policy_args


@dataclass(frozen=True)
class HiccupOptions:
    duration_ns: int = 10_000_000_000
    cpus: str = "all"
    threshold_ns: int = 0  # 0: automatic
    auto_multiple: int = 10
    policy: str = "other"
    priority: int = 0
    mlock: bool = True


def hiccup_job(o: HiccupOptions) -> NativeJob:
    args = [
        "--duration-ns",
        str(o.duration_ns),
        "--cpus",
        o.cpus,
        "--threshold-ns",
        str(o.threshold_ns),
        "--auto-multiple",
        str(o.auto_multiple),
        *policy_args(o.policy, o.priority, o.mlock),
    ]
    config = {
        "runtime": "native",
        "technique": "hiccup",
        "pairs": None,
        "cpus": o.cpus,
        "duration_ns": o.duration_ns,
        "threshold_ns": o.threshold_ns or "auto",
        "auto_multiple": o.auto_multiple,
        "policy": o.policy,
        "priority": o.priority,
        "mlock": o.mlock,
    }

    def extra(harness: dict[str, Any]) -> dict[str, Any]:
        measured = {"pairs": len(harness.get("per_cpu", []))}  # one "pair" per measured CPU
        return {
            "config": config | measured,
            "hiccup": {
                k: harness.get(k)
                for k in (
                    "threshold_ns",
                    "threshold_mode",
                    "calibration_min_gap_ns",
                    "duration_ns",
                    "max_gaps",
                    "per_cpu",
                )
            },
        }

    return NativeJob(
        program="jitterlab-hiccup",
        args=args,
        config=config,
        id_parts=("hiccup", o.policy),
        label=f"hiccup {o.cpus}",
        total=o.duration_ns,
        progress_unit="s",
        extra_meta=extra,
        # every gap is a spike, and the "pair" column is the CPU it happened on
        spike_cpus=lambda _meta: {"spike_cpu": {"available": True, "from": "pair"}, "spikes": "all"},
    )

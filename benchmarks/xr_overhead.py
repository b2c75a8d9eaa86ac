"""OpenXR layer overhead: what XR_APILAYER_JITTERLAB_latency adds to each call (issue 40 item 5).

The test application (``jitterlab-xr-testapp``) runs frames against the headless test runtime
through the Khronos loader twice per repeat, with and without the layer (no other layer), and
times every call with CLOCK_MONOTONIC: ``xrLocateViews``, ``xrLocateSpace`` (the VIEW space)
and a frame's ``xrWaitFrame`` + ``xrBeginFrame`` + ``xrEndFrame``. The runtime's display period
is 20 µs and its ``xrWaitFrame`` does not sleep (``JL_XR_TEST_NO_SLEEP``), so the frame calls
time the call path, not a wait; the model is a constant 60 µs, so the layer interpolates about
3 history entries back, as at 90 Hz with ~30 ms.
The layer writes its rings with no server draining them (a full ring counts a drop: the same
cost as a recorded sample). Added cost = (with layer) − (without) at p50 and p99, median of
the repeats.

Targets: ≤ 1 µs added at p99 per xrLocateViews / xrLocateSpace, ≤ 5 µs per frame.

Usage: python benchmarks/xr_overhead.py [--frames 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from jitterlab.core.programs import PACKAGE_ROOT, native_program
from jitterlab.xr import LAYER_NAME, layer_dir

COLUMNS = {"xrLocateViews": 4, "xrLocateSpace": 5, "frame (wait+begin+end)": 6}
TARGET_NS = {"xrLocateViews": 1000.0, "xrLocateSpace": 1000.0, "frame (wait+begin+end)": 5000.0}


def run(frames: int, layer: bool, tmp: Path) -> dict[str, np.ndarray]:
    env = {
        **os.environ,
        "XR_RUNTIME_JSON": str(
            PACKAGE_ROOT / "lib" / "openxr" / "runtime" / "jitterlab_xr_test_runtime.json"
        ),
        "JL_XR_TEST_PERIOD_NS": "20000",
        "JL_XR_TEST_NO_SLEEP": "1",
        "XR_API_LAYER_PATH": str(layer_dir()),
        "XR_ENABLE_API_LAYERS": LAYER_NAME if layer else "",
        "JITTERLAB_XR_CONFIG": str(tmp / "xr.toml"),
    }
    out = subprocess.run(
        [str(native_program("jitterlab-xr-testapp")), "--frames", str(frames)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.split(",") for line in out.splitlines()[1:]]
    skip = min(1000, frames // 10)  # warm-up: page faults of the rings and histories
    return {name: np.array([float(r[c]) for r in rows[skip:]]) for name, c in COLUMNS.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        channel = f"xr-bench-{os.getpid()}"
        (tmp / "model.json").write_text(
            json.dumps(
                {
                    "kind": "jitterlab.model",
                    "schema_version": 1,
                    "base": {"kind": "quantiles", "quantiles_ns": [60_000]},
                    "categories": [],
                }
            )
        )
        (tmp / "xr.toml").write_text(
            f'seed = 1\n[head]\nmodel = "model.json"\nchannel = "{channel}"\n'
            f'[frames]\nchannel_prefix = "{channel}"\n'
        )
        added: dict[str, list[tuple[float, float]]] = {name: [] for name in COLUMNS}
        base: dict[str, list[tuple[float, float]]] = {name: [] for name in COLUMNS}
        try:
            for _ in range(args.repeats):
                without = run(args.frames, False, tmp)
                with_ = run(args.frames, True, tmp)
                for name in COLUMNS:
                    p_without = np.percentile(without[name], [50, 99])
                    p_with = np.percentile(with_[name], [50, 99])
                    base[name].append((float(p_without[0]), float(p_without[1])))
                    added[name].append((float(p_with[0] - p_without[0]), float(p_with[1] - p_without[1])))
        finally:
            from jitterlab.monitor.recorder import unlink

            for suffix in ("", ".frame-interval", ".frame-time", ".pose-age"):
                unlink(channel + suffix)
    print(
        f"{'call':<24} {'without p50':>12} {'without p99':>12} {'added p50':>10} {'added p99':>10}"
        f" {'p99 range':>14}  target"
    )
    for name in COLUMNS:
        b50, b99 = np.median([b[0] for b in base[name]]), np.median([b[1] for b in base[name]])
        a50, a99 = np.median([a[0] for a in added[name]]), np.median([a[1] for a in added[name]])
        verdict = "met" if a99 <= TARGET_NS[name] else "MISSED"
        print(
            f"{name:<24} {b50:>10.0f}ns {b99:>10.0f}ns {a50:>8.0f}ns {a99:>8.0f}ns"
            f" {min(a[1] for a in added[name]):>6.0f}–{max(a[1] for a in added[name]):<5.0f}ns"
            f"  p99 ≤ {TARGET_NS[name]:.0f} ns: {verdict}"
        )
    print(
        f"({args.frames} frames × {args.repeats} repeats, medians of the repeats; range: added p99 over the repeats)"
    )


if __name__ == "__main__":
    main()

"""Motion-to-photon analysis speed: decoding every frame once against the old two passes.

``mtp analyze`` used to decode each video twice: a sampling pass over the whole file (to
find the regions and backgrounds), then a tracking pass (issue 27 item 4). It now decodes
once: the first seconds are kept to find the regions, then every frame is tracked as it is
decoded (docs/mtp.md, "Decoding once").

Contenders, side by side on the same files in one run (their order alternates per repeat,
so both see the same noise of a shared machine):

- ``once``: ``mtp analyze`` as it ships (one decoding pass; the JSON says so);
- ``twice``: the old cost, an analysis preceded by a full decoding pass of the same file
  (what the sampling pass cost: decoding is the bulk of it, the sampled frames are few).

Files: 640×480 at 240 fps, an ordinary one (libx264 CRF 18) and a phone-like one (noise
σ = 6, CABAC and B-frames through ``--preset medium``, a 12 Mbit/s bitrate target: the
decoder's worst case among the validation's files). Prints per file the frames/s of each
contender (median of the repeats and range), the ratio twice/once, and the whole process
tree's peak memory of ``jitterlab mtp analyze`` on the phone-like file.

Target: ≥ 300 frames/s analysed at 640×480 (docs/mtp.md).

Usage: python benchmarks/mtp_speed.py [--quick] [--repeats N] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from jitterlab.mtp import analyze, synth, video
from treemem import median_range, run_measured

TARGET_FPS = 300.0


def files(quick: bool) -> dict[str, synth.SynthSpec]:
    base = synth.SynthSpec(
        width=640, height=480, fps=240.0, latency_s=0.0333, duration_s=4.0 if quick else 10.0, seed=130
    )
    return {
        "CRF 18": base,
        "phone-like 12 Mbit/s": dataclasses.replace(base, noise=6.0, preset="medium", bitrate_kbps=12_000),
    }


def once(path: Path) -> tuple[float, int, int]:
    """(seconds, frames, decoding passes) of one analysis as it ships."""
    started = time.perf_counter()
    result = analyze.analyze(path, analyze.AnalyzeOptions())
    seconds = time.perf_counter() - started
    return seconds, len(result.times), 2 if result.second_pass else 1


def twice(path: Path) -> tuple[float, int, int]:
    """The old cost: a full decoding pass, then the analysis."""
    started = time.perf_counter()
    for _ in video.frames(path):
        pass
    result = analyze.analyze(path, analyze.AnalyzeOptions())
    seconds = time.perf_counter() - started
    return seconds, len(result.times), 1 + (2 if result.second_pass else 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 s files instead of 10 s")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON object of the figures")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    folder = Path(tempfile.mkdtemp(prefix="mtp-speed-"))
    figures: dict[str, float] = {}
    lines = []
    try:
        for label, spec in files(args.quick).items():
            path = folder / f"{label.split()[0]}.mp4"
            synth.write_video(path, spec)
            speeds: dict[str, list[float]] = {"once": [], "twice": []}
            passes: dict[str, int] = {}
            ratios = []
            for k in range(args.repeats):
                order = [("once", once), ("twice", twice)]
                seconds = {}
                for name, contender in order if k % 2 == 0 else order[::-1]:
                    s, n, p = contender(path)
                    seconds[name] = s
                    speeds[name].append(n / s)
                    passes[name] = p
                ratios.append(seconds["twice"] / seconds["once"])
            key = "phone" if label.startswith("phone") else "crf18"
            for name, values in speeds.items():
                med, lo, hi = median_range(values)
                figures[f"{key}_{name}_frames_per_s"] = med
                lines.append(
                    f"{label}, {name} (each frame decoded {passes[name]}×): {med:.0f} frames/s "
                    f"(median of {args.repeats}, range {lo:.0f}–{hi:.0f})"
                )
            med, lo, hi = median_range(ratios)
            figures[f"{key}_ratio_twice_over_once"] = med
            lines.append(f"{label}: time twice/once {med:.2f}× (range {lo:.2f}–{hi:.2f})")
        phone = folder / "phone-like.mp4"
        env = {**os.environ, "JITTERLAB_STORE": str(folder / "store")}
        cmd = [str(Path(sys.executable).with_name("jitterlab")), "mtp", "analyze", str(phone), "--no-store"]
        if not Path(cmd[0]).exists():
            cmd = [sys.executable, "-m", "jitterlab", *cmd[1:]]
        peaks = []
        for _ in range(args.repeats):
            m = run_measured(cmd, env=env)
            if m.returncode != 0:
                print(f"mtp analyze failed ({m.returncode}): {m.stderr.strip()}", file=sys.stderr)
                return 1
            peaks.append(m.peak_tree_rss_bytes / 2**20)
        med, lo, hi = median_range(peaks)
        figures["phone_peak_tree_rss_mib"] = med
        lines.append(
            f"peak memory of mtp analyze (phone-like, whole process tree): {med:.0f} MiB (range {lo:.0f}–{hi:.0f})"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    worst = min(figures["crf18_once_frames_per_s"], figures["phone_once_frames_per_s"])
    met = worst >= TARGET_FPS
    lines.append(
        f"{'met   ' if met else 'MISSED'} ≥ {TARGET_FPS:.0f} frames/s analysed at 640x480: slowest file {worst:.0f}"
    )
    if args.json:
        print(json.dumps(figures))
    else:
        print("\n".join(lines))
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())

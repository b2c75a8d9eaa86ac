"""Motion-to-photon accuracy: ``jitterlab mtp validate``'s matrix of synthetic videos,
with every estimator's error side by side.

Contenders: the three estimators of ``mtp analyze`` on the same tracked signals: the
thesis' separate damped-sine fits (seed 003 §4.2, with amplitude and offset added),
the joint fit with an explicit delay, and the overlap-normalised cross-correlation (the
headline); the KCF tracker (the thesis' choice) beside the centroid tracker. The thesis
reports an average error of 2.5 ms on its synthetic videos: the figure to beat by ten times.

Prints the case table, then per target group and estimator the mean and max |error|,
frames analysed per second, and the targets (docs/mtp.md): centroid mean ≤ 0.1 ms and
max ≤ 0.25 ms at 60 and 240 fps; KCF ≤ 1 ms; harmonic, VFR and gap ≤ 0.5 ms; ≥ 300
frames/s at 640×480.

Usage: python benchmarks/mtp_accuracy.py [--quick] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from jitterlab.core.render import render
from jitterlab.mtp import validate
from jitterlab.mtp.estimate import ESTIMATORS, HEADLINE

THESIS_ERROR_MS = 2.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    started = time.monotonic()
    outcomes = validate.run(args.quick, args.keep, progress=lambda line: print(line, file=sys.stderr))
    print("errors in ms (analysed − truth):")
    print(render(validate.HEADERS, validate.rows(outcomes), "llrrrrrrl"))
    rows = []
    for group in sorted({o.case.group for o in outcomes}):
        chosen = [o for o in outcomes if o.case.group == group and o.errors_ms]  # not the refused
        if not chosen:
            continue
        for name in ESTIMATORS:
            errors = np.abs([o.errors_ms[name] for o in chosen])
            rows.append(
                [
                    group,
                    name + (" (headline)" if name == HEADLINE else ""),
                    len(chosen),
                    f"{errors.mean():.4f}",
                    f"{errors.max():.4f}",
                ]
            )
    print()
    print(render(["group", "estimator", "cases", "mean |err| ms", "max |err| ms"], rows, "llrrr"))
    headline = np.abs(
        [
            o.errors_ms[HEADLINE]
            for o in outcomes
            if o.case.group in ("centroid", "hard", "hold+blur", "kcf") and o.errors_ms
        ]
    )
    print(
        f"\nheadline over all targeted cases: mean |error| {headline.mean():.4f} ms, "
        f"{THESIS_ERROR_MS / headline.mean():.0f}× below the thesis' {THESIS_ERROR_MS} ms"
    )
    speeds = [
        o.frames_per_second
        for o in outcomes
        if o.case.spec.fps >= 240 and o.case.group == "centroid" and o.errors_ms
    ]
    if speeds:
        print(
            f"frames analysed per second at {outcomes[-1].case.spec.width}x{outcomes[-1].case.spec.height}, 240 fps videos: {min(speeds):.0f} (min), {np.mean(speeds):.0f} (mean)"
        )
    verdicts = validate.verdicts(outcomes, args.quick)
    for met, line in verdicts:
        print(f"{'met   ' if met else 'MISSED'} {line}")
    print(f"({time.monotonic() - started:.0f} s in all, synthesis included)")
    return 0 if all(met for met, _ in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())

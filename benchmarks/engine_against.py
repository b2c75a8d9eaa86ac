"""Side by side against the code before (issue 37's "same speed or better"): the analysis
commands of this tree and of an older revision on the same generated files.

The older revision's Python package is taken from git (``git archive REV src/jitterlab``, as
benchmarks/report_speed.py does; the default REV is 3dbcc49, main before issue 37's
redesign) into a temporary folder; both trees use this checkout's C++ core (its
``bin``/``lib``), unless ``--then-native PKG`` names the package folder of REV's own build.
Both run as their own processes with their ``src`` first on PYTHONPATH, alternately
(then, now, then, now, …), so a load that changes meanwhile weighs on both alike.

The files, made once by this tree's store code:

- two runs of ``--samples`` samples (benchmarks/scale.py's generator: 16 pairs, a
  heavy-tailed mixture, fixed seeds), for ``show --json`` (stored summary, the file
  checked), ``show --recompute --percentiles 50,99,99.9,99.99 --json``, ``describe --json``,
  ``compare --json`` of the two and ``export --format hgrm``;
- a store of ``--runs`` runs of ``--report-samples`` samples per pair shaped like the main
  job's (benchmarks/report_speed.py's), for ``report`` of every run;
- with ``--cluster N``: ``describe --cluster local:N`` as well.

Printed per command: the median wall seconds of each tree with the range, the peak RSS of
the whole process tree (benchmarks/treemem.py), the ratio now/then (below 1: faster now),
and whether the two printed the same answer (JSON without its context block; hgrm as text;
report not compared: tests/golden/test_golden.py compares its numbers).

Usage: python benchmarks/engine_against.py [--against REV] [--samples 1000000] [--runs 8]
       [--report-samples 20000] [--repeats 3] [--cluster N] [--then-native PKG]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from report_speed import extract_before, make_store
from scale import generate
from treemem import median_range, run_measured

REPO = Path(__file__).resolve().parents[1]
BEFORE = "3dbcc49"
LEVELS = "50,99,99.9,99.99"


def old_tree(rev: str, folder: Path, native: Path | None) -> Path:
    """REV's ``src`` folder, with a C++ core beside its package (this checkout's unless
    ``native``)."""
    src = extract_before(rev, folder)
    installed = native or Path(__import__("jitterlab").__file__).resolve().parent
    for name in ("bin", "lib", "include"):
        if (installed / name).exists():
            (src / "jitterlab" / name).symlink_to((installed / name).resolve())
    return src


def same_answer(then: str, now: str, form: str) -> str:
    """yes / NO / - (not compared)."""
    if form == "none":
        return "-"
    if form == "json":

        def strip(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: strip(v) for k, v in value.items() if k != "context"}
            if isinstance(value, list):
                return [strip(v) for v in value]
            return value

        return "yes" if strip(json.loads(then)) == strip(json.loads(now)) else "NO"
    return "yes" if then == now else "NO"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default=BEFORE, metavar="REV", help=f"the older revision ({BEFORE})")
    parser.add_argument("--samples", type=int, default=1_000_000, help="samples of each run (10⁶)")
    parser.add_argument(
        "--runs", type=int, default=8, help="runs in the report's store (8; the main job: 28)"
    )
    parser.add_argument(
        "--report-samples", type=int, default=20_000, help="samples per pair of those (20 000)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cluster", type=int, default=0, metavar="N", help="also describe on local:N")
    parser.add_argument("--then-native", type=Path, default=None, metavar="PKG", help="REV's built package")
    args = parser.parse_args()
    if args.repeats < 1 or args.samples < 1 or args.runs < 1:
        parser.error("--repeats, --samples and --runs must be positive")

    root = Path(tempfile.mkdtemp(prefix="engine-against-"))
    try:
        then_src = old_tree(args.against, root / "then", args.then_native)
        now_src = REPO / "src"
        store, reports = root / "store", root / "reports"
        print(
            f"making two runs of {args.samples:,} samples and {args.runs} runs for report…", file=sys.stderr
        )
        a, b = generate(store, args.samples, seed=2025), generate(store, args.samples, seed=2026)
        make_store(reports, args.runs, args.report_samples)
        out = root / "out"
        s = ["--store", str(store)]
        commands: list[tuple[str, list[str], str]] = [
            ("show", ["show", a, "--json", *s], "json"),
            ("show --recompute", ["show", a, "--recompute", "--percentiles", LEVELS, "--json", *s], "json"),
            ("describe", ["describe", a, "--json", *s], "json"),
            ("compare", ["compare", a, b, "--json", *s], "json"),
            ("export hgrm", ["export", a, "--format", "hgrm", "-o", "-", *s], "text"),
            (f"report ({args.runs} runs)", ["report", "--store", str(reports), "-o", str(out)], "none"),
        ]
        if args.cluster:
            cluster = ["describe", a, "--json", "--cluster", f"local:{args.cluster}", *s]
            commands.append((f"describe --cluster local:{args.cluster}", cluster, "json"))
        base = {k: v for k, v in os.environ.items() if k not in ("JITTERLAB_STORE", "JITTERLAB_NATIVE_DIR")}
        env = {"then": base | {"PYTHONPATH": str(then_src)}, "now": base | {"PYTHONPATH": str(now_src)}}
        print(f"this tree ({now_src}) against {args.against}, alternately, {args.repeats} repeats")
        print(
            f"samples {args.samples:,} per run; report: {args.runs} runs of {args.report_samples:,} per pair"
        )
        print(f"load before: {Path('/proc/loadavg').read_text().split()[0]}")
        print(
            f"{'command':<30}{'then s':>9}{'range':>16}{'now s':>9}{'range':>16}{'then MB':>9}{'now MB':>8}"
        )
        for name, cmd, form in commands:
            seconds: dict[str, list[float]] = {"then": [], "now": []}
            peak: dict[str, float] = {"then": 0.0, "now": 0.0}
            printed: dict[str, str] = {}
            for _ in range(args.repeats):
                for side in ("then", "now"):
                    m = run_measured([sys.executable, "-m", "jitterlab", *cmd], env=env[side], interval=0.01)
                    if m.returncode != 0:
                        print(f"{name}: {side} failed ({m.returncode}): {m.stderr.strip()[-300:]}")
                        return 1
                    seconds[side].append(m.seconds)
                    peak[side] = max(peak[side], m.peak_tree_rss_bytes / 1e6)
                    printed[side] = m.stdout
            (t, t_lo, t_hi), (n, n_lo, n_hi) = (median_range(seconds[k]) for k in ("then", "now"))
            print(
                f"{name:<30}{t:>9.3f}{f'{t_lo:.3f} – {t_hi:.3f}':>16}{n:>9.3f}{f'{n_lo:.3f} – {n_hi:.3f}':>16}"
                f"{peak['then']:>9.0f}{peak['now']:>8.0f}"
            )
            answer = same_answer(printed["then"], printed["now"], form)
            print(
                f"  {name}: now/then {n / t:.2f}× time, {peak['now'] / peak['then']:.2f}× memory; same answer {answer}"
            )
        print(f"load after: {Path('/proc/loadavg').read_text().split()[0]}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

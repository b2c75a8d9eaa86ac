"""Start-up: `jitterlab --version`, `--help`, `runs` on an empty and a small store, and `net topo` (issue 28 item 3).

Each command runs --repeats times (default 5) in a fresh process; the figures are the median
wall time with its range and the peak RSS of the whole process tree (benchmarks/treemem.py).
Targets: ≤ 0.25 s and ≤ 60 MB each. A bare `python -c pass` runs beside them as the floor.

`net topo up/down` need root and create or remove network namespaces, so the benchmark
measures what they load instead: `net topo --help` builds the same parser and imports the
same modules as `net topo up` (tests/cli/test_startup.py checks neither imports numpy,
pandas, pyarrow, scipy or matplotlib), and `net topo list` runs the topo command itself
without side effects (it reads the topologies' state files and `ip netns list`).

The small store holds SMALL_RUNS runs of 1,000 samples each, stored by `jitterlab import` of a
CSV made with a fixed seed.

With --help-pages it also measures the ``--help`` of every measuring and describing command
(bench, hiccup, monitor serve, repl bench, inject, mtp analyze, model build, describe, report):
a page of help imports the command's parser, not its room (numpy, pandas, pyarrow, scipy,
matplotlib come when the command runs; tests/cli/test_startup.py checks every page).

With --against SRC every command also runs side by side with an older jitterlab: SRC is the
``src`` folder of another revision (``git archive REV src/jitterlab | tar -x -C /tmp/old``,
then ``--against /tmp/old/src``), put first on PYTHONPATH; the two run alternately, so a
machine whose load changes meanwhile weighs on both alike, and the table gives each one's
median wall time and peak RSS and the ratio.

Usage: python benchmarks/startup.py [--repeats 5] [--quick] [--help-pages] [--against SRC]
(--quick: 3 repeats)
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from treemem import median_range, run_measured

TARGET_S, TARGET_MB = 0.25, 60.0
SMALL_RUNS = 5
HELP_PAGES = (
    "bench",
    "hiccup",
    "monitor serve",
    "repl bench",
    "inject",
    "mtp analyze",
    "model build",
    "describe",
    "report",
)


def small_store(folder: Path) -> Path:
    """A store of SMALL_RUNS imported runs (1,000 samples each, seed 1)."""
    rng = random.Random(1)
    csv = folder / "latencies.csv"
    csv.write_text("latency_ns\n" + "".join(f"{rng.randint(1_000, 90_000)}\n" for _ in range(1_000)))
    store = folder / "small"
    for _ in range(SMALL_RUNS):
        cmd = [sys.executable, "-m", "jitterlab", "import", str(csv), "--store", str(store)]
        subprocess.run(cmd, check=True, capture_output=True)
    return store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="3 repeats")
    parser.add_argument(
        "--help-pages", action="store_true", help="also each measuring/describing command's --help"
    )
    parser.add_argument("--against", type=Path, metavar="SRC", help="an older revision's src/, side by side")
    args = parser.parse_args()
    repeats = 3 if args.quick else args.repeats
    jitterlab = [sys.executable, "-m", "jitterlab"]
    missed = []
    with tempfile.TemporaryDirectory() as empty:
        commands = {
            "python -c pass (floor)": [sys.executable, "-c", "pass"],
            "jitterlab --version": [*jitterlab, "--version"],
            "jitterlab --help": [*jitterlab, "--help"],
            "jitterlab runs (empty store)": [*jitterlab, "runs", "--store", str(Path(empty) / "store")],
            "jitterlab net topo --help": [*jitterlab, "net", "topo", "--help"],
            "jitterlab net topo list": [*jitterlab, "net", "topo", "list"],
            f"jitterlab runs ({SMALL_RUNS} runs)": [
                *jitterlab,
                "runs",
                "--store",
                str(small_store(Path(empty))),
            ],
        }
        if args.help_pages:
            commands |= {
                f"jitterlab {page} --help": [*jitterlab, *page.split(), "--help"] for page in HELP_PAGES
            }
        print(
            f"{'command':<30}{'median s':>10}{'range s':>16}{'peak MB':>10}  target ≤ {TARGET_S} s, ≤ {TARGET_MB:.0f} MB"
        )
        for name, cmd in commands.items():
            runs = [run_measured(cmd, interval=0.005) for _ in range(repeats)]
            if any(r.returncode != 0 for r in runs):
                print(f"{name}: failed: {runs[0].stderr.strip()}", file=sys.stderr)
                return 2
            med, lo, hi = median_range([r.seconds for r in runs])
            peak = max(r.peak_tree_rss_bytes for r in runs) / 1e6
            verdict = ""
            if "floor" not in name:
                met = med <= TARGET_S and peak <= TARGET_MB
                verdict = "met" if met else "MISSED"
                missed += [] if met else [name]
            print(f"{name:<30}{med:>10.3f}{f'{lo:.3f} – {hi:.3f}':>16}{peak:>10.0f}  {verdict}")
        if args.against:
            side_by_side(commands, args.against, repeats)
    print("all targets met" if not missed else "MISSED: " + "; ".join(missed))
    return 0 if not missed else 1


def side_by_side(commands: dict[str, list[str]], against: Path, repeats: int) -> None:
    """Each command with this jitterlab and with the one under ``against``, alternately."""
    old_env = os.environ | {"PYTHONPATH": str(against.resolve())}
    print(f"\nside by side, alternately: this tree against {against}")
    print(f"{'command':<30}{'then s':>10}{'now s':>10}{'now/then':>10}{'then MB':>9}{'now MB':>8}")
    for name, cmd in commands.items():
        then, now = [], []
        for _ in range(repeats):
            then.append(run_measured(cmd, env=old_env, interval=0.005))
            now.append(run_measured(cmd, interval=0.005))
        t, n = (median_range([r.seconds for r in rs])[0] for rs in (then, now))
        mb_then, mb_now = (max(r.peak_tree_rss_bytes for r in rs) / 1e6 for rs in (then, now))
        print(f"{name:<30}{t:>10.3f}{n:>10.3f}{n / t:>10.2f}{mb_then:>9.0f}{mb_now:>8.0f}")


if __name__ == "__main__":
    raise SystemExit(main())

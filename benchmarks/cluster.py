"""Cluster overhead: `jitterlab show`, `show --recompute`, `describe` (and `report`) of one stored run on a local Dask
cluster of 2 worker processes against the single-process path, side by side, in one run
(issue 25 item 5).

The run is generated as ``benchmarks/scale.py`` generates it (16 pairs, the heavy-tailed
mixture, bounded memory), 10⁷ samples by default. Three ways, each a fresh process
(``benchmarks/treemem.py``: wall time and the peak RSS of the whole process tree),
interleaved repeat by repeat so that a noisy neighbour hits all three alike:

- ``alone``: ``jitterlab show|describe RUN --json`` (``show-recompute``: ``show --recompute``,
  the summary read from the samples again; ``report``: ``report RUN -o FILE``, its page compared
  without the minute it was generated in, every way under ``JITTERLAB_MEMORY_LIMIT_MB=1`` so
  that the single-process report takes the row-group path the cluster's takes, as it does
  above 2^24 samples anyway; not run unless asked), the single-process path;
- ``local:2``: ``--cluster local:2``: the command starts a scheduler and 2 worker
  processes, runs its passes on them, stops them (the worker processes are in the tree);
- ``address``: ``--cluster tcp://…``: a cluster of 2 worker processes already running
  (started here, once), so the figure is the passes alone without the start-up (the
  workers are not in the command's tree: its peak is the client's).

Each cluster output must equal the single-process output, number for number (checked and
printed: ``identical``). Printed per command: seconds and peak MB as median (range) of
``--repeats``, and the ratio cluster / alone of the medians, with the range of the
per-repeat ratios. ``--json`` prints one object of named figures.

Usage: python benchmarks/cluster.py [--samples 1e7] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from scale import fmt, generate
from treemem import median_range, run_measured

WAYS = ("alone", "local:2", "address")
COMMANDS = ("show", "show-recompute", "describe", "report")


def figures_of(out: str) -> object:
    """The command's JSON with NaN kept as the word (so equal documents compare equal)."""
    return json.loads(out, parse_constant=lambda word: word)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", default="1e7", help="samples in the run (default 1e7)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--commands",
        default="show,show-recompute,describe",
        help="of show, show-recompute (show --recompute: the summary read again), describe, report",
    )
    parser.add_argument("--dir", default=None, help="where the generated store goes (default: a temp folder)")
    parser.add_argument("--json", action="store_true", help="one JSON object of named figures")
    args = parser.parse_args()
    try:
        n = int(float(args.samples))
    except ValueError:
        n = 0
    commands = [c for c in args.commands.split(",") if c]
    if args.repeats < 1 or n < 16 or not set(commands) <= set(COMMANDS) or not commands:
        print(
            "cluster.py: --repeats ≥ 1, --samples ≥ 16, --commands of " + ",".join(COMMANDS), file=sys.stderr
        )
        return 2
    try:
        from distributed import Client

        from jitterlab.cluster.engine import local_cluster
    except ImportError:
        print("cluster.py: needs the cluster extra: pip install 'jitterlab[cluster]'", file=sys.stderr)
        return 2

    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    root = Path(tempfile.mkdtemp(prefix="jl-cluster-", dir=args.dir))
    store = root / "store"
    env = dict(os.environ, JITTERLAB_STORE=str(store))
    jl = [sys.executable, "-m", "jitterlab"]
    figures: dict[str, float] = {}
    rows: dict[str, dict[str, object]] = {}
    try:
        run_id = generate(store, n)
        say(f"run of {n:.0e} samples: {run_id}; {os.cpu_count()} CPUs; cluster of 2 worker processes")
        with (
            local_cluster(2) as cluster,
            Client(cluster),
        ):
            where = {
                "alone": [],
                "local:2": ["--cluster", "local:2"],
                "address": ["--cluster", cluster.scheduler_address],
            }
            for command in commands:
                recompute = ["--recompute"] if command == "show-recompute" else []
                page = root / "report.html"
                output = ["-o", str(page)] if command == "report" else ["--json", *recompute]
                cmd = [*jl, command.removesuffix("-recompute"), run_id, *output, "--store", str(store)]
                seconds: dict[str, list[float]] = {w: [] for w in WAYS}
                peaks: dict[str, list[float]] = {w: [] for w in WAYS}
                outputs: dict[str, object] = {}
                for _ in range(args.repeats):
                    for way in WAYS:
                        bound = {"JITTERLAB_MEMORY_LIMIT_MB": "1"} if command == "report" else {}
                        m = run_measured([*cmd, *where[way]], env=env | bound)
                        if m.returncode != 0:
                            raise SystemExit(
                                f"{command} {way} failed ({m.returncode}): {m.stderr.strip()[-400:]}"
                            )
                        seconds[way].append(m.seconds)
                        peaks[way].append(m.peak_tree_rss_bytes / 1e6)
                        outputs[way] = (
                            re.sub(r"generated [0-9-]+ [0-9:]+ UTC", "", page.read_text())
                            if command == "report"
                            else figures_of(m.stdout)
                        )
                for way in WAYS:
                    line = f"{command:14} {way:8} {fmt(seconds[way])} s, peak {fmt(peaks[way], 0)} MB"
                    if way != "alone":
                        same = outputs[way] == outputs["alone"]
                        ratios = [c / a for c, a in zip(seconds[way], seconds["alone"], strict=True)]
                        ratio = statistics.median(seconds[way]) / statistics.median(seconds["alone"])
                        _, lo, hi = median_range(ratios)
                        line += f", {ratio:.2f}× alone (per repeat {lo:.2f}–{hi:.2f}), identical: {'yes' if same else 'NO'}"
                        figures[f"{command}_{way.replace(':', '')}_over_alone"] = ratio
                        if not same:
                            say(line)
                            raise SystemExit(
                                f"{command} {way}: the cluster's figures differ from the single-process ones"
                            )
                    figures[f"{command}_{way.replace(':', '')}_s"] = statistics.median(seconds[way])
                    figures[f"{command}_{way.replace(':', '')}_peak_mb"] = statistics.median(peaks[way])
                    rows[f"{command} {way}"] = {"seconds": seconds[way], "peak_mb": peaks[way]}
                    say(line)
        if args.json:
            print(json.dumps({"samples": n, "repeats": args.repeats, "figures": figures, "rows": rows}))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

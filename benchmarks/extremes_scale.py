"""`describe --test gesd|walsh` and `describe --from/--to` streamed in row groups against the
same analyses with the run read whole (the in-memory path every version before this one
took), on one stored run of N samples (issue 25 item 1; stats/extremes.py, store/span.py).

The run is benchmarks/scale.py's: 16 pairs, one sample per pair every 10 µs, the
heavy-tailed mixture, generated chunk by chunk. Each contender runs as its own process
(``benchmarks/treemem.py``: wall time and the peak RSS of the whole process tree),
``--repeats`` times (median and range):

- streamed: ``jitterlab describe RUN --json [--test T] [--from A --to B]``;
- in memory: the same ``describe_run`` with the samples read first (``run.table``; a span by
  ``describe.analysis.time_range``), its JSON printed the same way.

Both outputs are compared field by field (summary, thresholds, categories, windows):
``identical`` must be True. Usage:
python benchmarks/extremes_scale.py [--size 1e7] [--repeats 3] [--dir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from scale import fmt, generate
from treemem import run_measured

IN_MEMORY = """
import json, sys
from jitterlab.describe.analysis import describe_run, description_json, time_range
from jitterlab.store import load_run
run = load_run(sys.argv[2], sys.argv[1])
run.table  # read whole: the in-memory path
span = json.loads(sys.argv[4])
run = time_range(run, *span) if span else run
print(json.dumps(description_json(describe_run(run, sys.argv[3]))))
"""

CASES = (
    ("gesd", None),
    ("walsh", None),
    ("stacked-z", (1.0, 4.0)),
    ("gesd", (1.0, 4.0)),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=1e7)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="jl-extremes-"))
    store = root / "store"
    n = int(args.size)
    run_id = generate(store, n)
    env = dict(os.environ, JITTERLAB_STORE=str(store))
    jl = [sys.executable, "-m", "jitterlab"]
    print(f"run of {n:,} samples ({run_id}); medians of {args.repeats} (range)")
    try:
        for test, span in CASES:
            extra = ["--from", str(span[0]), "--to", str(span[1])] if span else []
            name = f"--test {test}" + (f" --from {span[0]:g} --to {span[1]:g}" if span else "")
            rows = {}
            for how, cmd in (
                ("streamed", [*jl, "describe", run_id, "--json", "--test", test, *extra]),
                ("in memory", [sys.executable, "-c", IN_MEMORY, str(store), run_id, test, json.dumps(span)]),
            ):
                seconds, peaks, out = [], [], ""
                for _ in range(args.repeats):
                    m = run_measured(cmd, env=env)
                    if m.returncode != 0:
                        raise SystemExit(f"{name} {how} failed: {m.stderr.strip()[-400:]}")
                    seconds.append(m.seconds)
                    peaks.append(m.peak_tree_rss_bytes / 1e6)
                    out = m.stdout
                rows[how] = json.loads(out)
                print(f"{name:32} {how:9}  {fmt(seconds)} s   peak {fmt(peaks, 0)} MB")
            keys = ("summary_ns", "thresholds_ns", "categories", "windows")
            same = all(rows["streamed"][k] == rows["in memory"][k] for k in keys)
            print(f"{name:32} identical: {same}  thresholds {rows['streamed']['thresholds_ns']}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

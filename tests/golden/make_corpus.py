"""Make the golden corpus of issue 37 once: real runs made by real jitterlab commands.

Usage (from the repository root, with the sources first on the path)::

    PYTHONPATH=$PWD/src .venv/bin/python tests/golden/make_corpus.py [--out DIR]

It writes a results store to ``DIR/store`` (default ``tests/fixtures/golden``) and
``DIR/corpus.json``, which names every run's kind and the cases the golden test asks about.
The store is made once and committed: the answers recorded in ``DIR/answers`` are about these
files, so making the corpus again changes the runs (new ids, new samples) and the answers
must then be recorded again (``JITTERLAB_GOLDEN_REGENERATE=1``, see test_golden.py). It
refuses to write over an existing corpus.

The runs (every one through the CLI unless said otherwise):

- ``bench``: the main job's 28 configurations (scripts/run-main.sh: every native technique
  × pairs 1,2 × policies other and rr 90) at 3 000 samples per pair, seed 1;
- ``import``: the six HdrHistogram logs under tests/fixtures/hdrhistogram (histogram-only,
  one run per tag), a cyclictest histogram made by the real cyclictest and an ``.hgrm``
  exported from one bench run (histogram-only imports of other tools' formats);
- ``merge``: two bench runs merged into one run (raw samples, sources kept);
- ``net bench`` (ping over UDP, 2 s), ``repl bench`` (3 clients, 2 s), ``mtp ingest`` of
  ``mtp synth-log``'s frames (seed 0, 20 s), ``monitor serve`` with one writer (seeded);
- a damaged run: a bench run whose samples file is then cut short;
- an empty run: a run with no samples, stored through the store's own commit (no command
  stores an empty run: ``import`` refuses one), then named with ``rename``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
HDR = REPO / "tests" / "fixtures" / "hdrhistogram"

WRITER = """
import sys, time
import numpy as np
from jitterlab import Monitor
channel = sys.argv[1]
rng = np.random.default_rng(7)
values = rng.lognormal(9.5, 0.3, 6000).astype(np.int64)
with Monitor(channel) as m:
    for trial, part in (("t0", values[:3000]), ("t1", values[3000:])):
        with m.trial(trial):
            for k, v in enumerate(part):
                m.record(int(v))
                if k % 500 == 0:
                    time.sleep(0.001)
"""


def jitterlab(*args: str, store: Path | None) -> str:
    """``jitterlab ARGS --store STORE`` (no ``--store`` when None) as a real process; its
    standard output."""
    env = {k: v for k, v in os.environ.items() if k != "JITTERLAB_STORE"}
    result = subprocess.run(
        [sys.executable, "-m", "jitterlab", *args, *(() if store is None else ("--store", str(store)))],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if result.returncode != 0:
        raise SystemExit(f"jitterlab {' '.join(args)}: exit {result.returncode}\n{result.stderr}")
    return result.stdout


def run_ids(store: Path) -> set[str]:
    return {p.name for p in store.iterdir() if (p / "run.json").is_file()}


def made(store: Path, before: set[str]) -> list[str]:
    """The runs a command just stored, in id order."""
    return sorted(run_ids(store) - before)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def monitor_run(store: Path) -> str:
    """One ``monitor serve`` run with one writer of two seeded trials."""
    from jitterlab.monitor import recorder
    from jitterlab.monitor.launch import start_serve, wait_stored

    channel = f"golden-{os.getpid()}"
    proc = start_serve(channel, store, f"127.0.0.1:{free_port()}", "--duration", "3s", "--name", "monitor")
    try:
        subprocess.run([sys.executable, "-c", WRITER, channel], check=True, timeout=60)
        return wait_stored(proc, timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        recorder.unlink(channel)
        Path(f"/dev/shm/jitterlab-monitor-{channel}.serve.lock").unlink(missing_ok=True)


def empty_run(store: Path) -> str:
    """A run with no samples, through the store's own commit (conftest.make_run's path)."""
    sys.path.insert(0, str(REPO / "tests"))
    import numpy as np

    from conftest import make_run

    run = make_run(store, np.zeros(0, dtype=np.int64), technique="empty")
    return run.id


def make(out: Path) -> None:
    store = out / "store"
    if store.exists() and any(store.iterdir()):
        raise SystemExit(f"{store} exists: remove it first (the answers must then be recorded again)")
    store.mkdir(parents=True, exist_ok=True)
    kinds: dict[str, str] = {}
    work = Path(tempfile.mkdtemp(prefix="golden-make-"))
    try:
        before = run_ids(store)
        jitterlab(
            *("bench", "--technique", "all", "--pairs", "1,2", "--policy", "other,rr"),
            *("--samples", "3000", "--seed", "1"),
            store=store,
        )
        bench = made(store, before)
        if len(bench) != 28:
            raise SystemExit(f"bench made {len(bench)} runs, the main job's matrix is 28")
        kinds |= dict.fromkeys(bench, "bench")

        for log in sorted(HDR.glob("*.hlog")):
            before = run_ids(store)
            jitterlab("import", str(log), store=store)
            kinds |= dict.fromkeys(made(store, before), "hlog")

        hist = work / "cyclictest.hist"
        subprocess.run(
            ["cyclictest", "-D", "1", "-i", "1000", "-q", "-t", "2", "-h", "400", f"--histfile={hist}"],
            check=True,
            timeout=60,
        )
        before = run_ids(store)
        jitterlab("import", str(hist), store=store)
        kinds |= dict.fromkeys(made(store, before), "cyclictest")

        hgrm = work / "spin.hgrm"
        source = next(r for r in bench if "-spin-p1-other-" in r)
        jitterlab("export", source, "--format", "hgrm", "-o", str(hgrm), store=store)
        before = run_ids(store)
        jitterlab("import", str(hgrm), "--unit", "us", "--name", "hgrm-import", store=store)
        kinds |= dict.fromkeys(made(store, before), "hgrm")

        before = run_ids(store)
        pick = [next(r for r in bench if f"-mutex-p1-{p}-" in r) for p in ("other", "rr90")]
        jitterlab("merge", *pick, "--as", "merged", store=store)
        kinds |= dict.fromkeys(made(store, before), "merge")

        before = run_ids(store)
        jitterlab(
            *("net", "bench", "--scenario", "ping", "--duration", "2s", "--warmup", "0.5s"),
            *("--name", "net-ping"),
            store=store,
        )
        kinds |= dict.fromkeys(made(store, before), "net")

        before = run_ids(store)
        jitterlab(
            *("repl", "bench", "--clients", "3", "--duration", "2s", "--warmup", "0.5s"),
            *("--name", "repl-3"),
            store=store,
        )
        kinds |= dict.fromkeys(made(store, before), "repl")

        logs = work / "mtp"
        jitterlab("mtp", "synth-log", str(logs), "--duration", "20s", "--seed", "0", store=None)
        before = run_ids(store)
        jitterlab("mtp", "ingest", str(logs / "frames.csv"), "--name", "mtp-ingest", store=store)
        kinds |= dict.fromkeys(made(store, before), "mtp")

        kinds[monitor_run(store)] = "monitor"

        before = run_ids(store)
        jitterlab(
            *("bench", "--technique", "mutex", "--samples", "3000", "--seed", "1", "--name", "damaged"),
            store=store,
        )
        (damaged,) = made(store, before)
        samples = store / damaged / "samples.parquet"
        samples.write_bytes(samples.read_bytes()[: samples.stat().st_size // 2])
        kinds[damaged] = "damaged"

        empty = empty_run(store)
        jitterlab("rename", empty, "empty", store=store)
        kinds[empty] = "empty"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    missing = run_ids(store) - set(kinds)
    if missing:
        raise SystemExit(f"runs of no known kind: {sorted(missing)}")
    corpus = {"runs": [{"id": r, "kind": kinds[r]} for r in sorted(kinds)]}
    (out / "corpus.json").write_text(json.dumps(corpus, indent=1) + "\n")
    print(f"{len(kinds)} runs in {store}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "golden")
    make(parser.parse_args().out)


if __name__ == "__main__":
    main()

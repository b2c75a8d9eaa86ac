"""Run ids are claimed, never replaced (issue 24): two writers that pick the same id in the
same second (ids carry 2 random bytes) both store their run. Before, the second ended in an
unhandled ``os.replace`` error (a full folder at the name) or in "cannot write to results
store: File exists" (the first still staging), and an empty folder at the name was replaced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import latency_clusters, make_run, run_cli, run_main
from jitterlab.measure.bench import BenchPlan, bench_points
from jitterlab.measure.runner import Plan, run_plan
from jitterlab.store import ResultsStore
from jitterlab.store.schema import RUN_JSON
from jitterlab.store.staging import DRAFT_JSON

CLASH = "20260101-000000-clash-p1-abcd"  # one second, one slug, one random part for every writer

WRITER = """
import json, sys, time
import numpy as np
import jitterlab.store.staging as staging
from jitterlab.store import ResultsStore

# the random part collides on every draw, retries included (only the store's draws: staging._id_suffix)
staging._id_suffix = lambda: "abcd"
store, writer, go = ResultsStore(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
while time.time() < go:  # every writer starts at the same moment
    time.sleep(0.001)
for k in range(3):
    n = 50 + k
    meta = {
        "schema_version": 1, "kind": "run", "id": store.new_run_id("clash", "p1"),
        "created_utc": "2026-01-01T00:00:00.000+00:00", "status": "complete", "partial_reason": "",
        "config": {"runtime": "synthetic", "technique": "clash", "pairs": 1, "policy": "other",
                   "writer": writer, "k": k},
    }
    assert meta["id"].endswith("-clash-p1-abcd"), meta["id"]
    value = 1_000_000 + writer * 1_000 + k  # every sample says whose run it is
    run = store.commit_latencies(meta, np.arange(n) * 1_000, np.arange(n) * 1_000 + value)
    print(run.id)
"""


def test_concurrent_writers_forced_to_one_id_all_store_their_runs(tmp_path: Path) -> None:
    """12 processes × 3 commits, every id drawn the same (time stamp of one second, random
    part forced): all 36 runs are stored under 36 distinct ids, each with its own samples,
    and nothing is left in staging."""
    store = tmp_path / "store"
    ResultsStore(store).staging_root()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    frozen = tmp_path / "sitecustomize.py"  # every new_run_id in the same second
    frozen.write_text(
        "import datetime as _dt\n"
        "class _Frozen(_dt.datetime):\n"
        "    @classmethod\n"
        "    def now(cls, tz=None):\n"
        "        return _dt.datetime(2026, 1, 1, tzinfo=tz)\n"
        "import jitterlab.store.staging as _staging\n"
        "_staging.dt = type('dt', (), {'datetime': _Frozen, 'timezone': _dt.timezone})\n"
    )
    go = time.time() + 3  # the writers import numpy and pyarrow first
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])
    )
    writers = [
        subprocess.Popen(
            [sys.executable, str(script), str(store), str(w), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(12)
    ]
    done = [(p.wait(timeout=120), *p.communicate()) for p in writers]
    for code, _out, err in done:
        assert code == 0, err
    ids = [line for _code, out, _err in done for line in out.split()]
    assert len(ids) == 36 and len(set(ids)) == 36, ids
    assert all(i.startswith("20260101-000000-clash-p1-abcd") for i in ids), ids
    runs = ResultsStore(store).runs()
    assert sorted(r.id for r in runs) == sorted(ids)
    for run in runs:
        writer, k = run.config["writer"], run.config["k"]
        assert run.latency_ns.size == 50 + k
        assert (run.latency_ns == 1_000_000 + writer * 1_000 + k).all(), run.id
        assert json.loads((run.path / RUN_JSON).read_text())["id"] == run.path.name == run.id
    assert sorted((run.config["writer"], run.config["k"]) for run in runs) == [
        (w, k) for w in range(12) for k in range(3)
    ]
    assert [p.name for p in (store / ".staging").iterdir()] == []


def _leftover(store: ResultsStore, run_id: str) -> Path:
    """A killed monitor's staging folder for ``run_id``: a draft and one part of 100 samples."""
    staging = store.staging_dir(run_id)
    assert staging.name == run_id
    seq = np.arange(100)
    store.write_sample_part(staging, 0, 0, seq, seq * 1_000, seq * 1_000 + 7_000)
    draft = {
        "schema_version": 1,
        "kind": "run",
        "id": run_id,
        "created_utc": "2026-01-01T00:00:00.000+00:00",
        "config": {"runtime": "monitor", "technique": "monitor", "pairs": 1},
    }
    (staging / DRAFT_JSON).write_text(json.dumps(draft))
    return staging


@pytest.mark.parametrize("there", ["run", "empty-folder", "file", "link"])
def test_publishing_never_replaces_what_is_at_the_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], there: str
) -> None:
    """A leftover is recovered under its id while something already holds that name in the
    store (an earlier run with the same id, an empty folder, a file, a link): the run is
    stored under a new id and what was there keeps its inode and contents. Before: an
    unhandled OSError (ENOTEMPTY, ENOTDIR), or the empty folder silently replaced."""
    store = ResultsStore(tmp_path / "store")
    _leftover(store, CLASH)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    at = store.root / CLASH
    if there == "run":
        earlier = make_run(store.root, latency_clusters(1, 1_000))
        os.rename(earlier.path, at)  # an earlier run that drew the same id
    elif there == "empty-folder":
        at.mkdir()
    elif there == "file":
        at.write_text("not a run")
    else:
        at.symlink_to(elsewhere)
    before = os.lstat(at)
    listing = sorted(os.listdir(at)) if there == "run" else []
    code, _out, err = run_main(["recover", "--store", str(store.root)], capsys)
    assert code == 0, err
    assert "Traceback" not in err and "internal error" not in err and "not recovered" not in err, err
    after = os.lstat(at)
    assert (after.st_ino, after.st_mode, after.st_size) == (before.st_ino, before.st_mode, before.st_size)
    if there == "run":
        assert sorted(os.listdir(at)) == listing
    assert os.listdir(elsewhere) == []
    (recovered,) = [r for r in store.runs() if r.config["technique"] == "monitor"]
    assert recovered.id != CLASH and recovered.id.startswith(CLASH + "-")
    assert recovered.latency_ns.size == 100 and (recovered.latency_ns == 7_000).all()
    assert json.loads((recovered.path / RUN_JSON).read_text())["id"] == recovered.id
    # the samples file named the id drawn first (CLASH) in its metadata; nothing read it:
    # the run's id is its folder's and run.json's, one id (issue 24)
    metadata = pq.read_schema(recovered.path / "samples.parquet").metadata
    assert b"jitterlab.run_id" not in metadata and metadata[b"jitterlab.schema_version"] == b"1"
    assert not (store.root / ".staging" / CLASH).exists()


def test_a_staging_name_held_by_another_writer_gives_the_next_id(tmp_path: Path) -> None:
    """Two writers with one id: the second gets a folder of its own, whose name is its id."""
    store = ResultsStore(tmp_path / "store")
    first = store.staging_dir(CLASH)
    second = store.staging_dir(CLASH)
    assert first.name == CLASH and second.name != CLASH and second.name.startswith(CLASH + "-")
    assert first.is_dir() and second.is_dir()


class _RecoverAtTheClaim(ResultsStore):
    """A store whose writer is overtaken by a real ``jitterlab recover`` (another process) at
    the worst moment: the staging folder is made, its lock about to be taken."""

    recovered: list[subprocess.CompletedProcess[str]]

    def staging_lock(self, run_id: str) -> Iterator[None]:  # type: ignore[override]
        self.recovered.append(run_cli("recover", "--store", str(self.root)))
        return super().staging_lock(run_id)


def test_recover_at_the_instant_of_the_claim_leaves_a_live_writers_folder(tmp_path: Path) -> None:
    """Issue 24: `run_native_job` (and the monitor server) made the staging folder first and
    locked it only afterwards; a `recover` in between found an empty folder without a lock
    and removed it ("nothing was recorded"), and the measurement then had nowhere to write.
    The lock is now taken before the folder exists and held until it is published."""
    store = _RecoverAtTheClaim(tmp_path / "store")
    store.recovered = []
    plan = BenchPlan(techniques=("mutex",), samples=2_000, warmup=100)
    outcome = run_plan(Plan("bench", bench_points(plan)), store, lambda _w: None)
    (done,) = store.recovered
    assert done.returncode == 0, done.stderr
    assert "nothing was recorded" not in done.stderr, done.stderr  # the live folder was not taken
    assert outcome.failures == [] and len(outcome.runs) == 1, outcome.failures
    (run,) = store.runs()
    assert run.latency_ns.size == 2_000 and not run.partial
    assert [p.name for p in (store.root / ".staging").iterdir()] == []  # folder and lock gone


def test_a_folder_claimed_with_its_lock_is_no_leftover_until_released(tmp_path: Path) -> None:
    """The lock of ``staging_dir(lock=True)`` is held from the claim on: another process's
    `recover` leaves the (empty) folder alone; once released it is an ordinary leftover."""
    store = ResultsStore(tmp_path / "store")
    staging = store.staging_dir(CLASH, lock=True)
    done = run_cli("recover", "--store", str(store.root))
    assert done.returncode == 0 and staging.is_dir(), done.stderr
    store.release_staging(staging)
    assert not (store.root / ".staging" / f"{CLASH}.lock").exists()
    done = run_cli("recover", "--store", str(store.root))
    assert done.returncode == 0 and not staging.exists(), done.stderr
    assert "nothing was recorded" in done.stderr


def _recover_during_the_first_write(
    monkeypatch: pytest.MonkeyPatch, root: Path
) -> list[subprocess.CompletedProcess[str]]:
    """Make the first row group any writer writes run a real ``jitterlab recover`` (another
    process) on ``root`` first: the moment a writer's staging folder holds no raw file, no
    draft and no samples yet."""
    from jitterlab.store import writer

    recovered: list[subprocess.CompletedProcess[str]] = []
    original = writer.SampleWriter.write

    def write(self: writer.SampleWriter, *args: object, **kwargs: object) -> None:
        if not recovered:
            recovered.append(run_cli("recover", "--store", str(root)))
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(writer.SampleWriter, "write", write)
    return recovered


@pytest.mark.parametrize("writer_path", ["import", "merge", "latencies"])
def test_recover_during_an_import_merge_or_analysis_leaves_the_writers_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer_path: str
) -> None:
    """Issue 24: `import`, `merge` and the analyses that store latencies (`mtp`,
    `commit_latencies`) claimed their staging folder without its lock, so a `recover` while
    they wrote found "nothing recorded" and removed it. They claim with the lock now."""
    from jitterlab.store.ingest import import_file
    from jitterlab.store.merge import merge

    store = ResultsStore(tmp_path / "store")
    sources = [make_run(store.root, latency_clusters(seed, 3_000)) for seed in (1, 2)]
    csv = tmp_path / "x.csv"
    csv.write_text("latency_ns\n" + "\n".join(str(10_000 + i % 97) for i in range(5_000)) + "\n")
    recovered = _recover_during_the_first_write(monkeypatch, store.root)
    if writer_path == "import":
        run = import_file(csv, store)
    elif writer_path == "merge":
        run = merge(store, [s.id for s in sources], "both")
    else:
        t = np.arange(4_000, dtype=np.int64) * 1_000
        meta = {
            "schema_version": 1,
            "kind": "run",
            "id": store.new_run_id("mtp", "x"),
            "created_utc": "2026-01-01T00:00:00.000+00:00",
            "status": "complete",
            "partial_reason": "",
            "config": {"runtime": "synthetic", "technique": "mtp", "pairs": 1, "policy": "other"},
            "timing": {"started_realtime_ns": 1_700_000_000_000_000_000},
        }
        run = store.commit_latencies(meta, t, t + 500)
    (done,) = recovered
    assert done.returncode == 0, done.stderr
    assert "nothing was recorded" not in done.stderr, done.stderr
    assert store.resolve(run.id).is_dir() and int(run.meta["samples"]["rows"]) > 0

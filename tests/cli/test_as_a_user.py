"""Issue 24 item 14: jitterlab run as its users run it, not only as root.

A lab's store often holds runs of both: the user measures as themself and now and then as
root (SCHED_RR, PM QoS). Here an unprivileged user (created for the test, removed after it)
runs the measuring commands against their own store that also holds root's runs, a damaged
run, an empty run and a leftover of a killed root measurement, and against a store root
owns. Every command succeeds or refuses in one line with exit 2; none writes into, replaces
or trusts root's files (a snapshot of every root-owned file is compared after each)."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from conftest import OtherUser, assert_one_line_error, latency_clusters, make_run
from jitterlab.store import ResultsStore
from jitterlab.store.runs import DRAFT_JSON

HLOG = Path(__file__).parent.parent / "fixtures" / "hdrhistogram" / "jHiccup-2.0.7S.logV2.hlog"


@dataclass
class Lab:
    user: OtherUser
    home: Path  # the user's folder (theirs, 0755)
    store: Path  # the user's store: root measured in it too
    roots_store: Path  # a store root made and owns
    leftover: Path  # a staging folder of a root measurement that was killed

    def run(self, *args: str, store: Path | None = None) -> tuple[int, str, str]:
        """``jitterlab ARGS --store STORE`` as the user (default: the user's store)."""
        return self.bare(*args, "--store", str(store or self.store))

    def bare(self, *args: str) -> tuple[int, str, str]:
        done = self.user.jitterlab(*args, home=self.home)
        return done.returncode, done.stdout, done.stderr


def root_files(*folders: Path) -> dict[str, tuple[int, int, int, str]]:
    """Every root-owned file and folder below ``folders``: inode, mode, size, SHA-256."""
    seen = {}
    for folder in folders:
        for where, dirs, files in os.walk(folder):
            for name in [*dirs, *files]:
                path = Path(where) / name
                st = os.lstat(path)
                if st.st_uid != 0:
                    continue
                digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else ""
                seen[str(path)] = (st.st_ino, st.st_mode, st.st_size, digest)
    return seen


def user_runs(lab: Lab) -> list[Path]:
    """The run folders the user made (owned by them)."""
    return [p for p in ResultsStore(lab.store).run_dirs() if p.stat().st_uid == lab.user.uid]


@pytest.fixture
def lab(other_user: OtherUser) -> Iterator[Lab]:
    base = Path(tempfile.mkdtemp(prefix="jl-lab-", dir="/tmp"))  # pytest's tmp_path is root's 0700
    try:
        os.chmod(base, 0o755)
        home = base / "home"
        os.mkdir(home, 0o755)
        os.chown(home, other_user.uid, other_user.gid)
        store = home / "results"  # made by the user, before root measured in it
        made = other_user.python(f"os.mkdir({str(store)!r}, 0o755)")
        assert made.returncode == 0, made.stderr
        make_run(store, latency_clusters(1, 5_000), technique="mutex")  # root's runs
        damaged = make_run(store, latency_clusters(2, 5_000), technique="spsc")
        with open(damaged.path / "samples.parquet", "r+b") as f:
            f.truncate(1000)
        make_run(store, np.zeros(0, np.int64), technique="empty")
        os.chmod(make_run(store, latency_clusters(5, 1_000), technique="private").path, 0o700)
        s = ResultsStore(store)
        leftover = s.staging_dir(s.new_run_id("net", "ping"))  # root's, killed: a draft, no parts
        (leftover / DRAFT_JSON).write_text(json.dumps({"id": leftover.name, "config": {}}))
        roots_store = base / "roots"
        make_run(roots_store, latency_clusters(3, 5_000))
        yield Lab(other_user, home, store, roots_store, leftover)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def untouched(lab: Lab) -> Iterator[None]:
    """Root's files are exactly as they were after the test, and the user's files went
    only into the user's own store and folder."""
    before = root_files(lab.store, lab.roots_store)
    assert len(before) >= 8
    yield
    assert root_files(lab.store, lab.roots_store) == before
    for where, _dirs, files in os.walk(lab.roots_store):
        assert all(os.lstat(Path(where) / f).st_uid == 0 for f in files), "the user wrote into root's store"


def test_roots_staging_in_a_users_store_is_the_users(lab: Lab) -> None:
    """Root measuring in a store another user owns gives ``.staging`` to that user (it was
    root's 0700 folder: the owner could then neither measure in nor clean their own store),
    while root's own staging folder inside stays root's alone."""
    staging = os.lstat(lab.store / ".staging")
    assert staging.st_uid == lab.user.uid and stat.S_IMODE(staging.st_mode) == 0o700
    assert os.lstat(lab.leftover).st_uid == 0 and stat.S_IMODE(os.lstat(lab.leftover).st_mode) == 0o700


def test_bench_as_a_user(lab: Lab, untouched: None) -> None:
    """600 000 samples need more than a user's 8 MiB of locked memory: mlockall(MCL_FUTURE)
    succeeded and then every allocation past the limit failed (std::bad_alloc, exit 1); now
    memory is not locked where the limit would bite, and the run says so."""
    code, _out, err = lab.run(
        "bench", "--technique", "mutex", "--samples", "600000", "--warmup-samples", "100"
    )
    assert code == 0, err
    if resource.getrlimit(resource.RLIMIT_MEMLOCK)[0] != resource.RLIM_INFINITY:  # the user's limit
        assert "mlock-refused" in err and "RLIMIT_MEMLOCK" in err, err
    (run,) = user_runs(lab)
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete" and meta["summary"]["latency_ns"]["count"] == 600_000, err
    assert all(os.lstat(p).st_uid == lab.user.uid for p in run.iterdir())


def test_hiccup_as_a_user(lab: Lab, untouched: None) -> None:
    code, _out, err = lab.run("hiccup", "--duration", "1s", "--cpus", "0")
    assert code == 0, err
    (run,) = user_runs(lab)
    assert json.loads((run / "run.json").read_text())["config"]["technique"] == "hiccup"


def test_import_of_a_csv_and_an_hlog_as_a_user(lab: Lab, untouched: None) -> None:
    csv = lab.home / "lat.csv"
    csv.write_text("latency_ns\n" + "\n".join(str(v) for v in latency_clusters(4, 2_000)) + "\n")
    hlog = lab.home / "jhiccup.hlog"
    shutil.copy(HLOG, hlog)
    for path in (csv, hlog):
        os.chown(path, lab.user.uid, lab.user.gid)
        code, _out, err = lab.run("import", str(path))
        assert code == 0, err
    assert len(user_runs(lab)) == 2


def test_mtp_sensor_logs_as_a_user(lab: Lab, untouched: None) -> None:
    logs = lab.home / "rig"
    code, _out, err = lab.bare("mtp", "synth-log", str(logs), "--duration", "3s")
    assert code == 0, err
    code, _out, err = lab.run("mtp", "ingest", str(logs / "frames.csv"))
    assert code == 0, err
    (run,) = user_runs(lab)
    summary = json.loads((run / "run.json").read_text())["summary"]["latency_ns"]
    assert 50e6 < summary["p50"] < 62e6  # the generated 56 ms


def test_repl_bench_as_a_user(lab: Lab, untouched: None) -> None:
    """Loopback needs no privilege; PM QoS is refused to a user and said so, and the run
    keeps its repl block (before, the warning's code failed the schema and the run lost it)."""
    code, _out, err = lab.run(
        *("repl", "bench", "--clients", "2", "--rate", "50", "--duration", "1s", "--warmup", "0.2s")
    )
    assert code == 0, err
    (run,) = user_runs(lab)
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete" and "repl" in meta, meta.get("partial_reason")


def test_repl_across_namespaces_as_a_user_is_one_line(lab: Lab, untouched: None) -> None:
    code, _out, err = lab.run("repl", "bench", "--clients", "2", "--nodes", "2", "--duration", "1s")
    assert code == 2, err
    assert_one_line_error(err)
    assert "namespaces need root" in err and "jitterlab net" not in err, err
    assert user_runs(lab) == []


def test_listing_reporting_and_recovering_as_a_user(lab: Lab, untouched: None) -> None:
    """Root's runs are listed, the damaged, the private and the empty run named and skipped,
    root's leftover refused in one line naming root and left in place."""
    code, out, err = lab.run("runs")
    assert code == 0, err
    assert "mutex" in out and "empty" in out and "damaged" in out and "Traceback" not in err
    assert "private" in err and "permission denied" in err, err  # root's 0700 run: named
    report = lab.home / "report.html"
    code, out, err = lab.run("report", "-o", str(report))
    assert code == 0, err
    assert report.stat().st_uid == lab.user.uid and "Traceback" not in err
    code, out, err = lab.run("recover")
    assert code == 0, err
    assert lab.leftover.name in err and "root" in err and "Traceback" not in err
    assert lab.leftover.is_dir() and user_runs(lab) == []


@pytest.mark.parametrize(
    "args",
    [
        ("bench", "--technique", "mutex", "--samples", "1000"),
        ("hiccup", "--duration", "1s"),
        ("import", str(HLOG)),
        ("repl", "bench", "--clients", "2", "--duration", "1s"),
        ("recover",),
    ],
    ids=lambda a: "-".join(a[:2]) if a[0] == "repl" else a[0],
)
def test_a_store_root_owns_is_refused_in_one_line(lab: Lab, untouched: None, args: tuple[str, ...]) -> None:
    code, _out, err = lab.run(*args, store=lab.roots_store)
    assert code == 2, err
    assert_one_line_error(err)
    assert str(lab.roots_store) in err and "permission denied" in err

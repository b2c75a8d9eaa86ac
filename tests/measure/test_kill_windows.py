"""Nothing recorded is lost to a kill -9 (issue 42 items 8–9): a real bench process is
SIGKILLed at the moments the audit found, chosen by a fault-injection point
(``JITTERLAB_KILL_AT``, core/faults.py) instead of timing luck, and ``recover`` stores what it
recorded, with the technique and policy it was measured with."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli
from jitterlab.store import ResultsStore

SAMPLES = 200_000


def killed_bench(store: Path, point: str) -> subprocess.CompletedProcess[str]:
    """``bench`` killed by SIGKILL at ``point`` (the real process, by itself)."""
    env = os.environ | {"JITTERLAB_KILL_AT": point}
    argv = [sys.executable, "-m", "jitterlab", "bench", "--technique", "mutex", "--samples", str(SAMPLES)]
    return subprocess.run(
        [*argv, "--store", str(store)], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _leftover(store: Path) -> Path:
    (staging,) = [p for p in (store / ".staging").iterdir() if p.is_dir()]
    return staging


def test_a_kill_after_the_samples_file_is_complete_recovers_every_sample(tmp_path: Path) -> None:
    store = tmp_path / "store"
    killed = killed_bench(store, "samples-written")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    staging = _leftover(store)
    # the window of the audit: the samples file complete, the raw file already removed
    assert (staging / "samples.parquet").is_file()
    assert not (staging / "samples.jlraw").exists() and not (staging / "samples.jlraw.tmp").exists()
    assert (staging / "harness.json").is_file(), "the metadata must stay until publish (item 9)"
    digest = hashlib.sha256((staging / "samples.parquet").read_bytes()).hexdigest()
    recovered = run_cli("recover", "--store", str(store))
    assert recovered.returncode == 0, recovered.stderr
    assert "nothing was recorded" not in recovered.stderr
    (run,) = ResultsStore(store).runs()
    assert run.latency_ns.size == SAMPLES  # every sample, none lost
    assert np.array_equal(np.sort(run.seq), np.arange(SAMPLES))
    assert run.meta["samples"]["sha256"] == digest  # the very file, checked
    assert run.config["technique"] == "mutex" and run.config["policy"] == "other"
    assert run.meta["status"] == "partial" and "before it was published" in run.meta["partial_reason"]
    assert not (run.path / "harness.json").exists()
    assert ResultsStore(store).leftovers() == []
    assert run_cli("runs", "--strict", "--store", str(store)).returncode == 0


def test_a_kill_during_the_commit_is_recovered_with_its_technique_and_policy(tmp_path: Path) -> None:
    store = tmp_path / "store"
    killed = killed_bench(store, "committing")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    staging = _leftover(store)
    assert (staging / "samples.jlraw").is_file() and (staging / "harness.json").is_file()
    recovered = run_cli("recover", "--store", str(store))
    assert recovered.returncode == 0, recovered.stderr
    (run,) = ResultsStore(store).runs()
    assert run.config["technique"] == "mutex"  # not "unknown": harness.json was kept
    assert run.config["policy"] == "other"
    assert run.meta["obtained"]["policies"] == ["other"]
    assert run.latency_ns.size == SAMPLES
    assert not (run.path / "harness.json").exists() and not (run.path / "journal.bin").exists()


def test_a_published_bench_keeps_no_harness_files(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = run_cli("bench", "--technique", "mutex", "--samples", "2000", "--store", str(store))
    assert done.returncode == 0, done.stderr
    (run,) = ResultsStore(store).runs()
    assert sorted(p.name for p in run.path.iterdir()) == ["run.json", "samples.parquet"]


def test_recover_never_deletes_what_no_check_proved_empty(tmp_path: Path) -> None:
    """A leftover without a raw file but with something else in it (a damaged samples
    file, a histogram) is named and left in place, never removed as 'nothing recorded'."""
    store = ResultsStore(tmp_path / "store")
    staging = store.staging_dir("20260101-000000-mutex-p1")
    (staging / "samples.parquet").write_bytes(b"PAR1 not really a parquet file")
    (staging / "harness.json").write_text(json.dumps({"technique": "mutex"}))
    other = store.staging_dir("20260101-000001-mutex-p1")
    (other / "histogram.hlog").write_text("#[StartTime: 1]\n")
    done = run_cli("recover", "--store", str(store.root))
    assert done.returncode == 0, done.stderr
    assert (staging / "samples.parquet").is_file() and (other / "histogram.hlog").is_file()
    assert "not readable" in done.stderr and "left in place" in done.stderr, done.stderr
    assert "nothing was recorded" not in done.stderr
    assert store.runs() == []


def test_a_kill_in_the_instant_after_publish_leaves_no_harness_files_in_the_run(tmp_path: Path) -> None:
    """The folder is renamed into the store and the process killed before anything else
    (``published``): the run holds only its own files; harness.json and the journal were
    removed before the rename, once run.json said what they said."""
    store = tmp_path / "store"
    killed = killed_bench(store, "published")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    (run,) = ResultsStore(store).runs()
    assert sorted(p.name for p in run.path.iterdir()) == ["run.json", "samples.parquet"]
    assert run.config["technique"] == "mutex" and run.meta["status"] == "complete"
    assert run_cli("runs", "--strict", "--store", str(store)).returncode == 0


def test_a_kill_just_before_the_rename_is_recovered_as_the_run_it_is(tmp_path: Path) -> None:
    """Killed with run.json written in staging and the harness's files removed
    (``publishing``): recover publishes the run run.json describes (technique, policy,
    every sample), not an "unknown" one."""
    store = tmp_path / "store"
    killed = killed_bench(store, "publishing")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    staging = _leftover(store)
    assert sorted(p.name for p in staging.iterdir()) == ["run.json", "samples.parquet"]
    described = json.loads((staging / "run.json").read_text())
    recovered = run_cli("recover", "--store", str(store))
    assert recovered.returncode == 0, recovered.stderr
    (run,) = ResultsStore(store).runs()
    assert run.config["technique"] == "mutex" and run.config["policy"] == "other"
    assert run.meta["samples"]["sha256"] == described["samples"]["sha256"]
    assert run.meta["summary"] == described["summary"]
    assert run.latency_ns.size == SAMPLES
    assert sorted(p.name for p in run.path.iterdir()) == ["run.json", "samples.parquet"]
    assert ResultsStore(store).leftovers() == []


SERIES = [
    "accumulator-inter-message",
    "accumulator-transit",
    "journaller-inter-message",
    "journaller-transit",
]


def _killed_pipeline(store: Path, point: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"JITTERLAB_KILL_AT": point}
    argv = [sys.executable, "-m", "jitterlab", "bench", "--scenario", "pipeline", "--samples", "20000"]
    return subprocess.run(
        [*argv, "--store", str(store)], env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize("point", ["publishing", "series-staged"])
def test_a_pipeline_killed_while_its_series_are_published_recovers_each_series(
    tmp_path: Path, point: str
) -> None:
    """The pipeline's four series are described in their staging folders before any is
    published and before the source's raw file is dropped: a kill while they are published
    (the first one's rename, or before any) recovers each as the series it is, never as an
    "unknown" run, and no sample twice."""
    store = tmp_path / "store"
    killed = _killed_pipeline(store, point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    recovered = run_cli("recover", "--store", str(store))
    assert recovered.returncode == 0, recovered.stderr
    runs = ResultsStore(store).runs()
    assert sorted(r.config.get("series", "?") for r in runs) == SERIES, [r.id for r in runs]
    for run in runs:
        assert run.config["technique"] == "pipeline" and run.config["policy"] == "other"
        assert run.latency_ns.size == (20_000 if run.config["series"].endswith("transit") else 19_999)
    assert len({r.config["scenario_run"] for r in runs}) == 1
    assert ResultsStore(store).leftovers() == []

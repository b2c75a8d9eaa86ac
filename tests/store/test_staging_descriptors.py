"""Issue 42's leftovers: a store's staging entries are reached from open folder
descriptors, never by a path someone else may swap (the store's owner may rename
``.staging`` and put a link in its place while root measures in it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jitterlab.store.runs import ResultsStore


def _swap_staging_for_a_link(store: Path, elsewhere: Path, lock_name: str) -> Path:
    """Rename ``.staging`` away and put a link to ``elsewhere`` (holding a file of the
    lock's name) in its place; the renamed folder is returned."""
    elsewhere.mkdir()
    (elsewhere / lock_name).write_text("not jitterlab's")
    moved = store / ".staging-moved"
    os.rename(store / ".staging", moved)
    os.symlink(elsewhere, store / ".staging")
    return moved


def test_release_staging_removes_the_lock_from_the_folder_it_made_it_in(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "results")
    staging = store.staging_dir(store.new_run_id("swap"), lock=True)
    lock_name = f"{staging.name}.lock"
    elsewhere = tmp_path / "victim"
    moved = _swap_staging_for_a_link(tmp_path / "results", elsewhere, lock_name)
    assert (moved / lock_name).is_file()
    store.release_staging(staging)
    assert (elsewhere / lock_name).read_text() == "not jitterlab's"  # nothing removed through the link
    assert not (moved / lock_name).exists()  # the lock it took is gone from where it is


def test_staging_lock_removes_its_lock_from_the_folder_it_made_it_in(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "results")
    run_id = store.new_run_id("swap")
    elsewhere = tmp_path / "victim"
    with store.staging_lock(run_id):
        moved = _swap_staging_for_a_link(tmp_path / "results", elsewhere, f"{run_id}.lock")
    assert (elsewhere / f"{run_id}.lock").read_text() == "not jitterlab's"
    assert not (moved / f"{run_id}.lock").exists()


def test_a_lock_made_again_by_someone_else_is_left_alone(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "results")
    staging = store.staging_dir(store.new_run_id("again"), lock=True)
    lock = staging.parent / f"{staging.name}.lock"
    lock.unlink()
    lock.write_text("another writer's")
    store.release_staging(staging)
    assert lock.read_text() == "another writer's"


def _traced_run(store: Path, file_name: str) -> Path:
    """A stored run with a trace block whose ``file`` is ``file_name``, and a real trace
    file (``trace-events.parquet``) in the run folder."""
    import numpy as np

    from conftest import make_run
    from jitterlab.core.fileio import atomic_write_json
    from jitterlab.store.trace import TRACE_FILE, TraceEvents, write_trace_events

    n = 4_000
    latency = np.full(n, 10_000, dtype=np.int64)
    latency[::100] = 2_000_000
    run = make_run(store, latency, t_send=1_000_000_000 + np.arange(n, dtype=np.int64) * 1_000_000)
    ticks = np.sort(run.t_send_ns[::3] + 1)
    write_trace_events(run.path / TRACE_FILE, TraceEvents({3: ticks}, {3: ["irq"] * ticks.size}, {}))
    run.meta["trace"] = {
        "available": True,
        "tool": "perf",
        "events": {"irq": int(ticks.size)},
        "file": file_name,
        "in_vm": False,
        "spike_cpu": {"available": True, "from": "receiver", "cpu_of_pair": [3]},
    }
    atomic_write_json(run.path / "run.json", run.meta)
    return run.path


def test_trace_file_must_be_a_plain_name_inside_the_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run.json whose ``trace.file`` is an absolute path (another run's, or a private
    file) is refused in one line, like ``histogram.file``: nothing is read from outside."""
    from conftest import assert_one_line_error, run_main

    private = _traced_run(tmp_path / "private", "trace-events.parquet") / "trace-events.parquet"
    for name in (str(private), "../trace-events.parquet", ".hidden"):
        run = _traced_run(tmp_path / f"store{len(name)}", name)
        code, _, err = run_main(["describe", str(run)], capsys)
        assert code == 2, err
        assert_one_line_error(err)
        assert "'trace.file' must name a file inside the run folder" in err, err


def test_a_trace_file_linked_elsewhere_is_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from conftest import assert_one_line_error, run_main

    private = _traced_run(tmp_path / "private", "trace-events.parquet") / "trace-events.parquet"
    run = _traced_run(tmp_path / "store", "linked.parquet")
    os.symlink(private, run / "linked.parquet")
    code, _, err = run_main(["describe", str(run)], capsys)
    assert code == 2, err
    assert_one_line_error(err)
    assert "a link; not followed" in err, err


def test_series_folders_are_written_through_the_folders_made_not_their_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pipeline's series runs: each staging folder is swapped for a link to a victim folder
    right after it is made (what the store's owner may do to root's fresh folders; done
    here at that exact moment instead of by a racing loop). Nothing is written through the
    link, and the run is refused in one line."""
    import numpy as np

    from jitterlab.core.errors import JitterlabError
    from jitterlab.measure.jobs import NativeJob, _store_series
    from jitterlab.store.rawfile import RECORD_DTYPE, RawSamples

    store = ResultsStore(tmp_path / "results")
    source = store.staging_dir(store.new_run_id("swap"), lock=True)
    n = 2_000
    records = np.zeros(n, dtype=RECORD_DTYPE)
    records["pair"] = np.arange(n) % 2
    records["seq"] = np.arange(n) // 2
    records["t_send_ns"] = 1_000_000_000 + np.arange(n) * 10_000
    records["t_recv_ns"] = records["t_send_ns"] + 5_000
    victim = tmp_path / "victim"
    victim.mkdir()
    made = store.staging_dir

    def swapped(run_id: str, lock: bool = False) -> Path:
        folder = made(run_id, lock)
        os.rename(folder, folder.with_name(folder.name + "-moved"))
        os.symlink(victim, folder)
        return folder

    monkeypatch.setattr(store, "staging_dir", swapped)
    job = NativeJob("none", [], {}, ("swap",), "swap", n, series=("one", "two"))
    meta = {"id": source.name, "config": {"technique": "pipeline", "pairs": 2}}
    with pytest.raises(JitterlabError, match="replaced"):
        _store_series(store, job, (source, RawSamples(records, False, False, ""), meta))
    assert list(victim.iterdir()) == []


def test_a_trace_file_that_is_not_trace_events_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``trace.file`` naming the run's own samples file (found by benchmarks/fuzz.py's
    run-files target): one line, not an internal KeyError."""
    from conftest import assert_one_line_error, run_main

    run = _traced_run(tmp_path / "store", "samples.parquet")
    code, _, err = run_main(["describe", str(run)], capsys)
    assert code == 2, err
    assert_one_line_error(err)
    assert "not trace events" in err, err

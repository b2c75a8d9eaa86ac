"""The store's folders and files (issue 24 item 7): staging 0700, nothing world-writable
whatever the umask, a store every user can write to refused before anything is staged."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from conftest import assert_one_line_error, latency_clusters, make_run, run_main


def _modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode) for p in [root, *root.rglob("*")]}


def test_umask_000_makes_nothing_world_writable(tmp_path: Path) -> None:
    store = tmp_path / "deep" / "results"
    old = os.umask(0)
    try:
        run = make_run(store, latency_clusters(3, 1_000))
    finally:
        os.umask(old)
    modes = _modes(tmp_path / "deep")
    writable = {name: f"{mode:o}" for name, mode in modes.items() if mode & 0o002}
    assert not writable, writable
    assert modes["results/.staging"] == 0o700
    assert (run.path / "run.json").is_file()


def test_a_world_writable_store_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "shared"
    store.mkdir()
    os.chmod(store, 0o777)
    csv = tmp_path / "x.csv"
    csv.write_text("latency_ns\n" + "\n".join(str(1000 + i) for i in range(200)) + "\n")
    code, _, err = run_main(["import", str(csv), "--store", str(store)], capsys)
    assert code == 2
    assert_one_line_error(err)
    assert "writable by every user" in err and "chmod o-w" in err
    assert not (store / ".staging").exists()


def test_staging_of_an_earlier_version_is_tightened(tmp_path: Path) -> None:
    store = tmp_path / "results"
    (store / ".staging").mkdir(parents=True)
    os.chmod(store / ".staging", 0o755)
    make_run(store, latency_clusters(4, 1_000))
    assert stat.S_IMODE((store / ".staging").stat().st_mode) == 0o700


def test_recover_trusts_no_draft_and_recovers_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24 item 4: a draft naming '../escaped' moved a run out of the store, and a draft
    that is `[]` was an internal error that blocked every other leftover."""
    import json

    import numpy as np

    from jitterlab.store import ResultsStore
    from jitterlab.store.rawfile import RECORD_DTYPE, write_raw_samples

    store = ResultsStore(tmp_path / "store")
    escaping = store.staging_dir(store.new_run_id("monitor", "a"))
    (escaping / "run.draft.json").write_text(json.dumps({"id": "../escaped"}))
    listing = store.staging_dir(store.new_run_id("monitor", "b"))
    (listing / "run.draft.json").write_text("[]")
    good = store.staging_dir(store.new_run_id("bench", "c"))
    records = np.zeros(100, dtype=RECORD_DTYPE)
    records["seq"] = np.arange(100)
    records["t_send_ns"] = np.arange(100) * 1_000
    records["t_recv_ns"] = records["t_send_ns"] + 5_000
    write_raw_samples(good / "samples.jlraw", records, partial=True)

    code, _, err = run_main(["recover", "--store", str(store.root)], capsys)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "not recovered" in line]
    assert len(lines) == 2, err
    assert any(escaping.name in line and "another run id" in line for line in lines)
    assert any(listing.name in line and "not a JSON object" in line for line in lines)
    assert "Traceback" not in err and "internal error" not in err
    (run,) = store.runs()
    assert run.id == good.name and run.latency_ns.size == 100
    assert not (tmp_path / "escaped").exists() and not (store.root / "escaped").exists()
    assert escaping.is_dir() and listing.is_dir()  # left in place for a person to look at


def test_a_draft_with_wrong_member_types_is_one_line_and_left_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by benchmarks/fuzz.py (target draft): a draft whose `config` is `true` was an
    internal error in `recover`, and so was a valid one whose `config` is `null`; one whose
    `doctor` is `[0]` was stored as a damaged run."""
    import json

    import numpy as np

    from jitterlab.store import ResultsStore

    store = ResultsStore(tmp_path / "store")
    bad = {}
    for name, member in (("a", {"config": True}), ("b", {"doctor": [0]}), ("c", {"config": {"pairs": "x"}})):
        staging = store.staging_dir(store.new_run_id("monitor", name))
        store.write_part(staging, 0, np.arange(10) * 1_000, np.arange(10) * 1_000 + 500, 0)
        draft = {"id": staging.name, "kind": "monitor", "config": {"pairs": 1}} | member
        (staging / "run.draft.json").write_text(json.dumps(draft))
        bad[staging.name] = staging
    good = store.staging_dir(store.new_run_id("monitor", "d"))
    store.write_part(good, 0, np.arange(10) * 1_000, np.arange(10) * 1_000 + 700, 0)
    (good / "run.draft.json").write_text(json.dumps({"id": good.name, "kind": "monitor", "config": None}))

    code, _, err = run_main(["recover", "--store", str(store.root)], capsys)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "not recovered" in line]
    assert len(lines) == 3 and all("does not match the run format" in line for line in lines), err
    assert "Traceback" not in err and "internal error" not in err
    (run,) = store.runs()
    assert run.id == good.name and run.latency_ns.tolist() == [700] * 10
    assert all(staging.is_dir() for staging in bad.values())  # left for a person to look at


def test_a_run_id_that_is_a_path_is_never_stored(tmp_path: Path) -> None:
    from jitterlab.core.errors import JitterlabError
    from jitterlab.store.schema import valid_run_id

    assert valid_run_id("20261124-200000-bench-mutex-p1-ab12")
    for bad in ("../escaped", "x/../../y", "20261124-200000-a/b", "20261124-200000-..", "", None, 7, ["x"]):
        assert not valid_run_id(bad), bad
    run = make_run(tmp_path / "s", latency_clusters(2, 100))
    store = run.path.parent
    from jitterlab.store import ResultsStore

    s = ResultsStore(store)
    staging = s.staging_dir(s.new_run_id("x"))
    with pytest.raises(JitterlabError, match="invalid run id"):
        s._publish(staging, dict(run.meta, id="../escaped"))
    assert not (store.parent / "escaped").exists()


def test_an_empty_run_never_blocks_the_stores_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24 item 9: a monitor stopped before any sample stored a 0-sample run, and from
    then on `report` over the store exited 2 "has no samples"."""
    import numpy as np

    store = tmp_path / "store"
    full = make_run(store, latency_clusters(3, 2_000))
    empty = make_run(store, np.zeros(0, dtype=np.int64))
    assert empty.meta["samples"]["rows"] == 0
    page = tmp_path / "r.html"
    code, _, err = run_main(["report", "--store", str(store), "-o", str(page)], capsys)
    assert code == 0, err
    assert f"run {empty.id} holds no samples" in err and page.stat().st_size > 0
    assert full.id in page.read_text() and empty.id not in page.read_text()
    # named on its own, it is one line and exit 2
    code, _, err = run_main(["describe", empty.id, "--store", str(store)], capsys)
    assert code == 2 and "no samples" in err and len(err.strip().splitlines()) == 1

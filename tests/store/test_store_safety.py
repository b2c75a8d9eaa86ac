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

"""Issue 42's leftovers: a store's staging entries are reached from open folder
descriptors, never by a path someone else may swap (the store's owner may rename
``.staging`` and put a link in its place while root measures in it)."""

from __future__ import annotations

import os
from pathlib import Path

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

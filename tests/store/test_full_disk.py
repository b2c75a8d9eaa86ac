"""A full disk (ENOSPC) is one line naming the folder and the space needed, exit 2, with
nothing half-written left that looks complete and every stored run untouched (issue 42 item
10). The disk is a small tmpfs the test mounts and unmounts (root only)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_one_line_error, latency_clusters, make_run, run_main
from jitterlab.store import ResultsStore

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs, unmounted afterwards whatever happened."""
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m,mode=0755", "jl-test-full", str(mount)], check=True
    )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path, leave: int) -> None:
    """Fill the disk but for about ``leave`` bytes."""
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    (disk / "filler").write_bytes(b"\0" * max(free - leave, 0))


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name != "filler")


def test_import_on_a_full_disk_is_one_line_and_leaves_nothing_half_written(
    small_disk: Path, tmp_path: Path, capsys
) -> None:
    csv = tmp_path / "big.csv"  # on the real disk: the source stays where it is
    x = latency_clusters(seed=9, n=400_000)
    sends = 1_000_000_000 + np.arange(x.size) * 10_000
    csv.write_text("t_send_ns,t_recv_ns\n" + "".join(f"{s},{s + v}\n" for s, v in zip(sends, x, strict=True)))
    store = small_disk / "store"
    ResultsStore(store).ensure_writable()
    _fill(small_disk, 200_000)
    code, _, err = run_main(["import", str(csv), "--store", str(store)], capsys)
    assert code == 2, err
    assert_one_line_error(err)
    assert "internal error" not in err and "no space left in" in err and "MB needed" in err, err
    assert str(store) in err
    assert ResultsStore(store).runs() == []
    assert not [f for f in _files(store) if f.endswith((".parquet", "run.json"))], _files(store)


def test_merge_on_a_full_disk_keeps_every_run(small_disk: Path, capsys) -> None:
    store = small_disk / "store"
    a = make_run(store, latency_clusters(seed=10, n=60_000))
    b = make_run(store, latency_clusters(seed=11, n=60_000))
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    _fill(small_disk, 50_000)
    code, _, err = run_main(["merge", a.id, b.id, "--as", "both", "--store", str(store)], capsys)
    assert code == 2, err
    assert_one_line_error(err)
    assert "internal error" not in err and "no space left in" in err, err
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
    assert sorted(r.id for r in ResultsStore(store).runs()) == sorted([a.id, b.id])


@pytest.mark.parametrize(("leave", "samples"), [(0, 1_000), (1_000_000, 100_000)])
def test_bench_on_a_full_disk_names_the_store_not_a_bad_header(
    small_disk: Path, capsys, leave: int, samples: int
) -> None:
    """The harness cannot write its raw file (nothing free) or the commit its Parquet copy
    (1 MB free for 100 000 samples): one line naming the store and the space, exit 2, never
    "bad header" or a /proc/self/fd path; what was recorded stays in .staging for recover."""
    store = small_disk / "store"
    ResultsStore(store).ensure_writable()
    _fill(small_disk, leave)
    code, _, err = run_main(
        ["bench", "--technique", "mutex", "--samples", str(samples), "--store", str(store)], capsys
    )
    assert code == 2, err
    assert_one_line_error("".join(line for line in err.splitlines(True) if "error" in line))
    assert len([line for line in err.splitlines() if not line.startswith("jitterlab bench: ")]) == 1, err
    assert f"no space left in results store {store}" in err, err
    assert "bad header" not in err and "/proc/self/fd" not in err and "internal error" not in err, err
    assert ResultsStore(store).runs() == []


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name != "filler"
    }


@pytest.mark.parametrize("point", ["committing", "samples-written"])
def test_recover_on_a_full_disk_keeps_the_leftover_for_a_later_recover(
    tmp_path: Path, capsys, point: str
) -> None:
    """Issue 42 item 10, ``recover``: a bench killed (SIGKILL, at a fault point) leaves its
    samples in .staging; ``recover`` on a disk with nothing free says in one line which store,
    how much is free and how much it needs, publishes nothing, leaves the leftover byte for
    byte as it was (nothing half-written in it or in the store), and a ``recover`` once space
    is freed stores every sample."""
    import signal
    import sys

    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=12m,mode=0755", "jl-test-full", str(disk)], check=True
    )
    try:
        store = disk / "store"
        samples = 60_000
        env = os.environ | {"JITTERLAB_KILL_AT": point}
        argv = [sys.executable, "-m", "jitterlab", "bench", "--technique", "mutex", "--samples", str(samples)]
        killed = subprocess.run(
            [*argv, "--store", str(store)], env=env, capture_output=True, text=True, timeout=300, check=False
        )
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        before = _tree(store)
        (leftover,) = ResultsStore(store).leftovers()
        _fill(disk, 0)
        code, _, err = run_main(["recover", "--store", str(store)], capsys)
        assert code == 2, err
        assert_one_line_error(err)
        assert "internal error" not in err and f"no space left in results store {store}" in err, err
        assert "free" in err and "needed" in err and leftover.name in err, err
        assert _tree(store) == before  # the leftover untouched, nothing half-written beside it
        assert ResultsStore(store).runs() == []
        (disk / "filler").unlink()
        code, _, err = run_main(["recover", "--store", str(store)], capsys)
        assert code == 0, err
        (run,) = ResultsStore(store).runs()
        assert run.latency_ns.size == samples and run.config["technique"] == "mutex"
        assert ResultsStore(store).leftovers() == []
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)

"""Every stored samples file is checked before a figure is drawn from it (issue 42 item 11):
a run whose run.json carries no SHA-256 is decoded whole first, so a damaged page is one
line naming the file, never ``internal error: OSError: delta bit width…`` in the middle of an
analysis; ``runs --strict`` checks the checksum, not only the size; one damaged run does not
stop a store-wide ``report`` (it is left out, and said so)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import assert_one_line_error, latency_clusters, make_run, run_main
from jitterlab.store.ingest import import_csv
from jitterlab.store.merge import merge
from jitterlab.store.runs import ResultsStore


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def _decodes(path: Path) -> bool:
    try:
        with pq.ParquetFile(path, pre_buffer=False) as f:
            for _ in f.iter_batches():
                pass
    except (pa.ArrowException, OSError, ValueError):
        return False
    return True


def _break_a_page(run_path: Path) -> None:
    """Flip one bit inside the data pages (seeded) where the file then no longer decodes:
    the audit's damage that a size check cannot see."""
    path = run_path / "samples.parquet"
    original = path.read_bytes()
    rng = random.Random(42)
    for _ in range(400):
        at = rng.randrange(8, len(original) // 2)  # the pages; the footer stays readable
        _flip(path, at)
        if not _decodes(path):
            return
        path.write_bytes(original)
    raise AssertionError("no single-bit flip broke the pages")


def _drop_checksum(run_path: Path) -> None:
    meta = json.loads((run_path / "run.json").read_text())
    del meta["samples"]["sha256"]
    (run_path / "run.json").write_text(json.dumps(meta))


def test_every_run_jitterlab_writes_carries_its_checksum(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "s")
    a = make_run(store.root, latency_clusters(seed=1, n=2000))
    csv = tmp_path / "x.csv"
    sends = 1_000_000 + np.arange(500) * 1_000
    received = sends + latency_clusters(seed=2, n=500)[:500]
    csv.write_text(
        "t_send_ns,t_recv_ns\n" + "".join(f"{s},{r}\n" for s, r in zip(sends, received, strict=True))
    )
    b = import_csv(csv, store)
    c = merge(store, [a.id, b.id], "both")
    for run in (a, b, c):
        stored = json.loads((run.path / "run.json").read_text())
        assert len(stored["samples"]["sha256"]) == 64, run.id


@pytest.mark.parametrize(
    "argv",
    [["describe", "RUN"], ["show", "RUN", "--percentiles", "50,99.9"], ["runs", "--percentiles", "99"]],
)
def test_a_damaged_run_without_checksum_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    store = tmp_path / "s"
    run = make_run(store, latency_clusters(seed=3, n=300_000))
    _drop_checksum(run.path)
    _break_a_page(run.path)
    code, _, err = run_main([run.id if a == "RUN" else a for a in argv] + ["--store", str(store)], capsys)
    assert "internal error" not in err, err
    if argv[0] == "runs":  # the listing names it damaged and leaves it out
        assert "damaged run" in err and "corrupt" in err, err
        return
    assert code == 2, err
    assert_one_line_error(err)
    assert "samples.parquet" in err and "corrupt" in err, err


def test_runs_strict_checks_the_checksum_not_only_the_size(tmp_path: Path, capsys) -> None:
    store = tmp_path / "s"
    good = make_run(store, latency_clusters(seed=4, n=20_000))
    bad = make_run(store, latency_clusters(seed=5, n=20_000))
    size = (bad.path / "samples.parquet").stat().st_size
    _flip(bad.path / "samples.parquet", size // 3)  # same size: only the checksum sees it
    code, out, err = run_main(["runs", "--store", str(store)], capsys)
    assert code == 0  # the cheap listing: size only
    code, out, err = run_main(["runs", "--strict", "--store", str(store)], capsys)
    assert code == 1, err
    assert f"damaged run {bad.id} left out" in err and "SHA-256" in err, err
    assert good.id in out


def test_one_damaged_run_does_not_stop_the_store_wide_report(tmp_path: Path, capsys) -> None:
    store = tmp_path / "s"
    good = make_run(store, latency_clusters(seed=6, n=20_000))
    bad = make_run(store, np.full(20_000, 7_000, np.int64))
    size = (bad.path / "samples.parquet").stat().st_size
    _flip(bad.path / "samples.parquet", size // 3)
    out = tmp_path / "report.html"
    code, _, err = run_main(["report", "-o", str(out), "--store", str(store)], capsys)
    assert code == 0, err
    assert f"damaged run {bad.id} left out" in err, err
    page = out.read_text()
    assert good.id in page and bad.id not in page


@pytest.mark.parametrize("name", ["a" * 300, "x\0y", "../samples.parquet", ".hidden"])
def test_a_samples_file_name_no_folder_can_hold_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    """Found by the run-files fuzz target: a 300-byte name was ``OSError: File name too long``."""
    from jitterlab.core.errors import CorruptRunError
    from jitterlab.store.runs import load_run

    run = make_run(tmp_path / "s", latency_clusters(seed=7, n=1000))
    meta = json.loads((run.path / "run.json").read_text())
    meta["samples"]["file"] = name
    (run.path / "run.json").write_text(json.dumps(meta))
    with pytest.raises(CorruptRunError, match=r"samples\.file"):
        load_run(run.path)

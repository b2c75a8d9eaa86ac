"""`show` answers from the summary stored at commit (issue 25, scale): only after the samples
file is checked against run.json, only when this version computed it the same way, and
always equal to reading every sample again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import assert_one_line_error, latency_clusters, make_run, run_cli, run_main
from jitterlab.core.tidy import tidy_float, tidy_json
from jitterlab.store.writer import SUMMARY_METHOD


def show(store: Path, run_id: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    code, out, err = run_main(["show", run_id, "--json", "--store", str(store), *extra], capsys)
    return code, (json.loads(out) if code == 0 else {}), err


def test_the_stored_summary_equals_reading_every_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latency = latency_clusters(5, 120_000)
    run = make_run(tmp_path / "s", latency, pairs=3)
    assert run.meta["summary"]["method"] == SUMMARY_METHOD
    _, stored, _ = show(tmp_path / "s", run.id, capsys)
    _, read, _ = show(tmp_path / "s", run.id, capsys, "--recompute")
    assert stored["summary_ns"] == read["summary_ns"]  # every figure, to the last bit
    assert stored["summary_ns"]["count"] == latency.size
    assert stored["summary_ns"]["p99_9"] == tidy_float(float(np.percentile(latency, 99.9)))  # 12 digits


def test_a_summary_of_another_method_is_not_trusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path / "s", latency_clusters(6, 50_000))
    meta_path = run.path / "run.json"
    meta = json.loads(meta_path.read_text())
    truth = dict(meta["summary"]["latency_ns"])
    # an older run (no method) whose stored p50 is off: show must read the samples instead
    del meta["summary"]["method"]
    meta["summary"]["latency_ns"]["p50"] = -1.0
    meta_path.write_text(json.dumps(meta))
    _, shown, _ = show(tmp_path / "s", run.id, capsys)
    assert shown["summary_ns"] == tidy_json(truth)  # --json: 12 significant digits (core.tidy)
    meta["summary"]["method"] = "exact-type7-blocks/0"  # a method this version does not use
    meta_path.write_text(json.dumps(meta))
    assert show(tmp_path / "s", run.id, capsys)[1]["summary_ns"] == tidy_json(truth)


def test_a_damaged_samples_file_is_named_even_with_a_stored_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path / "s", latency_clusters(7, 50_000))
    samples = run.path / "samples.parquet"
    data = bytearray(samples.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, other bytes
    samples.write_bytes(bytes(data))
    code, _, err = show(tmp_path / "s", run.id, capsys)
    assert code == 2
    assert_one_line_error(err)
    assert "samples.parquet" in err and "SHA-256" in err


@pytest.mark.parametrize("damage", ["flip", "truncate", "footer"])
def test_recompute_reads_while_checking_and_a_damaged_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    # --recompute reads the file while a thread checks its SHA-256: a damaged file is still
    # refused with the check's one line, whatever reading it raised meanwhile
    run = make_run(tmp_path / "s", latency_clusters(8, 50_000))
    samples = run.path / "samples.parquet"
    data = bytearray(samples.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        del data[len(data) // 2 :]
    else:
        data[-6] ^= 0xFF  # the footer's length: the file is no Parquet any more
    samples.write_bytes(bytes(data))
    code, _, err = show(tmp_path / "s", run.id, capsys, "--recompute")
    assert code == 2
    assert_one_line_error(err)
    assert "samples.parquet" in err and "corrupt" in err


def test_recompute_never_opens_a_fifo_in_place_of_the_samples_file(tmp_path: Path) -> None:
    # the read runs beside the check: it must not start on a FIFO, where opening blocks
    run = make_run(tmp_path / "s", latency_clusters(8, 1_000))
    samples = run.path / "samples.parquet"
    samples.unlink()
    os.mkfifo(samples)
    done = run_cli("show", run.id, "--store", str(tmp_path / "s"), "--recompute", timeout=60)
    assert done.returncode == 2
    assert_one_line_error(done.stderr)
    assert "samples.parquet" in done.stderr


def test_time_columns_are_delta_packed(tmp_path: Path) -> None:
    run = make_run(tmp_path / "s", latency_clusters(8, 20_000))
    meta = pq.ParquetFile(run.path / "samples.parquet").metadata.row_group(0)
    columns = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
    for name in ("seq", "t_send_ns", "t_recv_ns"):
        assert "DELTA_BINARY_PACKED" in columns[name].encodings
    assert columns["t_send_ns"].compression == "UNCOMPRESSED"
    assert columns["pair"].compression == "ZSTD"
    assert np.array_equal(run.latency_ns, latency_clusters(8, 20_000))

"""The one reader (issue 37): a run's samples file is verified once per command, whatever
number of passes read it, and read through store/reader.py."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import latency_clusters, make_run, run_main


def _counting_sha256(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every SHA-256 started from now on, counted (the verification hashes the whole file)."""
    made: list[int] = []
    real = hashlib.sha256

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(hashlib, "sha256", counted)
    return made


@pytest.mark.parametrize(
    "extra",
    [[], ["--from", "0.1s", "--to", "0.5s"], ["--test", "gesd"]],
    ids=["plain", "span", "gesd"],
)
def test_describe_hashes_the_samples_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    """A plain describe hashed the file three times (its passes, the latency views and the
    intervals each verified it again), with --from/--to four times."""
    run = make_run(tmp_path / "s", latency_clusters(3, 20_000))
    made = _counting_sha256(monkeypatch)
    code, out, err = run_main(["describe", run.id, "--store", str(tmp_path / "s"), "--json", *extra], capsys)
    assert code == 0, err
    assert '"summary"' in out
    assert len(made) == 1


def test_a_damaged_file_is_named_by_the_reader_before_any_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path / "s", np.arange(1_000, 101_000, dtype=np.int64))
    path = run.path / "samples.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    for command in (["describe", run.id], ["show", run.id, "--recompute"]):
        code, out, err = run_main([*command, "--store", str(tmp_path / "s")], capsys)
        assert code == 2 and out == ""
        assert err.strip() == f"jitterlab: error: {path}: corrupt (SHA-256 differs from run.json)"


def test_the_first_send_time_is_one_function() -> None:
    """merge's and --from/--to's first send time are the reader's (row-group statistics)."""
    from jitterlab.store import merge, reader, span

    assert span.first_send_ns is reader.first_send_ns
    assert merge.first_send_ns is reader.first_send_ns

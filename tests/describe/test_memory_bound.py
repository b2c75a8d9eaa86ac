"""A run too large for the asked analysis never dies of memory (issue 25, Bad input): what
streams streams; what must hold the whole run refuses first, in one line naming the bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_one_line_error, latency_clusters, make_run, run_main


def test_an_analysis_that_would_not_fit_refuses_in_one_line_and_streaming_ones_go_on(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run = make_run(store, latency_clusters(11, 60_000))
    rows = run.meta["samples"]["rows"]
    monkeypatch.setenv("JITTERLAB_MEMORY_LIMIT_MB", "1")  # far below rows × 80 B
    out_file = str(tmp_path / "out.csv")
    model_file = str(tmp_path / "model.json")
    code, out, err = run_main(
        ["model", "build", run.id, "--kde", "-o", model_file, "--store", str(store)], capsys
    )
    assert code == 2 and out == "" and not Path(model_file).exists()
    assert_one_line_error(err)
    assert f"all {rows:,} samples" in err and "GB available" in err and "without --kde" in err
    # export streams every format (issue 25 item 3), so does model build without --kde
    for fmt in ("csv", "parquet"):
        code, _, err = run_main(
            ["export", run.id, "--format", fmt, "--from", "0.1", "-o", out_file, "--store", str(store)],
            capsys,
        )
        assert code == 0, (fmt, err)
    code, _, err = run_main(["model", "build", run.id, "-o", model_file, "--store", str(store)], capsys)
    assert code == 0, err
    # describe streams whatever the test and the time range (issue 25 item 1)
    streamed = {}
    for args in ([], ["--test", "gesd"], ["--test", "walsh"], ["--from", "0.1", "--to", "0.4"]):
        code, out, err = run_main(["describe", run.id, "--store", str(store), "--json", *args], capsys)
        assert code == 0, (args, err)
        streamed[" ".join(args)] = json.loads(out)
    assert streamed[""]["summary_ns"]["count"] == rows
    assert 0 < streamed["--from 0.1 --to 0.4"]["summary_ns"]["count"] < rows
    code, out, _ = run_main(["show", run.id, "--store", str(store), "--json", "--recompute"], capsys)
    assert code == 0 and json.loads(out)["summary_ns"]["count"] == rows
    monkeypatch.setenv("JITTERLAB_MEMORY_LIMIT_MB", "1000")  # room enough: held in memory as before
    code, _, err = run_main(
        ["model", "build", run.id, "--kde", "-o", model_file, "--store", str(store)], capsys
    )
    assert code == 0, err

"""`describe --test gesd|walsh` and `describe --from/--to` read a stored run in row groups
(issue 25 item 1) and give exactly what the in-memory path gives: summary, thresholds,
categories sample for sample, windows, percentiles and views."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import assert_one_line_error, make_run, run_main, spiky
from jitterlab.core.errors import JitterlabError
from jitterlab.core.tidy import tidy_json
from jitterlab.describe.analysis import (
    describe_run,
    description_json,
    latency_views,
    run_percentiles,
    time_range,
)
from jitterlab.describe.export import ExportOptions, export_bytes
from jitterlab.store import load_run, writer
from jitterlab.store.reader import count_kept, first_send_ns
from jitterlab.store.span import time_span

N = 240_000


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Runs of several row groups (2^15 rows each): 3 pairs interleaved in send time; 4
    pairs stored pair after pair (send times out of order across row groups); all values
    equal; 50 samples."""
    root = tmp_path_factory.mktemp("store")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(writer, "ROW_GROUP_ROWS", 1 << 15)
        interleaved = make_run(
            root, spiky(1, N, far_spikes=True), t_send=1_000_000_000 + np.arange(N) * 125_000, pairs=3
        )
        per_pair = N // 4
        t = np.concatenate([5_000_000_000 + np.arange(per_pair) * 100_000 + p * 7_000 for p in range(4)])
        by_pair = make_run(root, spiky(2, N, far_spikes=True), t_send=t, pairs=4)
        equal = make_run(root, np.full(100_000, 20_000, np.int64))
        tiny = make_run(root, spiky(3, 50, far_spikes=True))
    assert pq.ParquetFile(interleaved.path / "samples.parquet").metadata.num_row_groups == 8
    return {"interleaved": interleaved.path, "by pair": by_pair.path, "equal": equal.path, "tiny": tiny.path}


def in_memory(
    path: Path, test: str, from_s: float | None = None, to_s: float | None = None
) -> dict[str, object]:
    run = load_run(path)
    run.table  # noqa: B018 - read the samples: describe_run takes the in-memory path
    run = time_range(run, from_s, to_s)
    return description_json(describe_run(run, test, 700_000_000))


def streamed(
    path: Path, test: str, from_s: float | None = None, to_s: float | None = None
) -> dict[str, object]:
    run = load_run(path)
    span = time_span(run, from_s, to_s)
    d = describe_run(run, test, 700_000_000, span=span)
    assert not run.loaded, "the streamed path read the whole run"
    assert d.ordered is None
    return description_json(d)


@pytest.mark.parametrize("test", ["gesd", "walsh"])
@pytest.mark.parametrize("name", ["interleaved", "by pair", "equal"])
def test_other_tests_streamed_equal_in_memory(stored: dict[str, Path], test: str, name: str) -> None:
    got = streamed(stored[name], test)
    assert got == in_memory(stored[name], test)
    if name != "equal":
        assert got["thresholds_ns"], "the test found no outlier category"
    else:
        assert got["thresholds_ns"] == [] and len(got["categories"]) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize("test", ["stacked-z", "gesd", "walsh"])
@pytest.mark.parametrize(("from_s", "to_s"), [(1.0, 4.5), (None, 2.0), (3.5, None), (-1.0, 0.5), (2.1, 2.3)])
def test_time_span_streamed_equals_in_memory(
    stored: dict[str, Path], test: str, from_s: float | None, to_s: float | None
) -> None:
    for name in ("interleaved", "by pair"):
        assert streamed(stored[name], test, from_s, to_s) == in_memory(stored[name], test, from_s, to_s)


def test_span_skips_row_groups_and_counts_exactly(stored: dict[str, Path]) -> None:
    run = load_run(stored["interleaved"])
    path = run.path / "samples.parquet"
    t = run.t_send_ns
    assert first_send_ns(path) == int(t.min())
    span = time_span(run, 3.0, 7.0)
    assert span is not None
    keep = (t >= t.min() + 3 * 10**9) & (t <= t.min() + 7 * 10**9)
    assert count_kept(path, span) == int(keep.sum())
    touched = []
    f = pq.ParquetFile(path)
    for i in range(f.metadata.num_row_groups):
        stats = f.metadata.row_group(i).column(2).statistics
        touched.append(span.meets(int(stats.min), int(stats.max)))
    assert 0 < sum(touched) < len(touched)  # some row groups are never read


def test_views_and_percentiles_of_a_span(stored: dict[str, Path]) -> None:
    run = load_run(stored["by pair"])
    span = time_span(run, 2.0, 4.0)
    ps = (50.0, 99.9, 100.0)
    views = latency_views(run, 100_000, span=span)
    chosen = run_percentiles(run, ps, span=span)
    assert not run.loaded
    whole = time_range(load_run(stored["by pair"]), 2.0, 4.0)
    assert views == latency_views(whole, 100_000)
    assert chosen == run_percentiles(whole, ps)


def test_cli_span_json_equals_in_memory(stored: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    run = load_run(stored["interleaved"])
    store = str(run.path.parent)
    for test in ("gesd", "walsh", "stacked-z"):
        args = ["describe", run.id, "--json", "--test", test, "--from", "4", "--to", "12", "--store", store]
        code, out, err = run_main([*args, "--window", "700ms", "--percentiles", "50,99.99,max"], capsys)
        assert code == 0, err
        got = json.loads(out)
        expected = in_memory(stored["interleaved"], test, 4.0, 12.0)
        for key, value in expected.items():
            assert got[key] == tidy_json(value), key  # --json: 12 significant digits (core.tidy)
        inside = time_range(load_run(stored["interleaved"]), 4.0, 12.0).latency_ns
        assert got["summary_ns"]["count"] == inside.size
        assert got["percentiles_ns"]["max"] == float(inside.max())


def test_tiny_runs_and_empty_spans_are_refused_in_one_line(
    stored: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    tiny = load_run(stored["tiny"])
    big = load_run(stored["by pair"])
    store = str(tiny.path.parent)
    few = time_range(load_run(stored["by pair"]), 1.0, 1.0002).latency_ns.size
    assert 0 < few <= 60
    cases = [
        (["describe", tiny.id, "--test", "walsh"], "needs more than 60 samples (this run has 50)"),
        (["describe", big.id, "--test", "walsh", "--from", "1", "--to", "1.0002"], f"(this run has {few})"),
        (["describe", big.id, "--from", "500", "--to", "600"], "no samples sent between 500 s and 600 s"),
        (["describe", big.id, "--from", "500"], "no samples sent between 500 s and the end"),
        (["describe", big.id, "--to", "-1"], "no samples sent between the start and -1 s"),
        (
            ["describe", big.id, "--test", "gesd", "--baseline", tiny.id],
            "--baseline works with --test stacked-z",
        ),
    ]
    for args, message in cases:
        code, out, err = run_main([*args, "--store", store], capsys)
        assert code == 2 and out == "", args
        assert_one_line_error(err)
        assert message in err, err
    code, out, err = run_main(["describe", tiny.id, "--test", "gesd", "--json", "--store", store], capsys)
    assert code == 0, err
    assert json.loads(out)["summary_ns"]["count"] == 50
    for from_s, to_s, between in [(500.0, None, "500 s and the end"), (None, -1.0, "the start and -1 s")]:
        for restrict in (time_range, time_span):  # in memory and as the reader's span: one message
            with pytest.raises(JitterlabError, match=f"no samples sent between {between}$"):
                restrict(big, from_s, to_s)


@pytest.mark.parametrize("fmt", ["hgrm", "hlog"])
@pytest.mark.parametrize(("from_s", "to_s"), [(1.0, 4.5), (None, 2.0), (3.5, None)])
def test_export_histograms_of_a_span_stream(
    stored: dict[str, Path], fmt: str, from_s: float | None, to_s: float | None
) -> None:
    """export --format hgrm|hlog --from/--to reads the span in row groups: the same bytes as
    from the samples in memory."""
    options = ExportOptions(window_ns=700_000_000, from_s=from_s, to_s=to_s)
    for name in ("interleaved", "by pair"):
        run = load_run(stored[name])
        got = export_bytes(run, fmt, options)
        assert not run.loaded
        whole = load_run(stored[name])
        whole.table  # noqa: B018 - read the samples: the in-memory export
        assert got == export_bytes(whole, fmt, options)
        assert len(got) > 100

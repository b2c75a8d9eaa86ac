"""`describe` with the stacked z-score test reads a stored run in row groups (issue 25
item 1) and gives exactly what the in-memory path gives: summary, thresholds, categories
sample for sample, windows, baseline screening."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import assert_one_line_error, make_run, run_main, spiky
from jitterlab.core.tidy import tidy_json
from jitterlab.describe import analysis
from jitterlab.describe.analysis import describe_run, description_json, latency_views
from jitterlab.describe.export import ExportOptions, export_bytes
from jitterlab.stats import percentiles, stacked_z_test
from jitterlab.stats.quantile_ci import is_resolved
from jitterlab.store import load_run


def both_paths(
    run_path: Path, two_sided: bool = False, window_ns: int = 1_000_000_000, baseline: Path | None = None
) -> tuple[dict[str, object], dict[str, object]]:
    """description_json of the streamed path and of the in-memory path (samples read first)."""
    options = {"two_sided": two_sided, "window_ns": window_ns}
    streamed_run = load_run(run_path)
    streamed_base = load_run(baseline) if baseline else None
    streamed = describe_run(streamed_run, baseline=streamed_base, **options)  # type: ignore[arg-type]
    assert not streamed_run.loaded, "the streamed path read the whole run"
    whole = load_run(run_path)
    whole.table  # noqa: B018 - read the samples: describe_run takes the in-memory path
    whole_base = load_run(baseline) if baseline else None
    if whole_base is not None:
        whole_base.table  # noqa: B018
    in_memory = describe_run(whole, baseline=whole_base, **options)  # type: ignore[arg-type]
    assert in_memory.ordered is not None and streamed.ordered is None
    return description_json(streamed), description_json(in_memory)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run of 3 pairs and 1.2 M samples (two row groups: 2^20 rows and the rest, so the
    boundary cuts a pair), and a clean baseline."""
    root = tmp_path_factory.mktemp("store")
    n = 1_200_000
    t_send = 1_000_000_000 + np.arange(n) * 25_000  # 30 s; pairs interleaved in send time
    run = make_run(root, spiky(1, n), t_send=t_send, pairs=3)
    assert pq.ParquetFile(run.path / "samples.parquet").metadata.num_row_groups == 2
    base = make_run(root, spiky(2, 300_000), pairs=3)
    return run.path, base.path


@pytest.mark.parametrize("two_sided", [False, True])
def test_describe_streamed_equals_in_memory(stored: tuple[Path, Path], two_sided: bool) -> None:
    streamed, in_memory = both_paths(stored[0], two_sided=two_sided, window_ns=700_000_000)
    assert streamed == in_memory
    assert len(streamed["thresholds_ns"]) >= 2  # type: ignore[arg-type]


def test_describe_takes_the_two_pass_path_and_the_radix_path_agrees(
    stored: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored run is described in two passes (stats/twopass.py), not by the fallback;
    with the kernels out of reach the radix passes give the same description."""
    taken: list[bool] = []
    real = analysis.describe_two_pass

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = real(*args, **kwargs)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(analysis, "describe_two_pass", spy)
    two_pass = description_json(describe_run(load_run(stored[0]), two_sided=True))
    assert taken == [True]
    from jitterlab.stats import kernels

    monkeypatch.setattr(kernels, "available", lambda: False)  # the engine's two_pass: None
    radix = description_json(describe_run(load_run(stored[0]), two_sided=True))
    assert taken == [True] and radix == two_pass


def test_describe_streamed_baseline_equals_in_memory(stored: tuple[Path, Path]) -> None:
    streamed, in_memory = both_paths(stored[0], baseline=stored[1])
    assert streamed == in_memory
    assert streamed["screening"] is not None


def test_latency_views_streamed(stored: tuple[Path, Path]) -> None:
    run = load_run(stored[0])
    streamed = latency_views(run, expected_interval_ns=25_000)
    assert not run.loaded
    run.table  # noqa: B018
    assert latency_views(run, expected_interval_ns=25_000) == streamed


def test_describe_cli_json(stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    run = load_run(stored[0])
    code, out, err = run_main(
        ["describe", run.id, "--json", "--window", "5s", "--store", str(run.path.parent)], capsys
    )
    assert code == 0, err
    got = json.loads(out)
    assert got["summary_ns"]["count"] == 1_200_000
    assert sum(c["count"] for c in got["categories"]) == 1_200_000
    assert sum(r["count"] for r in got["windows"]["rows"]) == 1_200_000


def _resolved(x: np.ndarray, ps: tuple[float, ...]) -> list[float | None]:
    """The exact percentiles, None where the sample does not resolve the level (issue 38)."""
    return [
        float(v) if p == 100 or is_resolved(x.size, p) else None
        for p, v in zip(ps, percentiles(x, ps), strict=True)
    ]


def test_describe_percentiles(stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    run = load_run(stored[0])
    store = str(run.path.parent)
    ps = (25.0, 99.9, 99.999, 100.0)
    args = ["describe", run.id, "--json", "--percentiles", "25,99.9,99.999,max", "--store", store]
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    got = json.loads(out)["percentiles_ns"]
    assert list(got) == ["p25", "p99.9", "p99.999", "max"]
    assert list(got.values()) == tidy_json(_resolved(run.latency_ns, ps))
    # a time range: the percentiles of the samples in it
    code, out, err = run_main([*args, "--from", "10", "--to", "20"], capsys)
    assert code == 0, err
    t = run.t_send_ns - run.t_send_ns.min()
    inside = run.latency_ns[(t >= 10 * 10**9) & (t <= 20 * 10**9)]
    assert list(json.loads(out)["percentiles_ns"].values()) == tidy_json(_resolved(inside, ps))
    code, out, _ = run_main(["describe", run.id, "--percentiles", "99.9", "--store", store], capsys)
    assert code == 0 and "p99.9" in out
    for bad in ("0", "abc", "50,,90"):
        code, _, err = run_main(["describe", run.id, "--percentiles", bad, "--store", store], capsys)
        assert_one_line_error(err)
        assert code == 2, (bad, err)


@pytest.mark.parametrize("fmt", ["hgrm", "hlog"])
def test_export_histograms_streamed_equal_in_memory(stored: tuple[Path, Path], fmt: str) -> None:
    options = ExportOptions(
        window_ns=3_000_000_000, percentiles=(50.0, 99.9, 100.0) if fmt == "hgrm" else None
    )
    streamed_run = load_run(stored[0])
    streamed = export_bytes(streamed_run, fmt, options)
    assert not streamed_run.loaded
    whole = load_run(stored[0])
    whole.table  # noqa: B018
    assert streamed == export_bytes(whole, fmt, options)
    assert len(streamed) > 100


def test_runs_percentiles(stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    store = str(stored[0].parent)
    code, out, err = run_main(["runs", "--json", "--percentiles", "50,99.99,max", "--store", store], capsys)
    assert code == 0, err
    rows = {r["id"]: r for r in json.loads(out)}
    for path in stored:
        run = load_run(path)
        expected = [float(v) for v in percentiles(run.latency_ns, (50.0, 99.99, 100.0))]
        assert list(rows[run.id]["percentiles_ns"].values()) == tidy_json(expected)  # --json: 12 digits
        assert list(rows[run.id]["percentiles_ns"]) == ["p50", "p99.99", "max"]
    code, out, err = run_main(["runs", "--percentiles", "99.9", "--store", store], capsys)
    assert code == 0 and "p99.9" in out.splitlines()[0] and "p99 " not in out.splitlines()[0], out
    code, _, err = run_main(["runs", "--percentiles", "0", "--store", store], capsys)
    assert code == 2
    assert_one_line_error(err)


@pytest.mark.parametrize(
    ("lowest", "highest"),
    # found by the long fuzz run (issue 24, seed 51): a minimum above the maximum, 1e308
    [(None, "keep"), (1e308, "keep"), ("keep", -1e-308), (-1e300, -1e300), (2.0**63, 2.0**64)],
    ids=["min-null", "min-1e308", "max-below-min", "both-beyond-int64", "beyond-int64"],
)
def test_a_stored_summary_without_extremes_is_described_by_the_radix_passes(
    tmp_path: Path, lowest: object, highest: object
) -> None:
    """run.json is not covered by the samples' SHA-256: a stored summary whose minimum is null,
    above its maximum or beyond int64 (a damaged or hand-edited run.json; found by the fuzzer)
    must not size the two-pass kernels' arrays (it was an internal error). The radix passes
    describe the run instead."""
    x = spiky(3, 20_000)
    run = make_run(tmp_path, x, pairs=2)
    meta_path = run.path / "run.json"
    meta = json.loads(meta_path.read_text())
    figures = meta["summary"]["latency_ns"]
    figures["min"] = figures["min"] if lowest == "keep" else lowest
    figures["max"] = figures["max"] if highest == "keep" else highest
    meta_path.write_text(json.dumps(meta))
    d = describe_run(load_run(run.path))
    assert d.categories == stacked_z_test(x)
    assert int(d.windows.count.sum()) == x.size


def whole_table_bytes(run_path: Path, fmt: str, span: tuple[float, float] | None) -> bytes:
    """What export wrote before it streamed: the whole table (of the span) encoded at once."""
    import io

    import pyarrow as pa
    import pyarrow.csv as pacsv

    run = load_run(run_path)
    if span is not None:
        run = analysis.time_range(run, *span)
    buffer = io.BytesIO()
    table = run.table.append_column("latency_ns", pa.array(run.latency_ns))  # both have it (issue 43 item 4)
    if fmt == "csv":
        pacsv.write_csv(table, buffer)
    else:
        pq.write_table(table, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("span", [None, (4.0, 27.5)])
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_csv_and_parquet_stream_the_same_bytes(
    stored: tuple[Path, Path], tmp_path: Path, fmt: str, span: tuple[float, float] | None
) -> None:
    """Issue 25 item 3: CSV and Parquet exports held the whole run (export_bytes); they now
    stream row group by row group through the atomic writer, byte for byte the file the
    whole table gave (1.2 M rows in two row groups; a span that cuts both)."""
    from jitterlab.describe.export import export_run

    run = load_run(stored[0])
    out = tmp_path / f"out.{fmt}"
    options = ExportOptions(from_s=span[0], to_s=span[1]) if span else ExportOptions()
    export_run(run, fmt, out, options)
    assert not run.loaded, "the export read the whole run"
    want = whole_table_bytes(stored[0], fmt, span)
    if fmt == "csv":
        assert out.read_bytes() == want
    else:  # the same rows, columns and row groups (the footer's metadata may differ)
        import io

        got, whole = pq.ParquetFile(out), pq.ParquetFile(io.BytesIO(want))
        assert got.read().equals(whole.read())
        assert [got.metadata.row_group(i).num_rows for i in range(got.num_row_groups)] == [
            whole.metadata.row_group(i).num_rows for i in range(whole.num_row_groups)
        ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # no temporary file left


def test_export_csv_memory_does_not_grow_with_the_run(
    stored: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CSV export of 1.2 M samples read 32,768 at a time: the numpy and Python
    allocations peak far below one whole latency column (9.6 MB), which the old export
    held beside the table."""
    import tracemalloc

    from jitterlab.describe import export
    from jitterlab.store import reader

    monkeypatch.setattr(reader, "READ_BATCH_ROWS", 32_768)
    run = load_run(stored[0])
    export.export_run(run, "csv", tmp_path / "warm.csv", ExportOptions(from_s=0.0, to_s=0.5))
    tracemalloc.start()
    try:
        export.export_run(run, "csv", tmp_path / "out.csv", ExportOptions(from_s=1.0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3_000_000, f"peak {peak / 1e6:.1f} MB: the export held the run"


def test_spike_attribution_of_a_traced_run_streams_equal_to_in_memory(tmp_path: Path) -> None:
    """Issue 25: the spike attribution of a traced run read the whole run (and describe
    --from/--to of a traced run restricted it in memory). It now reads the spikes' pairs and
    times in row groups, of the span too: the same block as from the samples in memory."""
    from jitterlab.core.fileio import atomic_write_json
    from jitterlab.describe.analysis import restrict
    from jitterlab.store.trace import TRACE_FILE, TraceEvents, write_trace_events

    n = 40_000
    latency = spiky(9, n)
    run = make_run(tmp_path / "s", latency, t_send=1_000_000_000 + np.arange(n) * 1_000_000, pairs=2)
    starts = run.t_send_ns
    ticks = np.sort(starts[::3] + 1)  # an event inside a third of the samples: some spikes have none
    events = TraceEvents({3: ticks, 5: ticks}, {3: ["timer tick"] * ticks.size, 5: ["irq"] * ticks.size}, {})
    write_trace_events(run.path / TRACE_FILE, events)
    run.meta["trace"] = {
        "available": True,
        "tool": "perf",
        "events": {"irq": int(ticks.size)},
        "file": TRACE_FILE,
        "in_vm": False,
        "spike_cpu": {"available": True, "from": "receiver", "cpu_of_pair": [3, 5]},
    }
    atomic_write_json(run.path / "run.json", run.meta)
    for span in (None, (5.0, 30.0)):
        streamed_run, streamed_span = restrict(load_run(run.path), *(span or (None, None)))
        streamed = describe_run(streamed_run, span=streamed_span)
        assert not streamed_run.loaded, "the traced run was read whole"
        whole = load_run(run.path)
        whole.table  # noqa: B018 - in memory: describe_run and the attribution use its columns
        whole, _ = restrict(whole, *(span or (None, None)))
        in_memory = describe_run(whole)
        assert streamed.attribution == in_memory.attribution
        assert streamed.attribution is not None and streamed.attribution["spikes"] > 0
        assert 0 < streamed.attribution["attributed"] < streamed.attribution["spikes"]

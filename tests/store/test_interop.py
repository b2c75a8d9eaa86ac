"""Imports and exports: HdrHistogram files read back, CSV files of samples, damaged input.
(Java's HdrHistogram reading what jitterlab writes: test_hdr_oracle.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from conftest import latency_clusters, make_run, run_cli
from jitterlab import load_run
from jitterlab.describe.export import ExportOptions, export_run
from jitterlab.store import ResultsStore
from jitterlab.store.hdr.histogram import Histogram
from jitterlab.store.hdr.log import LogReader
from jitterlab.store.ingest import import_file

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)


def direct_histogram(values: np.ndarray) -> Histogram:
    h = Histogram.auto(3)
    h.record(values)
    return h


def read_back(path: Path) -> list[Histogram]:
    with open(path, "rb") as f:
        return [i.histogram for i in LogReader(f, str(path)).intervals()]  # type: ignore[misc]


def test_hlog_round_trip_keeps_every_value_in_its_bucket(tmp_path: Path) -> None:
    latency = latency_clusters(11, 20_000)
    run = make_run(tmp_path / "store", latency)
    out = tmp_path / "run.hlog"
    export_run(run, "hlog", out, ExportOptions(window_ns=50_000_000))
    intervals = read_back(out)
    assert len(intervals) > 1
    merged = Histogram.auto(3)
    for h in intervals:
        merged.add(h)
    reference = direct_histogram(latency)
    assert merged.total == latency.size
    for p in PERCENTILES:
        assert merged.value_at_percentile(p) == reference.value_at_percentile(p)
    assert merged.max == reference.max

    imported = import_file(out, ResultsStore(tmp_path / "imported"))
    assert imported.histogram_only
    summary = imported.meta["summary"]["latency_ns"]
    assert summary["count"] == latency.size
    assert summary["p99"] == reference.value_at_percentile(99.0)
    assert summary["p99_9"] == reference.value_at_percentile(99.9)


def test_hgrm_is_hdrhistograms_percentile_distribution(tmp_path: Path) -> None:
    run = make_run(tmp_path / "store", latency_clusters(2, 5_000))
    out = tmp_path / "run.hgrm"
    export_run(run, "hgrm", out)
    text = out.read_text()
    assert "Value     Percentile TotalCount 1/(1-Percentile)" in text
    # the footer as Java's HdrHistogram writes it, every figure in the same unit (µs here)
    mean_line, max_line = (line for line in text.splitlines() if line.startswith(("#[Mean", "#[Max")))
    mean = float(mean_line.split("=")[1].split(",")[0])
    std = float(mean_line.split("=")[2].rstrip("]"))
    maximum = float(max_line.split("=")[1].split(",")[0])
    assert int(max_line.split("=")[2].rstrip("]")) == run.latency_ns.size and "Total count    =" in max_line
    latency_us = run.latency_ns / 1e3
    assert abs(mean - latency_us.mean()) / latency_us.mean() < 0.01
    assert abs(std - latency_us.std()) / latency_us.std() < 0.02
    assert abs(maximum - latency_us.max()) / latency_us.max() < 0.001


def test_hlog_interval_max_is_the_max_in_milliseconds_not_floored(tmp_path: Path) -> None:
    run = make_run(tmp_path / "store", latency_clusters(4, 20_000))  # maxima far below 1 ms
    out = tmp_path / "x.hlog"
    export_run(run, "hlog", out, ExportOptions(window_ns=50_000_000))
    lines = [line for line in out.read_text().splitlines() if line and line[0].isdigit()]
    histograms = read_back(out)
    assert len(histograms) == len(lines)
    for line, histogram in zip(lines, histograms, strict=True):
        logged_max = float(line.split(",")[2])
        assert logged_max > 0
        assert abs(logged_max - histogram.max / 1e6) <= 0.0005


def test_csv_and_parquet_exports_round_trip(tmp_path: Path) -> None:
    latency = latency_clusters(3, 2_000)
    run = make_run(tmp_path / "store", latency, pairs=2)
    export_run(run, "parquet", tmp_path / "s.parquet")
    assert pq.read_table(tmp_path / "s.parquet").num_rows == latency.size
    export_run(run, "csv", tmp_path / "s.csv")
    back = import_file(tmp_path / "s.csv", ResultsStore(tmp_path / "imported"))
    assert np.array_equal(np.sort(back.latency_ns), np.sort(latency))
    assert set(back.pair.tolist()) == {0, 1}


def test_histogram_only_run_works_where_it_can_and_says_where_it_cannot(tmp_path: Path) -> None:
    run = make_run(tmp_path / "store", latency_clusters(4, 5_000))
    export_run(run, "hlog", tmp_path / "x.hlog")
    store = tmp_path / "imported"
    result = run_cli("import", str(tmp_path / "x.hlog"), "--store", str(store))
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.strip()
    shown = run_cli("show", run_id, "--store", str(store))
    assert shown.returncode == 0 and "p99" in shown.stdout
    described = run_cli("describe", run_id, "--store", str(store))
    assert described.returncode == 0
    assert "need raw samples" in described.stderr
    assert "intervals of " in described.stdout
    compared = run_cli("compare", run_id, run_id, "--store", str(store))
    assert compared.returncode == 2 and "raw samples" in compared.stderr
    assert load_run(run_id, store=store).histogram_only


def test_import_rejects_bad_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.hlog"
    bad.write_text("this is not a histogram log\n")
    result = run_cli("import", str(bad), "--store", str(tmp_path / "s"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    other = tmp_path / "x.txt"
    other.write_text("1,2,3")
    result = run_cli("import", str(other), "--store", str(tmp_path / "s"))
    assert result.returncode == 2 and ".hlog" in result.stderr


def test_report_includes_a_histogram_only_run(tmp_path: Path) -> None:
    store = tmp_path / "s"
    run = make_run(store, latency_clusters(5, 5_000))
    export_run(run, "hlog", tmp_path / "x.hlog")
    import_file(tmp_path / "x.hlog", ResultsStore(store))
    out = tmp_path / "r.html"
    result = run_cli("report", "-o", str(out), "--store", str(store))
    assert result.returncode == 0, result.stderr
    html = out.read_text()
    assert "histogram-only import" in html and "need raw samples" in html


BAD_CSV_ROWS = {
    "nan": ("t_send_ns,t_recv_ns\n0,10\n5,nan\n", "line 3: t_recv_ns is not a finite number"),
    "inf": ("latency_ns\n10\ninf\n", "line 3: latency_ns is not a finite number"),
    "huge": ("latency_ns\n10\n1e30\n", "line 3: latency_ns is out of range"),
    "negative": ("latency_ns\n10\n-4\n", "line 3: latency_ns is negative"),
    "backwards": ("t_send_ns,t_recv_ns\n0,10\n50,20\n", "line 3: t_recv_ns is before t_send_ns"),
    "text": ("latency_ns\n10\nfast\n", "line 3: latency_ns is not a finite number"),
    "a day": ("latency_ns\n10\n100000000000000\n", "line 3: the latency is longer than a day"),
}


def test_csv_values_that_are_not_latencies_are_refused_with_their_line(tmp_path: Path) -> None:
    for name, (text, message) in BAD_CSV_ROWS.items():
        path = tmp_path / f"{name.replace(' ', '_')}.csv"
        path.write_text(text)
        result = run_cli("import", str(path), "--store", str(tmp_path / "s"))
        assert result.returncode == 2, name
        assert message in result.stderr, (name, result.stderr)
    assert not (tmp_path / "s").exists() or ResultsStore(tmp_path / "s").runs() == []


def test_a_header_with_a_stray_carriage_return_is_one_line(tmp_path: Path) -> None:
    # found by benchmarks/fuzz.py (target csv, seed 2): was an internal error (_csv.Error)
    path = tmp_path / "cr.csv"
    path.write_bytes(b"t_send_n\r\rs,t_recv_ns\n1000,1062\n")
    result = run_cli("import", str(path), "--store", str(tmp_path / "s"))
    assert result.returncode == 2, result.stderr
    assert "cannot read CSV" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_skip_invalid_drops_and_counts_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "mixed.csv"
    path.write_text("latency_ns\n10\nnan\n-3\n20\n30\n")
    result = run_cli("import", str(path), "--skip-invalid", "--store", str(tmp_path / "s"))
    assert result.returncode == 0, result.stderr
    assert "skipped 2 invalid rows (first: line 3" in result.stderr
    (run,) = ResultsStore(tmp_path / "s").runs()
    assert run.latency_ns.tolist() == [10, 20, 30] and run.config["rows_skipped"] == 2


def test_a_header_only_csv_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("t_send_ns,t_recv_ns\n")
    result = run_cli("import", str(path), "--store", str(tmp_path / "s"))
    assert result.returncode == 2 and "no samples" in result.stderr


def test_an_hlog_still_being_written_keeps_its_complete_intervals(tmp_path: Path) -> None:
    run = make_run(tmp_path / "store", latency_clusters(3, 20_000))
    whole = tmp_path / "whole.hlog"
    export_run(run, "hlog", whole, ExportOptions(window_ns=50_000_000))
    text = whole.read_text()
    cut = tmp_path / "cut.hlog"
    cut.write_text(text[: len(text) - 40])  # mid-way through the last interval's base64
    result = run_cli("import", str(cut), "--store", str(tmp_path / "s"))
    assert result.returncode == 0, result.stderr
    assert "cut off" in result.stderr
    (imported,) = ResultsStore(tmp_path / "s").runs()
    assert imported.partial and "cut off" in imported.meta["partial_reason"]
    complete = [line for line in text.splitlines() if line and line[0].isdigit()]
    assert imported.meta["histogram"]["intervals"] == len(complete) - 1


def test_a_damaged_interval_inside_an_hlog_is_one_line(tmp_path: Path) -> None:
    run = make_run(tmp_path / "store", latency_clusters(3, 20_000))
    whole = tmp_path / "whole.hlog"
    export_run(run, "hlog", whole, ExportOptions(window_ns=50_000_000))
    lines = whole.read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line[0].isdigit())
    payload = lines[first].rstrip("\n")
    lines[first] = payload[:-30] + ("A" if payload[-30] != "A" else "B") + payload[-29:] + "\n"
    bad = tmp_path / "bad.hlog"
    bad.write_text("".join(lines))
    result = run_cli("import", str(bad), "--store", str(tmp_path / "s"))
    assert result.returncode == 2, result.stderr
    assert f"line {first + 1}" in result.stderr and "Traceback" not in result.stderr


def test_the_java_readers_fixture_is_what_the_exporter_writes_today(tmp_path: Path) -> None:
    # jvm/src/test/.../ExportedLogTest reads this file with Java's HdrHistogram (JUnit, in CI)
    fixture = Path(__file__).parents[2] / "jvm" / "src" / "test" / "resources" / "exported.hlog"
    run = make_run(tmp_path / "s", latency_clusters(4, 2_000))
    out = tmp_path / "now.hlog"
    export_run(run, "hlog", out, ExportOptions(window_ns=5_000_000))
    assert out.read_text().splitlines()[1:] == fixture.read_text().splitlines()[1:]

"""Units, times and the formats people already have (issue 38 item 5, issue 43 items 3–4):
YCSB logs in their producer's unit, CSV time columns and line numbers, any column names,
sub-nanosecond digits, Parquet/Arrow, PresentMon, cyclictest (made by the real cyclictest),
.hgrm (made by HdrHistogram Java 2.2.2), and exports in every unit."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from test_hdr_oracle import oracle as java_oracle  # noqa: F401  (the HdrHistogram Java 2.2.2 fixture)

from conftest import assert_one_line_error, make_run, run_main
from jitterlab.store import ResultsStore, load_run
from jitterlab.store.hdr.histogram import Histogram
from jitterlab.store.hdr.log import LogWriter


def imported(
    path: Path, store: Path, capsys: pytest.CaptureFixture[str], *extra: str, code: int = 0
) -> tuple[list[str], str]:
    rc, out, err = run_main(["import", str(path), "--store", str(store), *extra], capsys)
    assert rc == code, err
    return out.split(), err


def test_a_ycsb_log_is_read_in_microseconds_and_says_so(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h = Histogram.auto(3)
    h.record(np.array([373, 380, 400], dtype=np.int64), np.array([50, 30, 20], dtype=np.int64))
    text = io.StringIO()
    w = LogWriter(text)
    w.comment("[Logging for: READ]")  # YCSB's HdrHistogram logs, in microseconds
    w.version()
    w.legend()
    w.interval(0.0, 1.0, h)
    path = tmp_path / "READ.hdr.hlog"
    path.write_text(text.getvalue())
    (run_id,), err = imported(path, store, capsys)
    assert "YCSB" in err and "us" in err
    assert load_run(run_id, store).meta["summary"]["latency_ns"]["p50"] == 373_000
    (run_id,), _ = imported(path, store, capsys, "--unit", "ns")  # the user's word wins
    assert load_run(run_id, store).meta["summary"]["latency_ns"]["p50"] == 373


def test_a_gap_in_the_send_times_is_measured_against_the_type7_median_step(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The usual spacing is the median step (type 7, read as chunks by stats): 100 steps of
    1 ms and 99 of 3 ms and one of 25 ms have the median 2 ms, so the 25 ms step is a gap
    (> 20 ms); with the median taken as either neighbour (1 or 3 ms) it would be 10 or 30 ms."""
    steps = [1_000_000, 3_000_000] * 99 + [1_000_000, 25_000_000]
    t = np.cumsum([0, *steps])
    path = tmp_path / "gappy.csv"
    path.write_text("time_ns,latency_ns\n" + "".join(f"{v},{1000 + i % 7}\n" for i, v in enumerate(t)))
    _, err = imported(path, store, capsys, "--time-column", "time_ns:ns")
    assert "1 gap(s) in time_ns longer than 10× the usual spacing (2 ms)" in err
    assert "the widest, 25 ms, before row 201" in err


def test_a_csv_time_column_is_never_silently_row_numbers(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "timed.csv"
    path.write_text("time,latency_us\n1764259200.5,20\n1764259201.25,21\n1764259202.0,22\n")
    _, err = imported(path, store, capsys, code=2)
    assert "--time-column time:s" in err
    assert_one_line_error(err)
    _, err = imported(path, store, capsys, "--time-column", "time", code=2)
    assert "--time-column time:s" in err and "--skip-invalid" not in err
    assert_one_line_error(err)
    (run_id,), _ = imported(path, store, capsys, "--time-column", "time:s")
    run = load_run(run_id, store)
    assert np.diff(run.t_send_ns).tolist() == [750_000_000, 750_000_000]
    assert run.latency_ns.tolist() == [20_000, 21_000, 22_000]
    # no time column at all: said, not silent
    plain = tmp_path / "plain.csv"
    plain.write_text("latency_ns\n10\n20\n")
    _, err = imported(plain, store, capsys)
    assert "no send times" in err and "--time-column" in err


def test_csv_error_lines_count_blank_lines(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "blank.csv"
    path.write_text("latency_ns\n10\n\n20\n\n30\nnan\n40\n")
    _, err = imported(path, store, capsys, code=2)
    assert "line 7: latency_ns is not a finite number" in err
    _, err = imported(path, store, capsys, "--skip-invalid")
    assert "first: line 7" in err


def test_any_column_name_with_its_unit_and_a_hint_naming_the_columns(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hyperfine-like.csv"
    path.write_text("command,response time,ts\nls,1.5,10\nls,2.25,20\n")
    _, err = imported(path, store, capsys, code=2)
    assert "columns seen: command, response time, ts" in err and "--latency-column" in err
    assert_one_line_error(err)
    (run_id,), _ = imported(
        path, store, capsys, "--latency-column", "response time:ms", "--time-column", "ts:s"
    )
    run = load_run(run_id, store)
    assert run.latency_ns.tolist() == [1_500_000, 2_250_000]
    assert run.t_send_ns.tolist() == [10_000_000_000, 20_000_000_000]
    _, err = imported(path, store, capsys, "--latency-column", "nope", code=2)
    assert "no such column" in err and "response time" in err


def test_sub_nanosecond_digits_are_rounded_and_said(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "us.csv"
    path.write_text("latency_us\n20.0855\n20.0854\n21\n12.5e-3\n")
    (run_id,), err = imported(path, store, capsys)
    assert "3 value(s) had digits below a nanosecond: rounded" in err
    assert load_run(run_id, store).latency_ns.tolist() == [20_086, 20_085, 21_000, 13]


def test_parquet_and_arrow_files_import_with_columns_and_units(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(3)
    n = 5_000
    latency_us = np.round(rng.uniform(10, 90, n), 3)
    table = pa.table({"rtt_us": latency_us, "ts": np.arange(n) * 0.001, "host": ["a"] * n})
    pq.write_table(table, tmp_path / "rtt.parquet", row_group_size=1_000)
    feather.write_feather(table, tmp_path / "rtt.arrow")
    for name in ("rtt.parquet", "rtt.arrow"):
        _, err = imported(tmp_path / name, store, capsys, code=2)
        assert "columns seen: rtt_us, ts, host" in err
        (run_id,), _ = imported(
            tmp_path / name, store, capsys, "--latency-column", "rtt_us:us", "--time-column", "ts:s"
        )
        run = load_run(run_id, store)
        assert run.latency_ns.tolist() == np.round(latency_us * 1000).astype(np.int64).tolist()
        assert run.t_send_ns[-1] == (n - 1) * 1_000_000
        assert run.config["source_format"] == name.split(".")[1]
    spans = pa.table({"start_us": np.arange(3) * 1000, "end_us": np.arange(3) * 1000 + 50})
    pq.write_table(spans, tmp_path / "spans.parquet")
    (run_id,), _ = imported(tmp_path / "spans.parquet", store, capsys)
    assert load_run(run_id, store).latency_ns.tolist() == [50_000] * 3


PRESENTMON = """Application,ProcessID,SwapChainAddress,Runtime,SyncInterval,PresentFlags,Dropped,TimeInSeconds,MsInPresentAPI,MsBetweenPresents,MsBetweenDisplayChange,MsUntilRenderComplete,MsUntilDisplayed,MsClickToPhotonLatency
game.exe,4242,0x000001A2B3C4D5E0,DXGI,1,0,0,0.016000,0.100,16.667,16.667,1.200,16.800,NA
game.exe,4242,0x000001A2B3C4D5E0,DXGI,1,0,1,0.033500,0.110,17.500,NA,1.300,NA,NA
game.exe,4242,0x000001A2B3C4D5E0,DXGI,1,0,0,0.050000,0.090,16.500,34.167,1.100,17.000,42.125
overlay.exe,5151,0x000002B3C4D5E6F0,DXGI,0,0,0,0.020000,0.050,8.333,8.333,0.500,8.400,NA
"""


def test_presentmon_one_run_per_column_with_times_and_swap_chains(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # PresentMon 1.x's documented columns (PresentMon is a Windows tool: not in Debian)
    path = tmp_path / "presentmon.csv"
    path.write_text(PRESENTMON)
    ids, _ = imported(path, store, capsys)
    runs = {load_run(i, store).config["presentmon_column"]: load_run(i, store) for i in ids}
    assert sorted(runs) == ["MsBetweenDisplayChange", "MsBetweenPresents", "MsClickToPhotonLatency"]
    presents = runs["MsBetweenPresents"]
    assert sorted(presents.latency_ns.tolist()) == [8_333_000, 16_500_000, 16_667_000, 17_500_000]
    assert sorted(presents.t_send_ns.tolist()) == [16_000_000, 20_000_000, 33_500_000, 50_000_000]
    chains = presents.config["swap_chains"]
    assert {c["ProcessID"] for c in chains} == {"4242", "5151"} and len(chains) == 2
    assert runs["MsBetweenDisplayChange"].config["rows_not_available"] == 1
    assert runs["MsClickToPhotonLatency"].latency_ns.tolist() == [42_125_000]
    (only,), _ = imported(path, store, capsys, "--latency-column", "MsBetweenPresents")
    assert load_run(only, store).config["presentmon_column"] == "MsBetweenPresents"
    _, err = imported(path, store, capsys, "--latency-column", "MsPCLatency", code=2)
    assert "MsBetweenPresents" in err
    assert_one_line_error(err)


def cyclictest(*args: str) -> None:
    if shutil.which("cyclictest") is None:
        pytest.fail("cyclictest (rt-tests) is needed: scripts/setup.sh installs it")
    subprocess.run(
        ["cyclictest", "-D", "1", "-i", "1000", "-q", "-t", "2", *args],
        check=True,
        timeout=30,
        stdout=subprocess.PIPE if "--json" in " ".join(args) else None,
    )


def test_cyclictest_histograms_become_one_run_per_thread_with_its_figures(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, data = tmp_path / "cyclictest.hist", tmp_path / "cyclictest.json"
    cyclictest("-h", "200000", f"--histfile={text}", f"--json={data}")
    printed = {
        m.group(1): [int(x) for x in m.group(2).split()]
        for m in re.finditer(
            r"# (Total|Min Latencies|Max Latencies|Avg Latencies|Histogram Overflows): (.*)", text.read_text()
        )
    }
    threads = json.loads(data.read_text())["thread"]
    for path in (text, data):
        ids, _ = imported(path, store, capsys)
        assert len(ids) == 2
        for t, run_id in enumerate(ids):
            run = load_run(run_id, store)
            s = run.meta["summary"]["latency_ns"]
            assert run.histogram_only and run.config["thread"] == t
            if printed["Histogram Overflows"][t]:
                assert run.partial
                continue
            assert s["count"] == printed["Total"][t] == threads[str(t)]["cycles"]
            assert s["min"] == printed["Min Latencies"][t] * 1000 == threads[str(t)]["min"] * 1000
            assert s["max"] == printed["Max Latencies"][t] * 1000 == threads[str(t)]["max"] * 1000
            assert s["mean"] / 1000 == pytest.approx(threads[str(t)]["avg"], abs=0.006)


def test_cyclictest_overflow_is_partial_and_named(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tiny.hist"
    path.write_text(
        "# Histogram\n000000 000000\n000001 000005\n000002 000003\n# Total: 000000010\n"
        "# Min Latencies: 00001\n# Avg Latencies: 00002\n# Max Latencies: 00009\n# Histogram Overflows: 00002\n"
    )
    (run_id,), err = imported(path, store, capsys)
    assert "2 latencies beyond the histogram's range" in err
    run = load_run(run_id, store)
    assert run.partial and run.meta["summary"]["latency_ns"]["count"] == 8


def test_exports_honour_unit_and_parquet_has_a_latency_column(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(store, np.array([1_500, 2_000, 2_250], dtype=np.int64))
    out = tmp_path / "x.csv"
    code, _, err = run_main(
        ["export", run.id, "--format", "csv", "--unit", "us", "-o", str(out), "--store", str(store)], capsys
    )
    assert code == 0, err
    table = pacsv.read_csv(out)
    assert table.column("latency_us").to_pylist() == [1.5, 2.0, 2.25]
    for unit, column, values in (
        ("ns", "latency_ns", [1_500, 2_000, 2_250]),
        ("ms", "latency_ms", [0.0015, 0.002, 0.00225]),
    ):
        out = tmp_path / f"x-{unit}.parquet"
        args = ["export", run.id, "--format", "parquet", "-o", str(out), "--store", str(store)]
        code, _, err = run_main(args + (["--unit", unit] if unit != "ns" else []), capsys)
        assert code == 0, err
        assert pq.read_table(out).column(column).to_pylist() == values
    code, _, err = run_main(
        ["export", run.id, "--format", "hlog", "--unit", "us", "--store", str(store)], capsys
    )
    assert code == 2
    assert_one_line_error(err)


def test_an_hgrm_without_a_unit_is_refused(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "x.hgrm"
    path.write_text(
        "       Value     Percentile TotalCount 1/(1-Percentile)\n\n      10.000 0.000000000000          1           1.00\n"
    )
    _, err = imported(path, store, capsys, code=2)
    assert "--unit" in err
    assert_one_line_error(err)
    assert ResultsStore(store).run_dirs() == []


def test_an_hgrm_written_by_hdrhistogram_java_reproduces_its_rows(
    java_oracle,  # noqa: F811
    tmp_path: Path,
    store: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rng = np.random.default_rng(11)
    values = np.abs(
        np.concatenate(
            [rng.normal(20_000, 2_000, 20_000), rng.normal(90_000, 9_000, 500), rng.uniform(1e6, 5e7, 20)]
        )
    ).astype(np.int64)
    unique, counts = np.unique(values, return_counts=True)
    (tmp_path / "values").write_text("".join(f"{v} {c}\n" for v, c in zip(unique, counts, strict=True)))
    [java] = java_oracle([["hist", str(tmp_path / "values"), "3", "1", "0", "5", "1000.0", "0"]])
    path = tmp_path / "java.hgrm"
    path.write_text(java["hgrm"])  # outputPercentileDistribution(out, 5, 1000.0): µs of ns values
    (run_id,), _ = imported(path, store, capsys, "--unit", "us")
    s = load_run(run_id, store).meta["summary"]["latency_ns"]
    assert s["count"] == java["figures"]["count"] and s["max"] == java["figures"]["max"]
    out = tmp_path / "again.hgrm"
    code, _, err = run_main(
        ["export", run_id, "--format", "hgrm", "--unit", "us", "-o", str(out), "--store", str(store)], capsys
    )
    assert code == 0, err

    def rows(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]

    assert rows(out.read_text()) == rows(java["hgrm"])


def test_an_hgrm_export_imports_to_its_own_rows(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # jitterlab's .hgrm is Java's character for character (test_hdr_oracle.py): a round trip.
    # The rows come back when the file printed the values to their recorded unit (ns as µs with
    # 3 decimals, as Java's outputPercentileDistribution(out, 1000.0) does); a file printed
    # coarser than it was recorded (ns as ms) lost the difference between its rows' values
    rng = np.random.default_rng(12)
    run = make_run(store, np.abs(rng.normal(50_000, 5_000, 20_000)).astype(np.int64) + 1)
    first = tmp_path / "first.hgrm"
    for args in (["--unit", "us"], ["--unit", "us", "--ticks", "3"]):
        code, _, err = run_main(
            ["export", run.id, "--format", "hgrm", "-o", str(first), "--store", str(store), *args], capsys
        )
        assert code == 0, err
        (run_id,), _ = imported(first, store, capsys, "--unit", args[1])
        again = tmp_path / "again.hgrm"
        code, _, err = run_main(
            ["export", run_id, "--format", "hgrm", "-o", str(again), "--store", str(store), *args], capsys
        )
        assert code == 0, err
        rows = [
            [line for line in p.read_text().splitlines() if line.strip() and not line.startswith("#")]
            for p in (first, again)
        ]
        assert rows[0] == rows[1] and len(rows[0]) > 20

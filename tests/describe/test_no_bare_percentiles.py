"""Every output that prints a percentile says "≥ …" or "not resolved" for a level the sample
cannot resolve (core/percentiles.py ``is_resolved``: n·(1 − p) ≥ 10), in text and JSON: the
outputs issue 38's closing note still listed as bare numbers (describe's window rows,
``compare --percentiles``, ``describe --union``, Table 1 and the collector table, bench's
pipeline table, hiccup's table, ``runs --json``, the JSON summary)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_matches_schema, make_run, run_main
from jitterlab.describe.tables import (
    collector_table_layout,
    hiccup_per_cpu,
    hiccup_rows,
    pipeline_table,
    table1_layout,
)
from jitterlab.store import Run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A 200 000-sample run (log-normal near 20 µs, one far spike) and a 15-sample run."""
    store = tmp_path_factory.mktemp("bare") / "store"
    rng = np.random.default_rng(3838)
    big = np.round(rng.lognormal(np.log(20_000), 0.4, 200_000)).astype(np.int64)
    big[123_456] = 4_080_000
    small = np.round(rng.lognormal(np.log(20_000), 0.2, 15)).astype(np.int64)
    return store, make_run(store, big).id, make_run(store, small).id


def _row(out: str, first: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith(first))


def test_describe_window_rows_of_fifteen_samples_are_not_resolved(
    runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, _, small = runs  # 15 samples, one 1 s window: neither its p50 (7.5 beyond) nor its p99
    code, out, _ = run_main(["describe", small, "--store", str(store)], capsys)
    assert code == 0
    window = _row(out.split("windows of")[1], "0 s")
    assert window.count("not resolved") == 2, window
    code, out, _ = run_main(["describe", small, "--json", "--store", str(store)], capsys)
    doc = json.loads(out)
    assert_matches_schema(doc, "describe")
    row = doc["windows"]["rows"][0]
    assert row["count"] == 15 and row["p50_ns"] is None and row["p99_ns"] is None
    assert row["max_ns"] is not None  # the maximum is a sample: kept
    assert doc["summary"]["unresolved"] == ["p50", "p90", "p99", "p99_9", "p99_99", "p99_999"]


def test_compare_percentiles_rows_give_intervals_and_never_a_bare_unresolved_value(
    runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, big, small = runs
    args = ["compare", big, small, "--percentiles", "50,99.9,max", "--store", str(store)]
    code, out, _ = run_main(args, capsys)
    assert code == 0
    table = out.split("B/A")[1]
    p50 = _row(table, "p50")
    assert "[" in p50 and "≥" in p50 and p50.rstrip().endswith("—"), p50  # A's interval, B "≥", no ratio
    p999 = _row(table, "p99.9")
    assert "≥" in p999 and p999.rstrip().endswith("—"), p999
    assert not _row(table, "max").rstrip().endswith("—")  # two maxima: a ratio
    code, out, _ = run_main([*args, "--json"], capsys)
    doc = json.loads(out)
    assert_matches_schema(doc, "compare")
    assert doc["percentiles_ns"]["b"]["p50"] is None and doc["percentiles_ns"]["a"]["p50"] is not None
    b50 = doc["percentile_intervals"]["b"][0]
    assert b50["level"] == 50.0 and not b50["resolved"] and b50["ci_low"] is not None
    a50 = doc["percentile_intervals"]["a"][0]
    assert a50["ci_low"] <= doc["percentiles_ns"]["a"]["p50"] <= a50["ci_high"]


def test_describe_union_gives_intervals_and_marks_a_small_run_in_its_source_rows(
    runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, big, small = runs
    code, out, _ = run_main(["describe", big, small, "--union", "--store", str(store)], capsys)
    assert code == 0
    union = out.split("split by source")[0]
    # the union's own p99.999 (2 samples beyond it) is a lower bound with its interval table
    assert "percentiles with 95% intervals" in union and "≥" in _row(union, "200,015")
    sources = out.split("split by source")[1].split("windows of")[0]
    # two runs alike by what they are (issue 43 item 2) are told apart by their ids' ends
    label = f"synthetic-x1-other-{small[-4:]}"
    assert _row(sources, label).count("not resolved") == 3  # p50, p99 and p99.9 of 15 samples
    assert out.count("percentiles with 95% intervals") == 3  # the union's, then each run's
    code, out, _ = run_main(["describe", big, small, "--union", "--json", "--store", str(store)], capsys)
    doc = json.loads(out)
    assert_matches_schema(doc, "describe")
    row = next(r for r in doc["sources"]["rows"] if r["source"] == label)
    assert row["p50_ns"] is None and row["p99_9_ns"] is None and row["max_ns"] is not None


def test_table1_and_collector_table_mark_a_median_of_ten_samples(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    few = make_run(tmp_path, np.round(rng.lognormal(np.log(20_000), 0.2, 10)).astype(np.int64))
    many = make_run(tmp_path, np.round(rng.lognormal(np.log(20_000), 0.2, 100)).astype(np.int64))
    summaries = [r.meta["summary"]["latency_ns"] for r in (few, many)]
    _, rows = table1_layout([few, many], summaries)
    medians = [row[-1] for row in rows]  # one row per run (they share the label): its median last
    assert medians[0] == "not resolved" and "µs" in medians[1]
    with_gc = [Run(r.path, r.meta | {"config": r.meta["config"] | {"gc": "G1"}}) for r in (few, many)]
    _, rows = collector_table_layout(with_gc, summaries)
    assert [row[-1] for row in rows].count("not resolved") == 1


def test_pipeline_table_gives_a_lower_bound_for_levels_beyond_the_sample(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    run = make_run(tmp_path, np.round(rng.lognormal(np.log(20_000), 0.3, 20_000)).astype(np.int64))
    run.meta["config"]["series"] = "transit"
    headers, rows = pipeline_table([run])
    cells = dict(zip(headers, rows[0], strict=True))
    # 20 000 samples resolve 99.9 % (20 beyond) but not 99.99 % (2 beyond)
    assert "≥" not in cells["99.9%"] and cells["99.99%"].startswith("≥ ")
    assert cells["99.999%"].startswith("≥ ") and cells["99.9999%"].startswith("≥ ")


def test_hiccup_table_and_json_mark_percentiles_a_cpu_cannot_resolve(tmp_path: Path) -> None:
    gaps = np.array([12_000, 15_000, 90_000, 13_000, 14_000] * 40 + [11_000] * 5, np.int64)  # 200 + 5
    run = make_run(tmp_path, gaps, pairs=1)
    cpu = {"cpu": 0, "t_begin_ns": 0, "t_end_ns": 1_000_000_000, "min_gap_ns": 10_000, "loops": 1}
    run.meta["hiccup"] = {"per_cpu": [cpu]}
    (per_cpu,) = hiccup_per_cpu(run)
    # 205 gaps: p50 resolved (102.5 beyond it), p99 (2.05) and p99.9 (0.2) not
    assert per_cpu["unresolved"] == ["p99", "p99_9"]
    assert per_cpu["p99_ns"] is None and per_cpu["p99_9_ns"] is None and per_cpu["p50_ns"] is not None
    (row,) = hiccup_rows([per_cpu])
    assert row[4:7] == [row[4], "not resolved", "not resolved"] and "µs" in row[4]


def test_runs_json_flags_unresolved_levels_beside_the_stored_figures(
    runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, big, small = runs
    code, out, _ = run_main(["runs", "--json", "--percentiles", "50,99.99", "--store", str(store)], capsys)
    assert code == 0
    doc = json.loads(out)
    assert_matches_schema(doc, "runs")
    by_id = {r["id"]: r for r in doc}
    assert by_id[small]["unresolved"] == ["p50", "p99"] and by_id[big]["unresolved"] == []
    assert by_id[small]["percentiles_ns"] == {"p50": None, "p99.99": None}
    assert by_id[big]["percentiles_ns"]["p99.99"] is not None
    code, out, _ = run_main(["show", small, "--json", "--store", str(store)], capsys)
    doc = json.loads(out)
    assert_matches_schema(doc, "show")
    assert doc["summary"]["unresolved"] == ["p50", "p90", "p99", "p99_9", "p99_99", "p99_999"]
    assert doc["summary_ns"]["p50"] == doc["summary"]["latency_ns"]["p50"]  # kept for old readers


def test_the_line_bench_prints_per_run_and_the_probe_table_mark_fifteen_samples(tmp_path: Path) -> None:
    from jitterlab.describe.text import stored_line
    from jitterlab.describe.validation import settings_rows

    rng = np.random.default_rng(13)
    run = make_run(tmp_path, np.round(rng.lognormal(np.log(20_000), 0.2, 15)).astype(np.int64))
    assert stored_line(run).startswith("p50 not resolved  p99 not resolved  max ")
    (row,) = settings_rows({"baseline": run})
    assert row[3:5] == ["not resolved", "not resolved"] and "µs" in row[5]


def test_the_network_tables_mark_a_ping_run_of_fifteen_round_trips(tmp_path: Path) -> None:
    from jitterlab.describe.network import ping_rows

    rng = np.random.default_rng(14)
    stored = make_run(tmp_path, np.round(rng.lognormal(np.log(200_000), 0.2, 15)).astype(np.int64))
    meta = stored.meta | {
        "config": stored.meta["config"] | {"scenario": "ping", "transport": "tcp"},
        "net": {"lost": 0, "measured_lost": 0},
    }
    _, (row,) = ping_rows([Run(stored.path, meta)])
    assert row[2:5] == ["not resolved"] * 3 and row[5] != "not resolved"  # p50, p99, p99.9; max


def test_the_replication_table_marks_a_short_run(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from jitterlab.describe.replication import table3_layout
    from jitterlab.stats import summarize

    rng = np.random.default_rng(15)
    short = summarize(rng.normal(11.1, 0.5, 50))  # 50 update intervals (ms): p99 has 0.5 beyond it
    row = SimpleNamespace(
        clients=2, interval_ms=short, latency_ms=short, interval_categories=(), latency_categories=()
    )
    _, (cells,) = table3_layout([row])  # type: ignore[list-item]
    assert cells[2] != "not resolved" and cells[3:5] == ["not resolved", "not resolved"]
    assert cells[8] != "not resolved" and cells[9:11] == ["not resolved", "not resolved"]


def test_net_skew_and_repl_p99_columns_follow_the_one_rule() -> None:
    """net's frame-skew p99 and repl's ping and generator-lag p99 cells (Tables 4-6 of the
    seeds): 600 frames (10 s at 60 fps) do not resolve a p99, 2,000 do."""
    from jitterlab.describe.network import _skew_p99
    from jitterlab.describe.replication import _p99_text

    skew = {"frame_p50_ns": 1e5, "frame_p99_ns": 2.5e6, "frame_max_ns": 3_000_000}
    assert _skew_p99({**skew, "frames": 600}) == "not resolved"
    assert _skew_p99({**skew, "frames": 2_000}) != "not resolved"
    assert _skew_p99(skew) != "not resolved"  # a run stored before the count was kept: as stored
    assert _p99_text(1.234, 600, 2) == "not resolved"
    assert _p99_text(1.234, 2_000, 2) == "1.23"
    assert _p99_text(float("nan"), 0, 1) == "n/a"

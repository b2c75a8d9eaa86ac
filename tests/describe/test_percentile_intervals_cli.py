"""What show, describe, compare, import and bench say about percentiles a run cannot
resolve, and the interval every percentile carries (issue 38 items 3–4)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_matches_schema, make_run, run_main


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A 200 000-sample run (log-normal near 20 µs, a far spike) and a 10-sample run."""
    store = tmp_path_factory.mktemp("ci") / "store"
    rng = np.random.default_rng(38)
    big = np.round(rng.lognormal(np.log(20_000), 0.4, 200_000)).astype(np.int64)
    big[123_456] = 4_080_000
    small = np.round(rng.lognormal(np.log(20_000), 0.2, 10)).astype(np.int64)
    return store, make_run(store, big).id, make_run(store, small).id


def test_show_never_prints_a_bare_value_for_an_unresolved_level(
    runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, big, _ = runs
    code, out, _ = run_main(["show", big, "--percentiles", "99.99999", "--store", str(store)], capsys)
    assert code == 0
    row = next(line for line in out.splitlines() if line.strip().startswith("p99.99999"))
    assert "≥ 4.08 ms" in row and "not resolved" in row  # its lower bound is the maximum
    p50 = next(line for line in out.splitlines() if line.strip().startswith("p50 "))
    assert "[" in p50 and "binomial" in p50  # an interval on every resolved level
    code, out, _ = run_main(
        ["show", big, "--percentiles", "99.99999", "--json", "--store", str(store)], capsys
    )
    doc = json.loads(out)
    assert_matches_schema(doc, "show")
    assert doc["percentiles_ns"] == {"p99.99999": None}
    level = next(q for q in doc["percentiles"] if q["level"] == 99.99999)
    assert level == {
        "level": 99.99999,
        "value": None,
        "ci_low": 4_080_000.0,
        "ci_high": None,
        "resolved": False,
        "method": "binomial",
        "confidence": 0.95,
        "dispersion": level.get("dispersion"),
    } or (level["value"] is None and level["ci_low"] == 4_080_000.0 and not level["resolved"])
    p99_99 = next(q for q in doc["percentiles"] if q["level"] == 99.99)
    assert p99_99["resolved"] and p99_99["ci_low"] <= p99_99["value"] <= p99_99["ci_high"]


def test_show_of_ten_samples_marks_the_tail_in_its_summary(
    runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, _, small = runs
    code, out, _ = run_main(["show", small, "--store", str(store)], capsys)
    assert code == 0
    summary = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for name in ("median", "p90", "p99", "p99.9", "p99.99", "p99.999"):  # 5 or fewer beyond each
        assert "≥" in summary[name], summary[name]
    assert "≥" not in summary["min"] and "≥" not in summary["max"]


def test_compare_does_not_judge_a_level_either_run_cannot_resolve(
    runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, big, small = runs
    code, out, _ = run_main(["compare", big, small, "--json", "--store", str(store)], capsys)
    assert code == 0
    doc = json.loads(out)
    assert_matches_schema(doc, "compare")
    by_level = {d["percentile"]: d for d in doc["percentiles"]}
    # ten samples resolve no level (5 beyond the median): none is judged, p99.9 included
    for level in (50.0, 90.0, 99.0, 99.9, 99.99):
        assert by_level[level]["verdict"] == "not judged (not resolved)"
        assert by_level[level]["ci_low"] is None and by_level[level]["resolved"] == [True, False]
    assert doc["verdict"] == "not judged (not resolved)"
    a, b = by_level[50.0]["intervals"]
    assert a["method"] in ("binomial", "block") and b["confidence"] == pytest.approx(0.95**0.5)
    assert a["resolved"] and not b["resolved"] and b["value"] is None
    code, out, _ = run_main(["compare", big, small, "--store", str(store)], capsys)
    row = next(line for line in out.splitlines() if line.strip().startswith("p99.9 "))
    assert "not judged" in row and "≥" in row
    # a level both runs resolve is judged by the runs' own intervals
    code, out, _ = run_main(["compare", big, big, "--json", "--store", str(store)], capsys)
    same = {d["percentile"]: d for d in json.loads(out)["percentiles"]}
    for level in (50.0, 99.0, 99.9, 99.99):
        assert same[level]["verdict"] == "within noise"
        assert same[level]["ci_low"] < 0 < same[level]["ci_high"]


def test_describe_json_gives_every_level_its_interval(
    runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, big, _ = runs
    code, out, _ = run_main(["describe", big, "--json", "--store", str(store)], capsys)
    assert code == 0
    doc = json.loads(out)
    assert_matches_schema(doc, "describe")
    levels = [q["level"] for q in doc["percentiles"]]
    assert levels == [50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0]
    resolved = {q["level"]: q["resolved"] for q in doc["percentiles"]}
    assert resolved[99.99] and not resolved[99.999]
    for q in doc["percentiles"][:5]:
        assert q["ci_low"] <= q["value"] <= q["ci_high"] and q["method"] in ("binomial", "block")
    code, out, _ = run_main(["describe", big, "--store", str(store)], capsys)
    assert "95% intervals" in out and "not resolved" in out


def test_a_dependent_run_gets_the_block_method_named_with_its_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bursts of slow samples (AR(1) log latency): the output says block, and how many."""
    from scipy.signal import lfilter

    rng = np.random.default_rng(2)
    y = lfilter([1.0], [1.0, -0.95], rng.standard_normal(40_000) * 0.1)
    run = make_run(tmp_path, np.round(20_000 * np.exp(y)).astype(np.int64))
    code, out, _ = run_main(["show", run.id, "--store", str(tmp_path)], capsys)
    assert code == 0
    row = next(line for line in out.splitlines() if line.strip().startswith("p50 "))
    assert "block (200 time blocks of ~200 samples)" in row


def test_import_warns_when_the_run_cannot_resolve_the_printed_levels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "latencies.csv"
    csv.write_text("latency_ns\n" + "".join(f"{1000 + 7 * i}\n" for i in range(5_000)))
    code, _, err = run_main(["import", str(csv), "--store", str(tmp_path / "s")], capsys)
    assert code == 0
    assert "tail-unresolved" in err and "5,000 samples resolve up to p99.8" in err
    assert "p99.9, p99.99, p99.999 are shown as lower bounds" in err


def test_bench_warns_for_the_levels_it_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from jitterlab.cli import bench

    few = make_run(tmp_path, np.arange(500, dtype=np.int64) + 1_000)
    many = make_run(tmp_path, np.arange(5_000, dtype=np.int64) + 1_000)
    bench.warn_unresolved([few, many], (50.0, 99.0))
    err = capsys.readouterr().err
    assert f"run {few.id}: 500 samples resolve up to p98" in err and "p99 are shown" in err
    assert many.id not in err

"""describe, report, compare and export through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import latency_clusters, make_run, run_cli
from jitterlab.core.tidy import tidy_json
from jitterlab.stats import stacked_gesd, stacked_walsh
from jitterlab.stats.summary import percentiles


def test_describe_prints_summary_categories_and_windows(tmp_path: Path) -> None:
    store = tmp_path / "s"
    # samples 50 µs apart: about three seconds of sending
    latency = latency_clusters(1, 58_800)
    run = make_run(store, latency, t_send=1_000_000_000 + np.arange(latency.size) * 50_000)
    result = run_cli("describe", run.id, "--store", str(store))
    assert result.returncode == 0, result.stderr
    for word in ("p99.999", "outlier categories (stacked-z)", "main", "windows of 1 s"):
        assert word in result.stdout
    data = json.loads(
        run_cli("describe", run.id, "--store", str(store), "--json", "--window", "500ms").stdout
    )
    assert sum(c["count"] for c in data["categories"]) == data["summary_ns"]["count"]
    assert data["windows"]["width_ns"] == 500_000_000
    assert len(data["windows"]["rows"]) == -(-latency.size * 50_000 // 500_000_000)
    assert data["thresholds_ns"] == sorted(data["thresholds_ns"])


def test_describe_with_other_tests_and_a_baseline(tmp_path: Path) -> None:
    store = tmp_path / "s"
    base = make_run(store, latency_clusters(1, 20_000))
    later = make_run(store, latency_clusters(2, 20_000) + 3_000)
    latency = later.latency_ns
    expected = {"gesd": stacked_gesd(latency), "walsh": stacked_walsh(latency)}
    for test, reference in expected.items():
        result = run_cli("describe", later.id, "--test", test, "--store", str(store), "--json")
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert data["test"] == test
        # the CLI's categories are the test's own, not the default stacked-z ones
        assert data["thresholds_ns"] == tidy_json(list(reference.thresholds))  # --json: 12 digits
        assert [c["count"] for c in data["categories"]] == [c.count for c in reference.categories]
    stacked = json.loads(run_cli("describe", later.id, "--store", str(store), "--json").stdout)
    assert stacked["thresholds_ns"] != list(expected["gesd"].thresholds)
    with_baseline = json.loads(
        run_cli("describe", later.id, "--baseline", base.id, "--store", str(store), "--json").stdout
    )
    own_base = json.loads(run_cli("describe", base.id, "--store", str(store), "--json").stdout)
    assert with_baseline["thresholds_ns"] == own_base["thresholds_ns"]
    assert with_baseline["baseline"] == base.id


def test_compare_gives_a_verdict_and_fails_on_regression_when_asked(tmp_path: Path) -> None:
    store = tmp_path / "s"
    a = make_run(store, latency_clusters(1, 30_000))
    b = make_run(store, (latency_clusters(2, 30_000) * 1.3).astype("int64"))
    text = run_cli("compare", a.id, b.id, "--store", str(store))
    assert text.returncode == 0 and "verdict: regressed" in text.stdout
    data = json.loads(run_cli("compare", a.id, b.id, "--store", str(store), "--json").stdout)
    assert data["verdict"] == "regressed"
    # to p99.99 like show, then the max: shown with its change, judged by no verdict
    assert [p["percentile"] for p in data["percentiles"]] == [50.0, 90.0, 99.0, 99.9, 99.99, 100.0]
    top = data["percentiles"][-1]
    assert top["verdict"] == "not judged (one sample)" and top["ci_low"] is None
    assert top["a_ns"] == float(a.latency_ns.max()) and top["b_ns"] == float(b.latency_ns.max())
    assert "p99.99" in text.stdout and "\nmax " in text.stdout
    assert run_cli("compare", a.id, b.id, "--store", str(store), "--fail-on-regression").returncode == 1
    assert run_cli("compare", b.id, a.id, "--store", str(store), "--fail-on-regression").returncode == 0


def test_compare_percentiles_are_the_runs_exact_chosen_levels(tmp_path: Path) -> None:
    """Issue 26 item 5: compare --percentiles gives A's and B's type-7 percentiles at the
    chosen levels (docs/statistics.md's interpolation; numpy's to rounding), side by side
    with B/A."""
    store = tmp_path / "s"
    a = make_run(store, latency_clusters(3, 20_000))
    b = make_run(store, latency_clusters(4, 20_000) + 500)
    args = ("compare", a.id, b.id, "--percentiles", "50,99.9,max", "--store", str(store))
    data = json.loads(run_cli(*args, "--json").stdout)["percentiles_ns"]
    for key, run in (("a", a), ("b", b)):
        got = list(data[key].values())
        assert got == tidy_json([float(v) for v in percentiles(run.latency_ns, (50, 99.9, 100))])
        assert got == pytest.approx(np.percentile(run.latency_ns, [50, 99.9, 100]), rel=1e-12)
    assert list(data["a"]) == ["p50", "p99.9", "max"]
    text = run_cli(*args)
    assert text.returncode == 0 and "B/A" in text.stdout and "p99.9" in text.stdout
    assert run_cli(*args[:3], "--percentiles", "101", "--store", str(store)).returncode == 2


def test_export_formats_and_bad_output(tmp_path: Path) -> None:
    store = tmp_path / "s"
    run = make_run(store, latency_clusters(1, 3_000))
    for fmt in ("hgrm", "hlog", "csv", "parquet"):
        out = tmp_path / f"x.{fmt}"
        result = run_cli("export", run.id, "--format", fmt, "-o", str(out), "--store", str(store))
        assert result.returncode == 0, result.stderr
        assert out.stat().st_size > 0
    bad = run_cli(
        "export",
        run.id,
        "--format",
        "csv",
        "-o",
        str(tmp_path / "no" / "dir" / "x.csv"),
        "--store",
        str(store),
    )
    assert bad.returncode == 2 and "cannot write" in bad.stderr


def test_one_damaged_run_does_not_stop_store_wide_commands(tmp_path: Path) -> None:
    store = tmp_path / "s"
    good = make_run(store, latency_clusters(1, 5_000))
    truncated = make_run(store, latency_clusters(2, 5_000))
    unreadable = make_run(store, latency_clusters(3, 5_000))
    samples = truncated.path / "samples.parquet"
    samples.write_bytes(samples.read_bytes()[:100])
    (unreadable.path / "run.json").write_text('{"id": ')
    listed = run_cli("runs", "--store", str(store))
    assert listed.returncode == 0, listed.stderr
    status = {line.split()[0]: line.split()[-1] for line in listed.stdout.splitlines()[2:]}
    assert status[truncated.id] == "damaged" and status[unreadable.id] == "damaged"
    assert status[good.id] == "complete"
    assert listed.stderr.count("damaged run") == 2
    assert run_cli("runs", "--strict", "--store", str(store)).returncode == 1
    out = tmp_path / "r.html"
    report = run_cli("report", "-o", str(out), "--store", str(store))
    assert report.returncode == 0, report.stderr
    assert out.exists() and good.id in out.read_text() and truncated.id not in out.read_text()
    assert report.stderr.count("damaged run") == 2
    assert run_cli("report", "-o", str(out), "--strict", "--store", str(store)).returncode == 1


def test_runs_lists_every_sample_count_in_one_format(tmp_path: Path) -> None:
    store = tmp_path / "s"
    make_run(store, latency_clusters(1)[:2_000])  # a round count (once shown as "2k") ...
    make_run(store, latency_clusters(2)[:1_234])  # ... beside one that is not
    out = run_cli("runs", "--store", str(store)).stdout
    assert " 2,000 " in out and " 1,234 " in out, out
    assert out.splitlines()[0].split()[-1] == "status"

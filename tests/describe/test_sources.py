"""Tables split by source, ``--union``, and the report's panels of a run too large to hold
(issue 25 items 2 and 4): every figure checked against the same figure computed with the
whole data in memory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_matches_schema, assert_one_line_error, latency_clusters, make_run, run_main
from jitterlab.core.percentiles import is_resolved
from jitterlab.core.tidy import tidy_float, tidy_json
from jitterlab.describe import report as report_module
from jitterlab.describe.analysis import describe_run
from jitterlab.describe.panels import memory_panels, streamed_panels
from jitterlab.stats import stacked_z_test, summarize
from jitterlab.stats.categories import categorize
from jitterlab.stats.groups import group_extent, group_percentiles
from jitterlab.stats.loglinear import LogLinear, bucket_index, bucket_lower, bucket_width, histogram_chunk
from jitterlab.stats.scan import LocalScan
from jitterlab.stats.summary import percentiles
from jitterlab.store import load_run
from jitterlab.store.merge import merge
from jitterlab.store.reader import LOCAL, send_time_extent
from jitterlab.store.runs import ResultsStore, verified_samples_path

PS = (50.0, 99.0, 99.9)


def _sources(seed: int = 1) -> list[np.ndarray]:
    """Four hosts' latencies: sizes, tails and offsets differ, so every row differs."""
    return [
        latency_clusters(seed=seed + i, n=n) + 1_000 * i
        for i, n in enumerate((20_000, 31_000, 7_000, 12_000))
    ]


def _runs(store: Path, lat: list[np.ndarray]) -> list:
    sends = [5_000_000_000 * (i + 1) + np.arange(x.size) * 10_000 for i, x in enumerate(lat)]
    return [make_run(store, x, t_send=t) for x, t in zip(lat, sends, strict=True)]


def test_grouped_percentiles_equal_each_group_in_memory_in_any_chunking() -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.integers(-50, 10_000, 30_011), rng.integers(10**6, 10**7, 57)])
    g = rng.integers(0, 5, x.size)
    g[g == 3] = 4  # group 3 is empty
    ps = (0.0, 1.0, 50.0, 99.0, 99.9, 99.99, 100.0)
    for size in (x.size, 977, 64):
        chunks = [(x[i : i + size], g[i : i + size]) for i in range(0, x.size, size)]
        scan = LocalScan(lambda chunks=chunks: chunks)
        thresholds = (12_000.0, 2_000_000.0)
        extent = group_extent(scan, 5, thresholds)
        got = group_percentiles(scan, extent, ps)
        for k in range(5):
            mine = x[g == k]
            assert extent.count[k] == mine.size
            if mine.size == 0:
                assert np.isnan(got[k]).all()
                continue
            np.testing.assert_array_equal(got[k], percentiles(mine, ps))  # to the last bit
            assert extent.highest[k] == mine.max() and extent.lowest[k] == mine.min()
            expected = np.bincount(categorize(mine, thresholds), minlength=3)
            np.testing.assert_array_equal(extent.by_slot[k], expected)


def test_grouped_percentiles_fall_back_when_composite_keys_would_overflow() -> None:
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.integers(0, 1000, 5000), [2**61, 2**61 + 7]])
    g = np.arange(x.size) % 3
    scan = LocalScan(lambda: [(x, g)])
    extent = group_extent(scan, 3)
    got = group_percentiles(scan, extent, (*PS, 100.0))
    for k in range(3):
        np.testing.assert_array_equal(got[k], percentiles(x[g == k], (*PS, 100.0)))


def test_describe_of_a_merged_run_splits_by_source(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lat = _sources()
    runs = _runs(store, lat)
    merged = merge(ResultsStore(store), [r.id for r in runs], "fleet")
    rc, out, err = run_main(["describe", merged.id, "--json", "--store", str(store)], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    assert_matches_schema(doc, "describe")
    union = np.concatenate(lat)
    test = stacked_z_test(union)
    table = doc["sources"]
    assert table["column"] == "source"
    assert table["union"]["count"] == union.size
    assert table["union"]["p99_9_ns"] == tidy_float(summarize(union).p99_9)  # --json: 12 digits
    assert [r["source"] for r in table["rows"]] == [s["name"] for s in merged.meta["merge"]["sources"]]
    for row, x in zip(table["rows"], lat, strict=True):
        assert row["count"] == x.size
        # a level the source's count does not resolve is null (docs/statistics.md)
        assert [row["p50_ns"], row["p99_ns"], row["p99_9_ns"]] == tidy_json(
            [
                float(v) if is_resolved(x.size, p) else None
                for v, p in zip(percentiles(x, PS), PS, strict=True)
            ]
        )
        assert row["max_ns"] == x.max()
        counts = np.bincount(categorize(x, test.thresholds), minlength=len(test.thresholds) + 1)
        assert row["category_counts"] == [int(counts[c]) for c in table["categories"]]
    # the text: the union first, then one row per source
    rc, out, err = run_main(["describe", merged.id, "--store", str(store)], capsys)
    assert rc == 0, err
    block = out[out.index("split by source") :].splitlines()
    assert block[3].split()[0] == "(union)"  # caption, headers, rule, then the union
    assert [line.split()[0] for line in block[4:8]] == [r["source"] for r in table["rows"]]
    assert f"{lat[2].size:,}" in block[6]


def test_union_equals_describe_of_the_merged_run(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lat = _sources(seed=11)
    runs = _runs(store, lat)
    merged = merge(ResultsStore(store), [r.id for r in runs], "fleet")
    rc, out, err = run_main(["describe", merged.id, "--json", "--store", str(store)], capsys)
    assert rc == 0, err
    of_merge = json.loads(out)
    rc, out, err = run_main(
        ["describe", *[r.id for r in runs], "--union", "--json", "--store", str(store)], capsys
    )
    assert rc == 0, err
    of_union = json.loads(out)
    assert_matches_schema(of_union, "describe")
    for key in ("summary_ns", "thresholds_ns", "categories", "windows"):
        assert of_union[key] == of_merge[key], key
    strip = [{k: v for k, v in r.items() if k != "source"} for r in of_merge["sources"]["rows"]]
    assert [{k: v for k, v in r.items() if k != "source"} for r in of_union["sources"]["rows"]] == strip
    # each run named as merge names its sources: by what it is, alike ones told apart by id
    assert [r["source"] for r in of_union["sources"]["rows"]] == [
        r["source"] for r in of_merge["sources"]["rows"]
    ]
    assert of_union["union_of"] == [r.id for r in runs]
    # then each run, as describe RUN gives it
    for each, run in zip(of_union["runs"], runs, strict=True):
        rc, out, err = run_main(["describe", run.id, "--json", "--store", str(store)], capsys)
        alone = json.loads(out)
        assert each["id"] == run.id and each["summary_ns"] == alone["summary_ns"]
        assert each["categories"] == alone["categories"]
    rc, out, err = run_main(["describe", *[r.id for r in runs], "--union", "--store", str(store)], capsys)
    assert rc == 0, err
    assert out.count("split by source") == 1 and all(f"run      {r.id}" in out for r in runs)


def test_union_refuses_what_merge_refuses(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _runs(store, _sources()[:2])
    path = b.path / "run.json"
    meta = json.loads(path.read_text())
    meta["samples"]["clock"] = "CLOCK_REALTIME"
    path.write_text(json.dumps(meta))
    for command in (
        ["describe", a.id, b.id, "--union"],
        ["report", a.id, b.id, "--union", "-o", str(store / "r.html")],
    ):
        rc, out, err = run_main([*command, "--store", str(store)], capsys)
        assert rc == 2 and out == ""
        assert_one_line_error(err)
        assert "CLOCK_REALTIME" in err and "different clocks" in err
    rc, out, err = run_main(["describe", a.id, b.id, "--store", str(store)], capsys)
    assert rc == 2 and "--union" in err
    assert_one_line_error(err)


def test_report_union_and_merged_run_pages_show_the_source_table(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lat = _sources(seed=21)
    runs = _runs(store, lat)
    merged = merge(ResultsStore(store), [r.id for r in runs[:2]], "pair")
    out = tmp_path / "r.html"
    rc, _, err = run_main(
        ["report", *[r.id for r in runs], "--union", "-o", str(out), "--store", str(store)], capsys
    )
    assert rc == 0, err
    html = out.read_text()
    assert "<h2>Union</h2>" in html and "the union of 4 runs" in html
    union_part = html[html.index("<h2>Union</h2>") : html.index("<h2>Runs</h2>")]
    assert all(r.id in union_part for r in runs) and "split by source" in union_part
    assert f"{sum(x.size for x in lat):,}" in union_part
    rc, _, err = run_main(["report", merged.id, "-o", str(out), "--store", str(store)], capsys)
    assert rc == 0, err
    html = out.read_text()
    assert "split by source" in html and f"{lat[1].size:,}" in html


def test_loglinear_buckets_hold_their_values_within_0_8_percent() -> None:
    x = np.concatenate([np.arange(0, 5000), np.geomspace(5000, 2**62, 20_000).astype(np.int64)])
    i = bucket_index(x)
    lower, width = bucket_lower(i), bucket_width(i)
    assert ((lower <= x) & (x < lower + width)).all()
    assert (width <= np.maximum(lower / 128, 1)).all()
    assert (np.diff(i[np.argsort(x)]) >= 0).all()


def test_panels_of_a_run_too_large_to_hold_keep_a_lone_tail_cluster(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(9)
    n = 400_000
    x = rng.normal(10_000, 400, n).astype(np.int64)
    cluster = 5_000_000 + np.arange(7)  # seven samples near 5 ms: a lone rare tail cluster
    x[rng.choice(n, cluster.size, replace=False)] = cluster
    run = make_run(store, x)
    fresh = load_run(run.id, store)
    d = describe_run(fresh)
    assert not fresh.loaded  # streamed: the panels cannot come from the samples
    path = verified_samples_path(fresh)
    panels, hist = streamed_panels(LOCAL.timed(path), d.summary, d.categories, 600)
    assert send_time_extent(path) == (panels.start_ns, panels.stop_ns)  # row-group statistics, no pass
    assert panels.drawn_from == "histogram"
    assert panels.counts.sum() == n
    inside = (panels.edges[1:] > 4_900_000) & (panels.edges[:-1] < 5_100_000)  # the bins about 5 ms
    assert panels.counts[inside].sum() == cluster.size  # the cluster is a bar of its own
    assert (panels.v >= 5_000_000).sum() == cluster.size  # and every one of them on the timeline
    # the same bars as drawn from the samples in memory, up to a bucket's width at bin edges
    in_memory = memory_panels(x, fresh.t_send_ns, d.summary, d.categories)
    assert abs(int(in_memory.counts[inside].sum()) - cluster.size) == 0
    # the spectrum from the histogram within half a bucket of the exact percentiles
    exact = percentiles(x, tuple(panels.spectrum_ps * 100))
    assert np.all(np.abs(panels.spectrum - exact) <= exact / 256 + 1)
    assert isinstance(hist, LogLinear) and hist.total == n
    np.testing.assert_array_equal(hist.counts, histogram_chunk(x))
    # the report's section of a run it may not hold (holding it would be refused: 32 MB
    # over a 10 MB bound) is drawn from the streamed pass; its QQ numbers from the histogram
    monkeypatch.setenv("JITTERLAB_MEMORY_LIMIT_MB", "10")
    section, digest, chosen = report_module._section_job(load_run(run.id, store), "run0", (99.0,))
    assert "<section" in section and "data:image/png;base64," in section
    assert chosen == {"p99": percentiles(x, (99.0,))[0]}
    from jitterlab.describe.overview import QQ_PERCENTILES

    qq = percentiles(x, QQ_PERCENTILES)
    assert np.all(np.abs(digest.qq_ns - qq) <= qq / 256 + 1)


def _hlogs(tmp_path: Path) -> tuple[list[str], list[int]]:
    """Three hosts' HdrHistogram logs (three 1 s intervals each) and their sample counts."""
    import io

    from jitterlab.store.hdr.histogram import Histogram
    from jitterlab.store.hdr.log import LogWriter

    logs, totals = [], []
    for host in range(3):
        rng = np.random.default_rng(host)
        out = io.StringIO()
        writer = LogWriter(out)
        writer.version()
        writer.start_time(1_700_000_000_000 + host * 5_000)
        writer.legend()
        total = 0
        for i in range(3):
            h = Histogram.auto(3)
            v, c = np.unique(rng.lognormal(9.5, 0.3, 300 + 100 * host).astype(np.int64), return_counts=True)
            h.record(v, c)
            total += int(c.sum())
            writer.interval(1_700_000_000 + i, 1_700_000_001 + i, h)
        path = tmp_path / f"host{host}.hlog"
        path.write_text(out.getvalue())
        logs.append(str(path))
        totals.append(total)
    return logs, totals


def test_a_merged_histogram_run_is_split_by_tag(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs, totals = _hlogs(tmp_path)
    merged = merge(ResultsStore(store), logs, "hosts")
    rc, out, err = run_main(["describe", merged.id, "--store", str(store)], capsys)
    assert rc == 0, err
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(("(union)", "host"))}
    assert f"{sum(totals):,}" in rows["(union)"]
    for host, total in enumerate(totals):
        assert f"{total:,}" in rows[f"host{host}"]
    # a histogram run is no part of a --union (its exact union is merge's)
    (sample,) = _runs(store, _sources()[:1])
    for command in (
        ["describe", sample.id, merged.id, "--union"],
        ["report", sample.id, merged.id, "--union"],
    ):
        rc, out, err = run_main([*command, "--store", str(store)], capsys)
        assert rc == 2 and out == "" and "holds a histogram only" in err
        assert_one_line_error(err)

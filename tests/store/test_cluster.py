"""--cluster (issue 25 item 5): show, describe, compare, merge, report, model build and
export computed on a real local Dask
cluster of 2 worker processes equal the single-process path, number for number; a missing
extra, an address that does not answer, and a worker that dies mid-analysis are one line
and exit 2, with the store unchanged."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_merge import write_hlog

from conftest import assert_one_line_error, latency_clusters, make_run, run_main
from jitterlab.stats import stacked_z_test
from jitterlab.stats.categories import categories_scan
from jitterlab.stats.outofcore import stacked_z_chunks, stacked_z_scan
from jitterlab.stats.windows import GATHER_AT, time_windows, time_windows_scan
from jitterlab.store.merge import merge
from jitterlab.store.reader import latency_chunks, summarize_file, timed_latency_chunks
from jitterlab.store.runs import ResultsStore, load_run, verified_samples_path

distributed = pytest.importorskip("distributed", reason="the cluster extra (scripts/setup.sh installs it)")

SILENT = "tcp://127.0.0.1:9"  # the discard port: nothing listens there


@pytest.fixture(scope="module")
def client():
    from jitterlab.cluster.engine import connect

    with connect("local:2") as c:
        assert len(c.scheduler_info()["workers"]) == 2
        yield c


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A store with a run of 3 row groups (2^20 rows each but the last; 4 pairs, 21 s of
    send times), a small run and a run recorded with gaps (empty windows)."""
    store = tmp_path_factory.mktemp("cluster") / "store"
    x = np.concatenate([latency_clusters(seed=s, n=1_000_000) for s in (1, 2)])
    gaps = latency_clusters(seed=4, n=30_000)
    t_gaps = 1_000_000_000 + np.arange(gaps.size) * 10_000 + (np.arange(gaps.size) // 10_000) * 3_000_000_000
    runs = [
        make_run(store, x, pairs=4),
        make_run(store, latency_clusters(seed=3, n=70_000)),
        make_run(store, gaps, t_send=t_gaps),
    ]
    return store, [r.id for r in runs]


def _numbers(text: str) -> Any:
    """A JSON document with NaN kept as the word (NaN != NaN would hide equal documents)."""
    return json.loads(text, parse_constant=lambda word: word)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run_main(list(args), capsys)
    assert code == 0, err
    return out


def _files(store: Path) -> list[str]:
    return sorted(str(p.relative_to(store)) for p in store.rglob("*"))


@pytest.mark.slow
def test_cluster_summary_equals_the_single_process_one(client, big, tmp_path: Path) -> None:
    from jitterlab.cluster.engine import summarize_on_cluster

    store, ids = big
    merged = merge(ResultsStore(tmp_path / "store"), [str(store / i) for i in ids[:2]], "fleet")
    for path in [
        *(verified_samples_path(load_run(i, ResultsStore(store))) for i in ids),
        verified_samples_path(merged),
    ]:
        assert summarize_on_cluster(client, path) == summarize_file(path)


@pytest.mark.slow
def test_stacked_z_levels_on_the_cluster_equal_the_in_memory_test(client, big) -> None:
    """Below 2^22 values a level's sample is gathered; with a small bound every level's
    median and MAD is selected on the workers instead: still the in-memory result."""
    from jitterlab.cluster.engine import ClusterScan

    store, ids = big
    path = verified_samples_path(load_run(ids[0], ResultsStore(store)))
    on_cluster = stacked_z_scan(ClusterScan(client, path), in_memory_at=1_000)
    here = stacked_z_chunks(lambda: latency_chunks(path), in_memory_at=1_000)
    whole = stacked_z_test(np.concatenate(list(latency_chunks(path))))
    assert len(on_cluster.thresholds) >= 2
    assert on_cluster == here
    assert on_cluster.thresholds == whole.thresholds
    assert on_cluster.categories == whole.categories


@pytest.mark.slow
def test_categories_and_windows_on_the_cluster_equal_the_in_memory_ones(client, big) -> None:
    """categories.category_ranges and windows.window_chunk / window_refine_chunk /
    window_values_chunk run on the workers (one row group each) give the in-memory numbers,
    under the default bound on gathered values and a small one (more refinement passes)."""
    from jitterlab.cluster.engine import ClusterEngine

    store, ids = big
    path = verified_samples_path(load_run(ids[0], ResultsStore(store)))
    t, x = (np.concatenate(c) for c in zip(*timed_latency_chunks(path), strict=True))
    engine = ClusterEngine(client)
    expected = stacked_z_test(x, two_sided=True)
    cuts = (expected.thresholds, expected.low_threshold, expected.levels, expected.threshold)
    assert categories_scan(engine.latency(path), *cuts, False) == expected
    in_memory = time_windows(t, x, 700_000_000, expected)
    for gather_at in (GATHER_AT, 5_000):
        found = time_windows_scan(engine.timed(path), 700_000_000, expected, gather_at=gather_at)
        for field in ("start_ns", "count", "mean", "p50", "p99", "max", "category_counts"):
            assert np.array_equal(getattr(found, field), getattr(in_memory, field), equal_nan=True), field


@pytest.mark.slow
def test_describe_on_a_cluster_prints_the_same_numbers(client, big, capsys) -> None:
    store, (run, small, gaps) = big
    address = client.scheduler.address
    at = ("--store", str(store))
    cases = [
        ("describe", run, "--json"),
        ("describe", gaps, "--json", "--window", "500ms", "--two-sided"),
        ("describe", run, "--json", "--baseline", small, "--percentiles", "50,99.99,max"),
        ("describe", run, "--json", "--test", "gesd"),
        ("describe", run, "--json", "--test", "walsh", "--window", "3s"),
        ("show", run, "--json", "--percentiles", "99.999,max"),
        ("show", run, "--json", "--recompute"),
    ]
    for case in cases:
        alone = _numbers(_cli(capsys, *case, *at))
        clustered = _numbers(_cli(capsys, *case, "--cluster", address, *at))
        assert clustered == alone, case
    description = _numbers(_cli(capsys, "describe", small, "--json", "--cluster", "local:2", *at))
    assert description == _numbers(_cli(capsys, "describe", small, "--json", *at))
    assert len(description["categories"]) >= 3 and description["windows"]


@pytest.mark.slow
def test_describe_on_a_cluster_runs_the_two_passes_on_the_workers(client, big, tmp_path, capsys) -> None:
    """describe's categories and windows come from the two-pass kernels run on the workers
    (a first pass, then refinement passes; no radix pass); where the single-process path
    leaves the kernels (windows too many for the histograms, samples outside the stored
    extents) the cluster takes the radix passes too: the same numbers either way."""
    from distributed import get_task_stream

    store, (run, _small, gaps) = big
    tampered = tmp_path / "store"
    shutil.copytree(store / run, tampered / run)
    meta_path = tampered / run / "run.json"
    meta = json.loads(meta_path.read_text())
    meta["summary"]["latency_ns"]["min"] += 1  # a sample below the stored minimum
    meta_path.write_text(json.dumps(meta))
    two_pass = {"first_pass_group", "refine_group"}
    cases = [
        # the percentiles' intervals add their own passes (block counts, refinement at ranks)
        ((run, "--json"), lambda names: two_pass <= names and "window_chunk" not in names),
        ((run, "--json", "--test", "gesd"), lambda names: two_pass <= names and "window_chunk" not in names),
        (
            (gaps, "--json", "--window", "100us"),
            lambda names: names & two_pass == set() and "window_chunk" in names,
        ),
    ]
    for case, expected in [
        *(((*c, "--store", str(store)), e) for c, e in cases),
        (
            (run, "--json", "--store", str(tampered)),
            lambda names: {"first_pass_group", "window_chunk"} <= names,
        ),
    ]:
        with get_task_stream(client) as stream:
            clustered = _numbers(_cli(capsys, "describe", *case, "--cluster", client.scheduler.address))
        names = {str(task["key"]).split("-")[1] for task in stream.data}
        assert expected(names), (case, names)
        assert clustered == _numbers(_cli(capsys, "describe", *case)), case
    # show --recompute: the summary in two passes, its percentiles from every value counted
    case = ("show", run, "--json", "--recompute", "--store", str(store))
    with get_task_stream(client) as stream:
        clustered = _numbers(_cli(capsys, *case, "--cluster", client.scheduler.address))
    # and the intervals of its percentiles (block counts, the order statistics at their ranks)
    names = {str(task["key"]).split("-")[1] for task in stream.data}
    assert (
        {"integer_moments", "value_counts"}
        <= names
        <= {
            "integer_moments",
            "value_counts",
            "block_counts_chunk",
            "chunk_extent",
            "refine_chunk",
        }
    ), names
    assert clustered == _numbers(_cli(capsys, *case))


@pytest.mark.slow
def test_compare_on_a_cluster_prints_the_same_comparison(client, big, capsys) -> None:
    """compare --cluster: both runs read by the workers (extent, every value counted, the
    subsample's positions), never by the client; every number as in one process."""
    from distributed import get_task_stream

    store, (run, small, gaps) = big
    for case in (
        ("compare", small, run, "--json"),
        ("compare", run, gaps, "--json", "--percentiles", "50,99.9,max", "--noise", "0.01"),
    ):
        at = (*case, "--store", str(store))
        with get_task_stream(client) as stream:
            clustered = _numbers(_cli(capsys, *at, "--cluster", client.scheduler.address))
        names = {str(task["key"]).split("-")[1] for task in stream.data}
        assert {"chunk_extent", "value_counts", "positions"} <= names, names
        assert clustered == _numbers(_cli(capsys, *at)), case


def _without_time(page: str) -> str:
    """A report's HTML without the minute it was generated in."""
    return re.sub(r"generated [0-9-]+ [0-9:]+ UTC", "generated", page)


@pytest.mark.slow
def test_report_on_a_cluster_writes_the_same_report(client, big, tmp_path, capsys, monkeypatch) -> None:
    """report --cluster: every section's numbers and the comparisons from the workers (the
    two-pass kernels, the comparison's passes), the panels from a local streamed pass; the
    page equals the local report's streamed one (a small memory bound sends the local
    report to the row-group path the cluster takes at any size), figures included."""
    from distributed import get_task_stream

    monkeypatch.setenv("JITTERLAB_MEMORY_LIMIT_MB", "1")
    store, (run, small, gaps) = big
    pages = {}
    for where in ("alone", "cluster"):
        out = tmp_path / f"{where}.html"
        args = ["report", run, small, gaps, "-o", str(out), "--percentiles", "50,99.99,max"]
        cluster = ["--cluster", client.scheduler.address] if where == "cluster" else []
        with get_task_stream(client) as stream:
            _cli(capsys, *args, *cluster, "--store", str(store))
        names = {str(task["key"]).split("-")[1] for task in stream.data}
        if where == "cluster":
            assert {"first_pass_group", "value_counts", "positions"} <= names, names
        else:
            assert not names
        pages[where] = _without_time(out.read_text())
    assert "data-ns" in pages["alone"] and "verdict" in pages["alone"].lower()
    assert pages["cluster"] == pages["alone"]


@pytest.mark.slow
def test_model_build_and_export_on_a_cluster_write_the_same_files(client, big, tmp_path, capsys) -> None:
    store, (run, small, gaps) = big
    address = client.scheduler.address
    cases = [
        ("model", "build", run),
        ("model", "build", small, "--points", "64", "--scale", "2"),
        ("export", run, "--format", "hgrm"),
        ("export", gaps, "--format", "hgrm", "--percentiles", "50,99.9,99.999,max", "--unit", "ns"),
        ("export", run, "--format", "hlog", "--window", "500ms"),
        ("export", gaps, "--format", "hlog"),
    ]
    for i, case in enumerate(cases):
        written = []
        for cluster in ([], ["--cluster", address]):
            out = tmp_path / f"{i}-{len(cluster)}.out"
            _cli(capsys, *case, "-o", str(out), *cluster, "--store", str(store))
            written.append(out.read_bytes())
        assert written[0] == written[1], case
        assert len(written[0]) > 200, case


def test_export_and_model_refuse_on_a_cluster_what_they_do_here(tmp_path: Path, capsys) -> None:
    """csv and parquet exports are copies (nothing to compute); --kde holds every sample here: each one line, exit 2, before a cluster starts."""
    store = tmp_path / "store"
    run = make_run(store, latency_clusters(seed=6, n=5_000))
    before = _files(store)
    for args, words in (
        (["export", run.id, "--format", "csv"], "copies the samples"),
        (["export", run.id, "--format", "parquet"], "copies the samples"),
        (["model", "build", run.id, "--kde"], "--kde"),
        (["report", run.id, "--union"], "--union"),
    ):
        out = tmp_path / "out"
        code, _, err = run_main(
            [*args, "-o", str(out), "--cluster", "local:1", "--store", str(store)], capsys
        )
        assert code == 2 and words in err, (args, err)
        assert_one_line_error(err)
        assert not out.exists()
    assert _files(store) == before


@pytest.mark.slow
def test_merge_on_a_cluster_stores_the_same_run(client, big, tmp_path: Path, capsys) -> None:
    store, (run, small, gaps) = big
    write_hlog(tmp_path / "host.hlog", seed=7)
    for i, sources in enumerate(([run, small, gaps], [run, str(tmp_path / "host.hlog")])):
        merged = {}
        for where in ("alone", "cluster"):
            target = tmp_path / where / "store"
            refs = [s if s.endswith(".hlog") else str(store / s) for s in sources]
            cluster = ["--cluster", client.scheduler.address] if where == "cluster" else []
            out = _cli(capsys, "merge", *refs, "--as", f"fleet-{i}", *cluster, "--store", str(target))
            shown = _numbers(_cli(capsys, "show", out.strip(), "--json", "--store", str(target)))
            meta = load_run(out.strip(), ResultsStore(target)).meta
            # the stored summary is the one computed on the workers; show reads the samples
            merged[where] = (shown | {"id": None}, meta["summary"], meta["merge"], meta.get("histogram"))
            if meta.get("histogram") is not None:  # every interval histogram, as encoded
                merged[where] += ((target / out.strip() / "histogram.hlog").read_bytes(),)
            else:
                described = _cli(capsys, "describe", out.strip(), "--json", "--store", str(target))
                merged[where] += (_numbers(described) | {"id": None},)
        assert merged["cluster"] == merged["alone"], sources


@pytest.mark.slow
def test_a_silent_cluster_is_one_line_and_changes_nothing(big, capsys) -> None:
    store, (run, small, _) = big
    before = _files(store)
    for args in (
        ["show", run, "--cluster", SILENT],
        ["describe", run, "--cluster", SILENT],
        ["merge", run, small, "--as", "x", "--cluster", SILENT],
        ["compare", run, small, "--cluster", SILENT],
        ["report", run, "-o", str(store / "r.html"), "--cluster", SILENT],
        ["model", "build", run, "-o", str(store / "m.json"), "--cluster", SILENT],
        ["export", run, "--format", "hgrm", "-o", str(store / "x.hgrm"), "--cluster", SILENT],
        ["describe", run, "--cluster", "local:0"],
        ["describe", run, "--cluster", "nonsense"],
    ):
        code, _, err = run_main([*args, "--store", str(store)], capsys)
        assert code == 2 and ("no scheduler answers" in err or "local:N" in err), err
        assert_one_line_error(err)
    assert _files(store) == before


@pytest.mark.slow
def test_a_scheduler_without_workers_is_one_line(big, capsys, monkeypatch) -> None:
    from distributed import LocalCluster

    from jitterlab.cluster import engine as module

    monkeypatch.setattr(module, "WORKERS_WITHIN_S", 1)
    store, (run, _, _) = big
    with LocalCluster(
        n_workers=0, dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}
    ) as empty:
        capsys.readouterr()
        code, _, err = run_main(
            ["describe", run, "--cluster", empty.scheduler_address, "--store", str(store)], capsys
        )
    assert code == 2 and "has no workers" in err, err
    assert_one_line_error(err)


@pytest.mark.slow
def test_a_time_range_on_a_cluster_is_the_local_answer(client, big, tmp_path: Path, capsys) -> None:
    """Issue 37 item 1: --from/--to is a filter of the one reader, so it combines with
    --cluster: each task reads its row group through the reader with the filter (row groups
    the span misses get no task) and describe's and export's answers are the local ones."""
    store, (run, _, gaps) = big
    address = client.scheduler.address
    cases = [
        ("describe", run, "--from", "3", "--to", "9", "--json"),
        ("describe", run, "--from", "3", "--to", "9", "--test", "gesd", "--json"),
        ("describe", run, "--from", "12", "--window", "500ms", "--percentiles", "50,99.9", "--json"),
        ("describe", gaps, "--from", "1", "--to", "8", "--json"),  # chunks the span empties
        ("export", run, "--format", "hgrm", "--from", "3", "--to", "9", "-o", "-"),
        ("export", gaps, "--format", "hlog", "--from", "1", "--to", "8", "-o", "-"),
    ]
    local = {}
    for case in cases:
        answers = [
            _cli(capsys, *case, *cluster, "--store", str(store)) for cluster in ([], ["--cluster", address])
        ]
        if "--json" in case:
            here, there = (_numbers(a) for a in answers)
            here["args"] = there["args"] = None  # the command line differs by --cluster
            assert there == here, case
        else:
            assert answers[1] == answers[0], case
        local[case] = answers[0]
    whole = _cli(capsys, "describe", run, "--json", "--store", str(store))
    assert _numbers(whole)["summary"] != _numbers(local[cases[0]])["summary"]  # the span is not the run


@pytest.mark.slow
def test_the_cluster_sample_has_the_local_samples_intervals(client, big) -> None:
    """Issue 37 item 3: compare's sample read by the workers has ``intervals`` (an
    OrderedSample as the local ones), equal to the held and the streamed sample's."""
    from jitterlab.cluster.sample import ClusterSample
    from jitterlab.stats.compare import COMPARE_PERCENTILES, ChunkedSample, SortedSample

    store, ids = big
    levels = (*COMPARE_PERCENTILES, 99.99, 100.0)
    for run_id in ids:
        path = verified_samples_path(load_run(store / run_id))
        held = SortedSample(np.concatenate(list(latency_chunks(path))))
        for confidence in (0.95, 0.99):
            expected = [q.to_dict() for q in held.intervals(levels, confidence)]
            streamed = ChunkedSample(lambda p=path: latency_chunks(p))
            assert [q.to_dict() for q in streamed.intervals(levels, confidence)] == expected
            on_cluster = ClusterSample(client, path).intervals(levels, confidence)
            assert [q.to_dict() for q in on_cluster] == expected, run_id


def test_an_empty_time_range_on_a_cluster_is_one_line(tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    run = make_run(store, latency_clusters(seed=6, n=5_000))
    for command in (["describe", run.id], ["export", run.id, "--format", "hgrm", "-o", "-"]):
        code, _, err = run_main(
            [*command, "--from", "900", "--cluster", "local:1", "--store", str(store)], capsys
        )
        assert code == 2 and "no samples sent between" in err, err
        assert_one_line_error(err)


class DieOn(distributed.WorkerPlugin):
    """A worker plugin: the worker process kills itself (SIGKILL) when it starts a task of
    the named pass, on every worker the cluster starts again."""

    def __init__(self, word: str) -> None:
        self.word = word

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish == "executing" and self.word in str(key):
            os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "word"),
    [("describe", "refine_group"), ("merge", "integer_moments"), ("show", "value_counts")],
)
def test_a_worker_dying_mid_analysis_is_one_line_and_changes_nothing(
    big, tmp_path: Path, capsys, command: str, word: str
) -> None:
    import dask
    from distributed import Client

    from jitterlab.cluster.engine import local_cluster

    store, (run, small, _) = big
    target = tmp_path / "store"
    merge(ResultsStore(target), [str(store / run), str(store / small)], "before")
    before = _files(target)
    args = {
        "describe": ["describe", str(store / run)],
        "merge": ["merge", str(store / run), str(store / small), "--as", "x"],
        "show": ["show", str(store / run), "--recompute"],
    }[command]
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        local_cluster(2) as cluster,
        Client(cluster) as c,
    ):
        c.register_plugin(DieOn(word), name="die")
        capsys.readouterr()  # the cluster's own start-up messages
        code, _, err = run_main(
            [*args, "--cluster", cluster.scheduler_address, "--store", str(target)], capsys
        )
    assert code == 2 and "KilledWorker" in err, err
    assert_one_line_error(err)
    assert _files(target) == before


def test_a_worker_that_cannot_read_the_run_is_one_line(client, tmp_path: Path) -> None:
    from jitterlab.cluster.engine import ClusterScan
    from jitterlab.core.errors import JitterlabError
    from jitterlab.stats.summary import chunk_extent

    with pytest.raises(JitterlabError, match="could not read the run") as e:
        list(ClusterScan(client, tmp_path / "gone.parquet", groups=range(1)).map(chunk_extent))
    assert "\n" not in str(e.value)

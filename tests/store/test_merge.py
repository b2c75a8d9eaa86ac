"""``jitterlab merge`` (issue 25 item 4): runs and HdrHistogram logs of several hosts made
into one run, checked against the same merge done with the whole data in memory."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from test_hdr_oracle import oracle as java_oracle  # noqa: F401  (the Java 2.2.2 fixture)

from conftest import assert_one_line_error, latency_clusters, make_run, run_main
from jitterlab.stats.summary import summarize
from jitterlab.store import load_run
from jitterlab.store.hdr.histogram import Histogram
from jitterlab.store.hdr.log import LogReader, LogWriter
from jitterlab.store.hdr.streams import figures
from jitterlab.store.merge import merge
from jitterlab.store.runs import ResultsStore


def write_hlog(path: Path, seed: int, intervals: int = 5, unit_comment: str = "") -> list[Histogram]:
    """A log of one simulated host: ``intervals`` one-second histograms of a heavy-tailed mixture."""
    rng = np.random.default_rng(seed)
    out = io.StringIO()
    writer = LogWriter(out)
    writer.version()
    if unit_comment:
        writer.comment(unit_comment)
    start_ms = 1_700_000_000_000 + seed * 7_000  # every host started at its own time
    writer.start_time(start_ms)
    writer.legend()
    hs = []
    for i in range(intervals):
        h = Histogram.auto(3)
        values = np.concatenate([rng.lognormal(9.5, 0.3, 400), rng.pareto(1.5, 20) * 50_000 + 20_000]).astype(
            np.int64
        )
        v, c = np.unique(values, return_counts=True)
        h.record(v, c)
        writer.interval(start_ms / 1000 + i, start_ms / 1000 + i + 1, h)
        hs.append(h)
    path.write_text(out.getvalue())
    return hs


def test_merge_of_stored_runs_is_exact_and_keeps_the_source(store: Path) -> None:
    lat = [latency_clusters(seed=s, n=n) for s, n in ((1, 20_000), (2, 31_000), (3, 7_000), (4, 12_000))]
    sends = [5_000_000_000 * (i + 1) + np.arange(x.size) * 10_000 for i, x in enumerate(lat)]
    runs = [
        make_run(store, x, t_send=t, pairs=1 + i % 3) for i, (x, t) in enumerate(zip(lat, sends, strict=True))
    ]
    merged = merge(ResultsStore(store), [r.id for r in runs], "fleet")
    assert not merged.histogram_only and merged.meta["merge"]["kind"] == "samples"
    union = np.concatenate(lat)
    expected = summarize(union).to_dict()
    assert merged.meta["summary"]["latency_ns"] == expected
    again = load_run(merged.id, store)
    table = pq.read_table(again.path / "samples.parquet")
    source = table.column("source").to_numpy()
    latency = table.column("t_recv_ns").to_numpy() - table.column("t_send_ns").to_numpy()
    for i, run in enumerate(runs):
        np.testing.assert_array_equal(latency[source == i], run.latency_ns)
        # each source's time counts from its own start
        assert table.column("t_send_ns").to_numpy()[source == i].min() == 0
        assert merged.meta["merge"]["sources"][i]["id"] == run.id
        assert merged.meta["merge"]["sources"][i]["start_ns"] == int(sends[i][0])


def test_merge_of_many_hlogs_equals_the_histograms_added_in_memory(tmp_path: Path, store: Path) -> None:
    logs, in_memory = [], []
    for host in range(40):
        path = tmp_path / f"host{host:02d}.hlog"
        in_memory.append(write_hlog(path, seed=host))
        logs.append(str(path))
    merged = merge(ResultsStore(store), logs, "hosts")
    assert merged.histogram_only and merged.meta["merge"]["kind"] == "histogram"
    union = Histogram.auto(3)
    for hs in in_memory:
        for h in hs:
            union.add(h)
    assert merged.meta["summary"]["latency_ns"] == figures(union)
    streams = {s["tag"]: s for s in merged.meta["histogram"]["streams"]}
    for host, hs in enumerate(in_memory):
        alone = Histogram.auto(3)
        for h in hs:
            alone.add(h)
        assert streams[f"host{host:02d}"]["summary"] == figures(alone)
    # windows use each source's own start: every host's first interval is at offset 0
    with (merged.path / "histogram.hlog").open("rb") as f:
        first = [i for i in LogReader(f, "merged").intervals() if i.tag is None][:40]
    assert {i.offset_s for i in first} == {0.0}


def test_mixing_samples_and_histograms_gives_a_histogram_run_and_says_so(tmp_path: Path, store: Path) -> None:
    x = latency_clusters(seed=9, n=20_000)
    run = make_run(store, x)
    write_hlog(tmp_path / "a.hlog", seed=1)
    heard: list[str] = []
    merged = merge(ResultsStore(store), [run.id, str(tmp_path / "a.hlog")], "mixed", heard.append)
    assert merged.histogram_only and "histogram run" in heard[0]
    streams = {s["tag"]: s for s in merged.meta["histogram"]["streams"]}
    recorded = Histogram.auto(3)
    v, c = np.unique(x, return_counts=True)
    recorded.record(v, c)
    assert streams[merged.meta["merge"]["sources"][0]["name"]]["summary"]["count"] == x.size
    assert streams[merged.meta["merge"]["sources"][0]["name"]]["summary"] == figures(recorded)


def test_different_units_are_refused_in_one_line(tmp_path: Path, store: Path, capsys) -> None:
    write_hlog(tmp_path / "ns.hlog", seed=1)
    write_hlog(tmp_path / "us.hlog", seed=2, unit_comment="values are in microseconds")
    before = sorted(p.name for p in Path(store).glob("*")) if Path(store).exists() else []
    code, _, err = run_main(
        ["merge", str(tmp_path / "ns.hlog"), str(tmp_path / "us.hlog"), "--as", "x", "--store", str(store)],
        capsys,
    )
    assert code == 2 and "in ns" in err and "in us" in err
    assert_one_line_error(err)
    assert sorted(p.name for p in Path(store).glob("*") if p.name != ".staging") == before
    assert not any((Path(store) / ".staging").glob("*"))


def test_different_clocks_are_refused_by_merge_and_by_union_alike(store: Path, capsys) -> None:
    """One check (store/merge.py check_alike) for merge and for describe/report --union: the
    same line, naming both clocks, only the command differs."""
    import json

    a = make_run(store, latency_clusters(seed=1, n=3_000))
    b = make_run(store, latency_clusters(seed=2, n=4_000))
    path = b.path / "run.json"
    meta = json.loads(path.read_text())
    meta["samples"]["clock"] = "CLOCK_REALTIME"
    path.write_text(json.dumps(meta))
    lines = {}
    for command in (["merge", a.id, b.id, "--as", "x"], ["describe", a.id, b.id, "--union"]):
        code, out, err = run_main([*command, "--store", str(store)], capsys)
        assert code == 2 and out == ""
        assert_one_line_error(err)
        assert "CLOCK_MONOTONIC" in err and "CLOCK_REALTIME" in err
        lines[command[0]] = err.strip()
    assert "merge: run " in lines["merge"] and "--union: run " in lines["describe"]
    assert lines["merge"].split("merge: ", 1)[1] == lines["describe"].split("--union: ", 1)[1]
    assert not list(Path(store).glob("*-merge-x-*"))  # nothing stored


def test_merge_from_the_command_line(tmp_path: Path, store: Path, capsys) -> None:
    a = make_run(store, latency_clusters(seed=1, n=3_000))
    b = make_run(store, latency_clusters(seed=2, n=4_000))
    code, out, err = run_main(["merge", a.id, b.id, "--as", "two-hosts", "--store", str(store)], capsys)
    assert code == 0, err
    run = load_run(out.strip(), store)
    assert run.meta["summary"]["latency_ns"]["count"] == a.latency_ns.size + b.latency_ns.size
    assert "2 sources" in err
    code, _, err = run_main(["merge", a.id, "--as", "one", "--store", str(store)], capsys)
    assert code == 2 and "at least two" in err
    code, _, err = run_main(["merge", a.id, b.id, "--as", "bad name", "--store", str(store)], capsys)
    assert code == 2 and "--as" in err


def test_the_merged_log_reads_the_same_in_java(java_oracle, tmp_path: Path, store: Path) -> None:  # noqa: F811
    # HdrHistogram Java 2.2.2's log reader over the merged run's log: the union (untagged
    # stream) and each host's stream have the figures and .hgrm jitterlab stored
    logs = []
    for host in range(6):
        write_hlog(tmp_path / f"h{host}.hlog", seed=100 + host, intervals=3)
        logs.append(str(tmp_path / f"h{host}.hlog"))
    merged = merge(ResultsStore(store), logs, "java")
    [java] = java_oracle([["log", str(merged.path / "histogram.hlog"), "-", "-", "0", "5", "1.0"]])
    assert java["reader_error"] is None
    ours = {s["tag"] or "": s["summary"] for s in merged.meta["histogram"]["streams"]}
    assert set(java["streams"]) == set(ours)
    for tag, stream in java["streams"].items():
        assert stream["whole"]["count"] == ours[tag]["count"]
        assert stream["whole"]["max"] == ours[tag]["max"]
        keys = ("p50", "p90", "p99", "p99_9", "p99_99", "p99_999")
        assert stream["whole"]["p"] == [ours[tag][k] for k in keys], tag
        assert stream["whole"]["mean"] == ours[tag]["mean"]

"""The JVM harness: GC-log parsing on real log lines of both JDKs, and small real runs."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from conftest import assert_one_line_error, latency_clusters, make_run, run_cli
from jitterlab.describe.analysis import pauses_in_run
from jitterlab.describe.report import mark_pauses
from jitterlab.describe.tables import collector_table, table1
from jitterlab.measure import jvm
from jitterlab.store import ResultsStore

# Captured from this machine: OpenJDK 17 with G1, and Temurin 25 with ZGC (note the padded tag).
JDK17_LINES = """\
[8740290344281ns][info][gc] GC(0) Pause Young (Normal) (G1 Preventive Collection) 10M->5M(16M) 2.495ms
[8740726180300ns][info][gc       ] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 9M->5M(16M) 1.449ms
[8740290383355ns][info][safepoint] Safepoint "G1CollectForAllocation", Time since last: 540341331 ns, \
Reaching safepoint: 4807 ns, Cleanup: 44809 ns, At safepoint: 2572256 ns, Total: 2621872 ns
[8676630393977ns][info][gc] Using Serial
"""
JDK25_LINES = """\
[8741245222739ns][info][gc] Using The Z Garbage Collector
[8741266339326ns][info][safepoint] Safepoint "ZMarkStartYoungAndOld", Time since last: 13859267 ns, \
Reaching safepoint: 4384 ns, At safepoint: 21721 ns, Leaving safepoint: 2351 ns, Total: 28456 ns, Threads: 1 runnable, 8 total
"""


def test_gc_and_safepoint_pauses_are_parsed_with_monotonic_start_and_end() -> None:
    events = jvm.parse_gc_log(JDK17_LINES)
    assert [e["kind"] for e in events] == ["gc-pause", "gc-pause", "safepoint"]
    first = events[0]
    assert first["end_ns"] == 8740290344281 and first["start_ns"] == 8740290344281 - 2_495_000
    assert first["cause"].startswith("Pause Young (Normal) (G1 Preventive Collection)")
    assert events[1]["gc_id"] == 1
    assert events[2]["cause"] == "G1CollectForAllocation"
    assert events[2]["start_ns"] == 8740290383355 - 2621872
    (zgc,) = jvm.parse_gc_log(JDK25_LINES)
    assert zgc["kind"] == "safepoint" and zgc["end_ns"] - zgc["start_ns"] == 28456
    summary = jvm.pause_summary(events)
    assert summary["gc-pause"]["count"] == 2 and summary["gc-pause"]["max_ns"] == 2_495_000


needs_jdk = pytest.mark.skipif(not jvm.find_jdks(), reason="no JDK under /usr/lib/jvm")


@needs_jdk
def test_every_jvm_technique_and_two_collectors_make_runs_that_read_like_native_ones(
    store: Path, tmp_path: Path
) -> None:
    techniques = "java-monitor,java-lock,disruptor,pekko" + (
        ",java-vthread" if jvm.find_jdks()[0].feature >= 21 else ""
    )
    result = run_cli(
        "bench",
        "--runtime",
        "jvm",
        "--technique",
        techniques,
        "--dispatcher",
        "default,pinned",
        "--gc",
        "serial,g1",
        "--samples",
        "3000",
        "--warmup-samples",
        "100",
        "--heap",
        "32m",
        "--json",
        "--store",
        str(store),
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == 2 * (len(techniques.split(",")) + 1)  # pekko twice: two dispatchers
    runs = ResultsStore(store).runs()
    for run in runs:
        assert run.meta["config"]["runtime"] == "jvm"
        assert run.latency_ns.size == 3000 and (run.latency_ns >= 0).all()
        assert run.meta["jvm"]["gc"] in ("serial", "g1")
        assert "pause_events" in run.meta["jvm"]
        assert run.meta["java"]["gc_beans"]
        assert run.meta["floor"]["clock_overhead_ns"]["median"] > 0
        roles = {(p["role"], p["pair"]) for p in run.meta["obtained"]["placements"]}
        assert {("sender", 0), ("receiver", 0)} <= roles, run.label
        assert run.meta["obtained"]["policies"] == ["other"]
    labels = {run.technique_label for run in runs}
    assert {"pekko/default[g1]", "pekko/pinned[serial]", "disruptor/blocking[g1]"} <= labels
    # Tables 2–3: one row per technique × collector × scheduler; Table 1 keeps collectors apart.
    assert len(collector_table(runs).splitlines()) == 2 + len(runs)
    assert len(table1(runs).splitlines()) == 2 + len(runs)
    one = runs[0].id
    assert run_cli("describe", one, "--store", str(store)).returncode == 0
    report = tmp_path / "r.html"
    assert (
        run_cli("report", *[r.id for r in runs[:4]], "-o", str(report), "--store", str(store)).returncode == 0
    )
    text = report.read_text()
    assert "Tables 2–3" in text and "collector serial" in text


@needs_jdk
def test_gc_pauses_sit_where_no_java_thread_could_take_a_timestamp(store: Path) -> None:
    """A stop-the-world pause stops every Java thread, so no sample's send or receive time
    can fall inside one if the log's tn clock is the samples' clock (shrunk by 1 µs for the
    log's rounding of durations to 1 µs)."""
    result = run_cli(
        "bench",
        "--technique",
        "pekko",
        "--gc",
        "serial",
        "--heap",
        "16m",
        "--samples",
        "60000",
        "--store",
        str(store),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    (run,) = ResultsStore(store).runs()
    pauses = [e for e in pauses_in_run(run) if e["kind"] == "gc-pause"]
    assert pauses, "a 16 MB heap and 60 000 Pekko messages should need a young collection"
    stamps = np.sort(np.concatenate([run.t_send_ns, run.t_recv_ns]))
    for e in pauses:
        lo, hi = np.searchsorted(stamps, [e["start_ns"] + 1_000, e["end_ns"] - 1_000])
        assert hi == lo, f"{hi - lo} timestamps inside {e}"


def test_pause_marks_land_at_the_pauses_start_in_seconds(store: Path) -> None:
    latency = latency_clusters(3)
    run = make_run(store, latency, t_send=1_000_000_000 + np.arange(latency.size, dtype=np.int64) * 10_000)
    first, span = int(run.t_send_ns.min()), int(run.t_send_ns.max() - run.t_send_ns.min())
    run.meta["jvm"] = {
        "pause_events": [
            {"kind": "gc-pause", "start_ns": first + span // 4, "end_ns": first + span // 4 + 2_000_000},
            {"kind": "safepoint", "start_ns": first + span // 2, "end_ns": first + span // 2 + 30_000},
            {"kind": "gc-pause", "start_ns": first - 10**9, "end_ns": first - 10**9 + 1_000},  # before
        ]
    }
    assert len(pauses_in_run(run)) == 2
    fig, ax = plt.subplots()
    mark_pauses(ax, run, first)
    drawn = {c.get_label(): [seg[0][0] for seg in c.get_segments()] for c in ax.collections}
    plt.close(fig)
    # seconds since the run started, like the timeline they are drawn on
    assert drawn["gc pause (1)"] == pytest.approx([span // 4 / 1e9], abs=1e-9)
    assert drawn["safepoint (1)"] == pytest.approx([span // 2 / 1e9], abs=1e-9)


@needs_jdk
def test_one_command_runs_native_and_jvm_techniques_into_one_table(store: Path) -> None:
    result = run_cli(
        "bench",
        "--technique",
        "mutex,java-lock",
        "--samples",
        "2000",
        "--store",
        str(store),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert {r.meta["config"]["runtime"] for r in ResultsStore(store).runs()} == {"native", "jvm"}
    assert "mutex ×1" in result.stdout and "jvm/java-lock[g1] ×1" in result.stdout
    wrong = run_cli("bench", "--runtime", "native", "--technique", "pekko", "--store", str(store))
    assert wrong.returncode == 2
    assert_one_line_error(wrong.stderr)


@needs_jdk
def test_a_bad_collector_is_a_one_line_error_and_a_missing_one_is_skipped(store: Path) -> None:
    bad = run_cli(
        "bench", "--runtime", "jvm", "--technique", "java-lock", "--gc", "cms", "--store", str(store)
    )
    assert bad.returncode == 2
    assert_one_line_error(bad.stderr)
    jdk17 = [j for j in jvm.find_jdks() if j.feature < 21]
    if not jdk17:
        pytest.skip("no JDK older than 21 here")
    result = run_cli(
        "bench",
        "--runtime",
        "jvm",
        "--technique",
        "java-lock",
        "--gc",
        "zgc-gen,serial",
        "--samples",
        "500",
        "--jdk",
        str(jdk17[0].home),
        "--store",
        str(store),
        "--json",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "collector zgc-gen skipped" in result.stderr
    assert len(json.loads(result.stdout)) == 1


@pytest.mark.parametrize(
    ("feature", "gc", "flags", "generational"),
    [
        (21, "zgc", ["-XX:+UseZGC"], False),
        (21, "zgc-gen", ["-XX:+UseZGC", "-XX:+ZGenerational"], True),
        (25, "zgc", ["-XX:+UseZGC"], True),  # ZGC is generational only: zgc is still the JDK's ZGC
        (25, "zgc-gen", ["-XX:+UseZGC"], True),
        (25, "g1", ["-XX:+UseG1GC"], None),
    ],
)
def test_zgc_means_the_jdks_zgc_and_records_its_mode(
    tmp_path: Path, feature: int, gc: str, flags: list[str], generational: bool | None
) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\nexit 0\n")  # a JDK that accepts every flag: the mapping is under test
    java.chmod(0o755)
    jdk = jvm.Jdk(tmp_path, feature, str(feature))
    assert jvm.collector_flags(jdk, gc) == (flags, "")
    assert jvm.zgc_generational(jdk, gc) is generational


@needs_jdk
def test_the_seed_002_pipeline_runs_on_the_jvm_beside_the_native_one(store: Path) -> None:
    """Issue 17 item 5: the Disruptor pipeline, four linked runs with the JVM's log, and the
    seed's percentile table with both runtimes."""
    done = run_cli(
        "bench",
        "--scenario",
        "pipeline",
        "--runtime",
        "both",
        "--samples",
        "3000",
        "--warmup-samples",
        "200",
        "--store",
        str(store),
    )
    assert done.returncode == 0, done.stderr
    runs = ResultsStore(store).runs()
    jvm_runs = [r for r in runs if r.config["runtime"] == "jvm"]
    assert len(runs) == 8 and len(jvm_runs) == 4
    assert {r.config["series"] for r in jvm_runs} == {
        "accumulator-transit",
        "accumulator-inter-message",
        "journaller-transit",
        "journaller-inter-message",
    }
    assert len({r.config["scenario_run"] for r in jvm_runs}) == 1  # linked: one JVM made all four
    for run in jvm_runs:
        assert run.table.num_rows >= 3000 - 1 and run.latency_ns.min() >= 0
        assert (
            "pauses" in run.meta["jvm"] and "-XX:GuaranteedSafepointInterval=0" in run.meta["jvm"]["gc_flags"]
        )
        assert (
            run.meta["pipeline"]["journal_bytes"] == 3200 * 8 and run.meta["pipeline"]["journal_error"] == ""
        )
    assert "jvm accumulator-transit" in done.stdout and "native accumulator-transit" in done.stdout
    assert "99.9999%" in done.stdout


def test_runtime_both_is_for_the_pipeline(store: Path) -> None:
    done = run_cli("bench", "--technique", "mutex", "--runtime", "both", "--store", str(store))
    assert done.returncode == 2
    assert "--scenario pipeline" in done.stderr and "Traceback" not in done.stderr

"""The JVM harness: GC-log parsing on real log lines of both JDKs, and small real runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_cli
from jitterlab import jvm
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
def test_every_jvm_technique_and_two_collectors_make_runs_that_read_like_native_ones(store: Path) -> None:
    techniques = "java-monitor,java-lock,disruptor" + (
        ",java-vthread" if jvm.find_jdks()[0].feature >= 21 else ""
    )
    result = run_cli(
        "bench",
        "--runtime",
        "jvm",
        "--technique",
        techniques,
        "--gc",
        "serial,g1",
        "--samples",
        "3000",
        "--warmup",
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
    assert len(rows) == 2 * len(techniques.split(","))
    for run in ResultsStore(store).runs():
        assert run.meta["config"]["runtime"] == "jvm"
        assert run.latency_ns.size == 3000 and (run.latency_ns >= 0).all()
        assert run.meta["jvm"]["gc"] in ("serial", "g1")
        assert "pause_events" in run.meta["jvm"]
        assert run.meta["java"]["gc_beans"]
    one = ResultsStore(store).runs()[0].id
    assert run_cli("describe", one, "--store", str(store)).returncode == 0


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

"""HdrHistogram Java 2.2.2 is the oracle of the HdrHistogram room (issue 26): figures, percentile
distributions and logs are compared for equality, not closeness, with what Java computes from
the same input (jvm/src/test/java/dev/jitterlab/jvm/HdrOracle.java, run with the HdrHistogram jar
of the Maven build)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import latency_clusters, make_run
from jitterlab.describe.export import ExportOptions, export_run
from jitterlab.store.hdr.double import DoubleHistogram
from jitterlab.store.hdr.histogram import Histogram
from jitterlab.store.hdr.log import LogReader
from jitterlab.store.hdr.streams import corrected, read_figures
from jitterlab.store.hdr.text import percentile_distribution

REPO = Path(__file__).resolve().parents[2]
ORACLE = REPO / "jvm" / "src" / "test" / "java" / "dev" / "jitterlab" / "jvm" / "HdrOracle.java"
JAR = Path.home() / ".m2/repository/org/hdrhistogram/HdrHistogram/2.2.2/HdrHistogram-2.2.2.jar"
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory):
    """Run jobs through Java's HdrHistogram: a function of job lines → answers."""
    if shutil.which("javac") is None or not JAR.is_file():
        pytest.fail(
            f"the Java oracle needs javac and {JAR} (scripts/setup.sh and the Maven build install them)"
        )
    classes = tmp_path_factory.mktemp("oracle")
    subprocess.run(["javac", "-cp", str(JAR), "-d", str(classes), str(ORACLE)], check=True)

    def run(jobs: list[list[str]]) -> list[dict[str, Any]]:
        jobs_file = classes / "jobs.tsv"
        jobs_file.write_text("\n".join("\t".join(job) for job in jobs) + "\n")
        out = subprocess.run(
            ["java", "-cp", f"{classes}:{JAR}", "dev.jitterlab.jvm.HdrOracle", str(jobs_file)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        answers = json.loads(out)
        for answer in answers:
            assert "error" not in answer, answer
        return answers

    return run


def figures_of(h: Histogram | DoubleHistogram) -> dict[str, Any]:
    """The figures HdrOracle prints for a histogram, from jitterlab's implementation."""
    return {
        "count": h.total,
        "min": h.min,
        "max": h.max,
        "mean": h.mean,
        "std": h.std,
        "p": [h.value_at_percentile(p) for p in PERCENTILES],
        "digits": h.digits,
        "tag": h.tag,
    }


def same_figures(java: dict[str, Any], ours: dict[str, Any]) -> None:
    for key, value in ours.items():
        assert java[key] == value, (key, java[key], value)


VALUE_SETS = {
    # a main cluster, a second one and rare spikes, in ns (the shape of a latency run)
    "latency": lambda rng: np.concatenate(
        [rng.normal(20_000, 2_000, 50_000), rng.normal(90_000, 9_000, 2_000), rng.uniform(1e6, 5e7, 30)]
    ),
    "small integers": lambda rng: rng.integers(0, 40, 5_000).astype(np.float64),
    "wide": lambda rng: np.exp(rng.uniform(0, 40, 20_000)),
}


@pytest.mark.parametrize("digits", [2, 3, 5])
@pytest.mark.parametrize("shape", sorted(VALUE_SETS))
def test_figures_and_percentile_distribution_equal_java(
    oracle, tmp_path: Path, shape: str, digits: int
) -> None:
    rng = np.random.default_rng(7)
    values = np.abs(VALUE_SETS[shape](rng)).astype(np.int64)
    unique, counts = np.unique(values, return_counts=True)
    (tmp_path / "values").write_text("".join(f"{v} {c}\n" for v, c in zip(unique, counts, strict=True)))
    # correction fills every missing interval: keep it to the latency shape (max/interval ≈ 2500)
    co = int(np.median(values)) if shape == "latency" else 0
    [java] = oracle([["hist", str(tmp_path / "values"), str(digits), "1", "0", "5", "1000.0", str(co)]])

    ours = Histogram.auto(digits)
    ours.record(unique, counts)
    same_figures(java["figures"], figures_of(ours))
    assert percentile_distribution(ours, 5, 1000.0) == java["hgrm"]

    if not co:
        return
    corrected = ours.copy_corrected(co)
    same_figures(java["corrected"], figures_of(corrected))
    assert percentile_distribution(corrected, 5, 1000.0) == java["corrected_hgrm"]
    at_recording = Histogram.auto(digits)
    at_recording.record_corrected(unique, counts, co)
    same_figures(java["at_recording"], figures_of(at_recording))


def test_logs_written_by_java_read_equal(oracle, tmp_path: Path) -> None:
    # V2 compressed intervals (what HistogramLogWriter writes), two tags, a DoubleHistogram,
    # StartTime and BaseTime, a legend and comments
    spec = ["start 1700000000000", "base 1700000000000", "comment made by HdrOracle", "version", "legend"]
    rng = np.random.default_rng(11)
    for i in range(6):
        tag = "-" if i % 2 == 0 else "B"
        spec.append(f"int 1 0 3 {tag} {1700000000000 + 1000 * i} {1700000001000 + 1000 * i}")
        for v in rng.integers(1_000, 10_000_000, 200):
            spec.append(f"v {v} 1")
        spec.append("end")
    spec.append("double 0 3 D 1700000007000 1700000008000")
    for v in rng.uniform(0.001, 500.0, 300):
        spec.append(f"v {float(v)!r} 1")
    spec.append("end")
    (tmp_path / "spec").write_text("\n".join(spec) + "\n")
    log = tmp_path / "java.hlog"
    oracle([["write", str(tmp_path / "spec"), str(log)]])
    [java] = oracle([["log", str(log), "-", "-", "0", "5", "1.0"]])

    with log.open("rb") as lines:
        reader = LogReader(lines, str(log))
        intervals = list(reader.intervals())
    assert reader.start_time_s == java["start_time_sec"]
    assert len(intervals) == len(java["intervals"]) == 7
    for interval, j in zip(intervals, java["intervals"], strict=True):
        same_figures(j, figures_of(interval.histogram))
        assert (interval.histogram.start_ms, interval.histogram.end_ms) == (j["start_ms"], j["end_ms"])


def test_exported_logs_read_equal_in_java(oracle, tmp_path: Path) -> None:
    run = make_run(tmp_path / "store", latency_clusters(3, 3_000))
    out = tmp_path / "run.hlog"
    export_run(run, "hlog", out, ExportOptions(window_ns=2_000_000))
    [java] = oracle([["log", str(out), "-", "-", "0", "5", "1000.0"]])
    with out.open("rb") as lines:
        intervals = list(LogReader(lines, str(out)).intervals())
    assert len(intervals) == len(java["intervals"]) > 1
    total = 0
    for interval, j in zip(intervals, java["intervals"], strict=True):
        same_figures(j, figures_of(interval.histogram))
        total += j["count"]
    assert total == len(run.latency_ns)
    # the whole log, accumulated as HistogramLogProcessor does, prints the same .hgrm
    whole = intervals[0].histogram.like()
    whole.auto_resize = True
    for interval in intervals:
        whole.add(interval.histogram)
    assert percentile_distribution(whole, 5, 1000.0) == java["streams"][""]["hgrm"]


# HdrHistogram's own test logs (tests/fixtures/hdrhistogram/README.md: origin and licence)
UPSTREAM = REPO / "tests" / "fixtures" / "hdrhistogram"
UPSTREAM_LOGS = sorted(p.name for p in UPSTREAM.glob("*.hlog"))


def test_the_upstream_logs_are_all_here() -> None:
    assert UPSTREAM_LOGS == [
        "jHiccup-2.0.1.logV0.hlog",
        "jHiccup-2.0.6.logV1.hlog",
        "jHiccup-2.0.7S.logV2.hlog",
        "jHiccup-2.0.7S.logV3.hlog",
        "tagged-Log.logV2.hlog",
        "ycsb.logV1.hlog",
    ]


@pytest.mark.parametrize(
    ("name", "span", "co"),
    [(name, None, 0.0) for name in UPSTREAM_LOGS]
    + [
        ("jHiccup-2.0.7S.logV2.hlog", (5.0, 20.0), 0.0),  # HistogramLogProcessor -start/-end
        ("jHiccup-2.0.7S.logV2.hlog", None, 1e6),  # -correctLogWithKnownCoordinatedOmission 1 ms (ns)
        ("tagged-Log.logV2.hlog", (2.0, 30.0), 0.0),
    ],
)
def test_hdrhistograms_own_logs_give_javas_figures(
    oracle, name: str, span: tuple[float, float] | None, co: float
) -> None:
    """Every interval's figures, StartTime, and per tag the whole log's figures and .hgrm."""
    log = UPSTREAM / name
    from_s, to_s = span if span else (None, None)
    [java] = oracle([["log", str(log), *(map(str, span) if span else ("-", "-")), str(co), "5", "1.0"]])
    assert java["reader_error"] is None

    # the reader, interval by interval
    with log.open("rb") as lines:
        reader = LogReader(lines, str(log))
        intervals = list(reader.intervals(from_s, to_s))
    assert reader.start_time_s == java["start_time_sec"]
    assert len(intervals) == len(java["intervals"]) > 0
    for interval, j in zip(intervals, java["intervals"], strict=True):
        h = corrected(interval.histogram, co) if co else interval.histogram
        same_figures(j, figures_of(h))
        assert (h.start_ms, h.end_ms) == (j["start_ms"], j["end_ms"])

    # what import computes in its one pass: each tag a stream, accumulated as the processor does
    with log.open("rb") as lines:
        result = read_figures(lines, str(log), from_s=from_s, to_s=to_s, expected_interval=co)
    streams = {("" if tag is None else tag): s for tag, s in result.streams.items()}
    assert sorted(streams) == sorted(java["streams"])
    for tag, j in java["streams"].items():
        whole = streams[tag].corrected if co else streams[tag].whole
        assert whole is not None
        same_figures(j["whole"], figures_of(whole))
        assert percentile_distribution(whole, 5, 1.0) == j["hgrm"]

"""Every --json output validates against its schema in docs/schemas/ (issue 28 item 4),
checked on real output of the real command; the context block heads the output of the
commands that describe runs and of the measuring commands alike.

Commands whose output needs a fixture of their room (a monitor run, a replication or
network bench, the injection proxy, the SSQ questionnaire) are checked in that room's
tests with the same ``assert_matches_schema``; the first test here makes sure each schema
is used by some test and each --json command has a schema.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from conftest import SCHEMAS, assert_matches_schema, latency_clusters, make_run, run_cli, run_main
from jitterlab.cli.main import COMMANDS, build_parser

TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "fixtures" / "hdrhistogram"
# the command whose --json belongs to one of its actions
SCHEMA_OF = {"inject": "inject-validate"}


def json_commands() -> set[str]:
    """Every command path with a --json option, as the parser has it ("net bench")."""
    found: set[str] = set()

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for action in parser._actions:
            if "--json" in action.option_strings:
                found.add(" ".join(path))
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, [*path, name])

    for command in COMMANDS:
        parser = build_parser(command)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        walk(sub.choices[command], [command])
    return found


def test_every_json_command_has_a_schema_that_a_test_validates() -> None:
    commands = json_commands()
    assert {"runs", "show", "describe", "compare", "bench", "hiccup", "net bench", "mtp analyze"} <= commands
    names = {SCHEMA_OF.get(c, c.replace(" ", "-")) for c in commands}
    schemas = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    assert names <= schemas, f"--json without a schema: {sorted(names - schemas)}"
    assert schemas - names == {"common"}, f"schemas of no command: {sorted(schemas - names - {'common'})}"
    sources = "\n".join(p.read_text() for p in TESTS.rglob("test_*.py"))
    # a call of assert_matches_schema(..., "NAME") on a document, not a mere mention
    validated = {
        m.group(1)
        for m in re.finditer(r'assert_matches_schema\((?:[^"]|"[^"]*"(?!\)))*?"([a-z-]+)"\)', sources)
    }
    unchecked = sorted(names - validated)
    assert not unchecked, f"no test validates real output against: {unchecked}"


def test_runs_json_matches_its_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    csv = tmp_path / "latencies.csv"
    csv.write_text("latency_ns\n" + "".join(f"{1000 + 7 * i}\n" for i in range(100)))
    for _ in range(2):
        subprocess.run(
            [sys.executable, "-m", "jitterlab", "import", str(csv), "--store", str(store)], check=True
        )
    damaged = sorted(d for d in store.iterdir() if not d.name.startswith("."))[1]
    (damaged / "run.json").write_text("{not json")
    code, out, _ = run_main(["runs", "--store", str(store), "--json"], capsys)
    rows = json.loads(out)
    assert_matches_schema(rows, "runs")
    assert code == 0 and [r["status"] for r in rows] == ["complete", "damaged"]
    assert rows[0]["count"] == 100 and rows[0]["max_ns"] == 1000 + 7 * 99
    code, out, _ = run_main(["runs", "--store", str(store), "--json", "--percentiles", "50,99.9"], capsys)
    rows = json.loads(out)
    assert_matches_schema(rows, "runs")
    assert set(rows[0]["percentiles_ns"]) == {"p50", "p99.9"}
    # a row that breaks the documented shape is refused: the schema can fail
    with pytest.raises(jsonschema.ValidationError):
        assert_matches_schema([rows[0] | {"count": "100"}], "runs")


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, str]:
    """A store with two sample runs and an imported HdrHistogram log (histogram only)."""
    store = tmp_path_factory.mktemp("schemas") / "s"
    a = make_run(store, latency_clusters(1, 5_000), technique="mutex")
    b = make_run(store, latency_clusters(2, 5_000), technique="mutex")
    done = run_cli("import", str(FIXTURES / "tagged-Log.logV2.hlog"), "--store", str(store))
    assert done.returncode == 0, done.stderr
    rows = json.loads(run_cli("runs", "--json", "--store", str(store)).stdout)
    return store, a.id, b.id, next(r["id"] for r in rows if "-import-" in r["id"])


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> object:
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    return json.loads(out)


def test_show_json_matches_its_schema(
    stored: tuple[Path, str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, a, _b, h = stored
    doc = _json(["show", a, "--json", "--percentiles", "50,99.9,max", "--store", str(store)], capsys)
    assert_matches_schema(doc, "show")
    assert isinstance(doc, dict) and doc["summary_ns"]["count"] == 5_102
    assert set(doc["percentiles_ns"]) == {"p50", "p99.9", "max"}
    histogram = _json(["show", h, "--json", "--store", str(store)], capsys)
    assert_matches_schema(histogram, "show")
    assert isinstance(histogram, dict) and histogram["context"]["source_format"] == "hlog"
    with pytest.raises(jsonschema.ValidationError):  # a percentile as a string
        assert_matches_schema(doc | {"percentiles_ns": {"p50": "1000"}}, "show")


def test_describe_json_matches_its_schema(
    stored: tuple[Path, str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, a, b, h = stored
    args = ["describe", a, "--json", "--baseline", b, "--percentiles", "99", "--expected-interval", "5us"]
    doc = _json([*args, "--store", str(store)], capsys)
    assert_matches_schema(doc, "describe")
    assert isinstance(doc, dict) and doc["screening"] is not None and "summary_corrected_ns" in doc
    histogram = _json(["describe", h, "--json", "--store", str(store)], capsys)
    assert_matches_schema(histogram, "describe")
    assert isinstance(histogram, dict) and histogram["histogram_only"] and len(histogram["streams"]) > 1
    with pytest.raises(jsonschema.ValidationError):  # a sample run's keys on a histogram run
        assert_matches_schema(histogram | {"categories": []}, "describe")


def test_compare_json_matches_its_schema(
    stored: tuple[Path, str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, a, b, _h = stored
    doc = _json(["compare", a, b, "--json", "--percentiles", "50,max", "--store", str(store)], capsys)
    assert_matches_schema(doc, "compare")
    assert isinstance(doc, dict) and doc["context"]["a"]["measured_here"] is False
    with pytest.raises(jsonschema.ValidationError):
        assert_matches_schema(doc | {"verdict": "worse"}, "compare")


def test_doctor_and_model_show_json_match_their_schemas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checks = _json(["doctor", "--json"], capsys)
    assert_matches_schema(checks, "doctor")
    model = tmp_path / "m.json"
    code, _, err = run_main(
        ["model", "make", "-o", str(model), "--normal", "20ms,2ms", "--spikes", "40ms@0.5"], capsys
    )
    assert code == 0, err
    shown = _json(["model", "show", str(model), "--json"], capsys)
    assert_matches_schema(shown, "model-show")
    assert isinstance(shown, dict) and shown["categories"][0]["rate_hz"] == 0.5


def _context_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("context  ")]


def test_bench_prints_the_context_block_and_its_json_matches_the_schema(tmp_path: Path) -> None:
    """A measuring command heads its output with the context block, as show and compare do."""
    store = tmp_path / "s"
    args = ["bench", "--technique", "futex", "--pairs", "1", "--samples", "2000", "--store", str(store)]
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert_matches_schema(rows, "bench")
    assert len(rows) == 1 and rows[0]["context"]["measured_here"] is True
    assert rows[0]["context"]["logical_cpus"] >= 1 and rows[0]["count"] == 2000
    text = run_cli(*args)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith("context  ") and len(_context_lines(text.stdout)) == 2
    shown = run_cli("show", rows[0]["id"], "--store", str(store))
    assert _context_lines(shown.stdout)[0] == lines[0]  # the same block as show prints


def test_hiccup_prints_the_context_block_and_its_json_matches_the_schema(tmp_path: Path) -> None:
    store = tmp_path / "s"
    done = run_cli("hiccup", "--duration", "0.3s", "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert_matches_schema(doc, "hiccup")
    assert doc["context"]["measured_here"] is True and doc["per_cpu"]
    text = run_cli("hiccup", "--duration", "0.3s", "--store", str(store))
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("context  ") and len(_context_lines(text.stdout)) == 2


def test_mtp_analyze_and_ingest_json_match_their_schemas_with_the_context_of_their_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jitterlab.mtp import synth

    store = tmp_path / "s"
    video = tmp_path / "v.mp4"
    spec = synth.SynthSpec(
        fps=60.0, latency_s=0.0333, duration_s=4.0, width=320, height=240, noise=2.0, seed=1
    )
    synth.write_video(video, spec)
    doc = _json(["mtp", "analyze", str(video), "--json", "--store", str(store)], capsys)
    assert_matches_schema(doc, "mtp-analyze")
    assert isinstance(doc, dict) and doc["run"] is not None
    assert doc["context"] == {
        "measured_here": False,
        "source": str(video.resolve()),
        "source_format": "video",
        "tool_version": doc["context"]["tool_version"],
    }
    code, out, err = run_main(["mtp", "analyze", str(video), "--no-store"], capsys)
    assert code == 0, err
    assert out.startswith(f"context  imported from {video.resolve()} (video)")
    folder = tmp_path / "logs"
    code, _, err = run_main(["mtp", "synth-log", str(folder), "--duration", "5s"], capsys)
    assert code == 0, err
    ingested = _json(["mtp", "ingest", str(folder / "frames.csv"), "--json", "--store", str(store)], capsys)
    assert_matches_schema(ingested, "mtp-ingest")
    assert isinstance(ingested, dict) and ingested["context"]["source"] == str(
        (folder / "frames.csv").resolve()
    )
    with pytest.raises(jsonschema.ValidationError):
        assert_matches_schema(ingested | {"mean_ms": "55.9"}, "mtp-ingest")


def test_the_shared_context_of_a_command_gathers_every_runs_doctor_warnings(tmp_path: Path) -> None:
    from jitterlab.describe.context import command_context

    store = tmp_path / "s"
    runs = [make_run(store, latency_clusters(k, 1_000)) for k in range(2)]
    environment = {"host": "h", "cpu_model": "c", "logical_cpus": 2, "kernel": "k"}
    for run, check in zip(runs, ("governor", "smt"), strict=True):
        run.meta["environment"] = environment
        run.meta["doctor"] = [{"check": check, "status": "warn"}, {"check": "ok one", "status": "ok"}]
    block = command_context(runs)
    assert block["measured_here"] is True and block["doctor_warnings"] == ["governor", "smt"]
    assert command_context(runs[:1])["doctor_warnings"] == ["governor"]

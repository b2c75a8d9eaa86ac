"""benchmarks/engine_against.py (issue 37's side by side against the code before): its answer
comparison names what differs, scale.py's kept runs are made once, and the registry reads
its printed lines."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench() -> dict[str, ModuleType]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        yield {name: importlib.import_module(name) for name in ("engine_against", "scale", "all")}
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


def test_an_added_key_is_named_and_a_changed_value_is_a_difference(bench) -> None:
    same = bench["engine_against"].same_answer
    then = {"context": {"at": 1}, "summary": {"p99": 5.0, "levels": [1, 2]}}
    assert same(json.dumps(then), json.dumps(then | {"context": {"at": 2}}), "json") == "yes"
    added = {"context": {}, "summary": {"p99": 5.0, "levels": [1, 2], "unresolved": []}}
    assert same(json.dumps(then), json.dumps(added), "json") == "values yes; only now: summary.unresolved"
    changed = {"context": {}, "summary": {"p99": 5.5, "levels": [1, 3], "unresolved": []}}
    verdict = same(json.dumps(then), json.dumps(changed), "json")
    assert verdict.startswith("NO (3): summary.p99 (5.0 then, 5.5 now)")
    removed = {"summary": {"levels": [1, 2]}}
    assert same(json.dumps(then), json.dumps(removed), "json").startswith("NO (1): summary.p99 (only then)")


def test_a_page_is_compared_by_its_text_and_then_its_plots(bench) -> None:
    same = bench["engine_against"].same_answer
    page = 'generated 2026-11-28 16:00 UTC <td>4.1</td><img src="data:image/png;base64,{}">'
    at_another_minute = page.replace("16:00", "16:07")
    assert same(page.format("AAAA"), at_another_minute.format("AAAA"), "page") == "yes"
    assert same(page.format("AAAA"), page.format("AAAB"), "page") == "text yes, plots differ"
    other = page.replace("4.1", "4.2")
    assert same(page.format("AAAA"), other.format("AAAA"), "page") == "text NO, plots yes"


def test_a_kept_run_is_made_once_and_reused(bench, tmp_path: Path) -> None:
    scale = bench["scale"]
    first = scale.kept(tmp_path, 1000)
    assert scale.kept(tmp_path, 1000) == first
    assert scale.kept(tmp_path, 1000, seed=2026) != first
    assert len(list(tmp_path.glob("*/run.json"))) == 2
    assert [scale.size_name(n) for n in (10**9, 10**6, 1000, 2500)] == ["1e9", "1e6", "1e3", "2500"]


def test_the_registry_reads_the_side_by_side_lines(bench) -> None:
    registry = next(b for b in bench["all"].load_registry() if b.name == "engine_against")
    out = (
        "  show 1e8: now/then 0.70× time, 0.44× memory; same answer yes (load 4.7)\n"
        "  show --recompute 1e8: now/then 1.02× time, 1.01× memory; same answer yes (load 4.7)\n"
        "  describe 1e8: now/then 0.98× time, 1.00× memory; same answer yes (load 4.7)\n"
        "  compare 1e8: now/then 0.82× time, 1.00× memory; same answer yes (load 8.3)\n"
        "  export hgrm 1e8: now/then 1.02× time, 1.00× memory; same answer yes (load 8.4)\n"
        "  show --recompute 1e9: now/then 0.99× time, 1.00× memory; same answer yes (load 4.7)\n"
        "  describe 1e9: now/then 0.97× time, 0.99× memory; same answer yes (load 4.7)\n"
        "  analysis 1e8: now/then 1.41× time, 1.05× memory; same answer yes (load 9.1)\n"
        "  report (28 runs): now/then 1.00× time, 1.00× memory; same answer yes (load 9.1)\n"
        "  show --recompute 1e7 local:2: now/then 0.96× time, 1.00× memory; same answer yes (load 10)\n"
        "  describe 1e7 local:2: now/then 0.84× time, 0.99× memory; same answer yes (load 12.4)\n"
        "describe of 10⁹ now: 24.3 s, 281 MB (target ≤ 30 s, ≤ 300 MB) met\n"
    )
    found, missing = bench["all"].read_figures(registry, out)
    assert missing == []
    assert found["describe_now_over_then"] == 0.98  # the first size's, not 1e9's nor the cluster's
    assert found["recompute_now_over_then"] == 1.02
    assert found["cluster_describe_now_over_then"] == 0.84
    assert found["describe_1e9_now_over_then"] == 0.97
    assert (found["describe_1e9_s"], found["describe_1e9_peak_mb"]) == (24.3, 281)


def test_a_verdict_needs_three_repeats_that_do_not_overlap(bench) -> None:
    verdict = bench["engine_against"].verdict
    assert verdict([1.0], [2.0]) == "n/a"
    assert verdict([1.0, 1.1, 1.2], [1.3, 1.4, 1.5]) == "slower"
    assert verdict([1.0, 1.1, 1.2], [0.5, 0.6, 0.9]) == "faster"
    assert verdict([1.0, 1.1, 1.5], [1.2, 1.3, 1.4]) == "noise"


def test_only_runs_the_named_commands_and_refuses_an_unknown_name(
    bench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ea = bench["engine_against"]
    common = [
        "engine_against.py",
        "--sets",
        "scale",
        "--sizes",
        "1e3",
        "--reuse",
        str(tmp_path),
        "--repeats",
        "1",
    ]
    monkeypatch.setattr(sys, "argv", [*common, "--only", "describe 1e9"])
    assert ea.main() == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("engine_against.py: --only describe 1e9: not a command of these sets (show 1e3, ")
    monkeypatch.setattr(sys, "argv", [*common, "--only", "describe 1e3", "--against", "HEAD"])
    assert ea.main() == 0
    lines = [
        line.split(":")[0].strip() for line in capsys.readouterr().out.splitlines() if line.startswith("  ")
    ]
    assert lines == ["describe 1e3"]

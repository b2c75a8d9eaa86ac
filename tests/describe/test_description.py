"""``describe``, ``compare`` and ``show`` are one call each (issue 37 item 4): a request in,
one typed description out, and each CLI command calls exactly that one describe-room
function, then one renderer."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import make_run, run_main, spiky
from jitterlab.core.errors import JitterlabError
from jitterlab.core.tidy import tidy_json
from jitterlab.describe.compare import ComparedRuns, CompareRequest, compare, comparison_text
from jitterlab.describe.description import (
    DescribeRequest,
    SampleDescription,
    ShownRun,
    ShowRequest,
    UnionDescription,
    describe,
    show,
)
from jitterlab.describe.text import description_text, shown_text
from jitterlab.store import ResultsStore, load_run
from jitterlab.store.reader import LOCAL, Engine

CLI = Path(__file__).resolve().parents[2] / "src" / "jitterlab" / "cli"
BUILDERS = {"describe", "compare", "show"}  # what a command calls to get its numbers
RENDERERS = {"description_text", "comparison_text", "shown_text"}  # what formats them
REQUESTS = {
    "DescribeRequest",
    "CompareRequest",
    "ShowRequest",
}  # the requests' types: built, not computations
GOLDEN_STORE = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "store"


def describe_room_calls(source: str) -> dict[str, list[str]]:
    """Per ``cmd_*`` function of a CLI module: the functions of describe/ it calls, by name,
    in order (names imported from ``jitterlab.describe`` anywhere in the module)."""
    tree = ast.parse(source)
    from_describe = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jitterlab.describe")
        for alias in node.names
    }
    calls: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("cmd_"):
            found = []
            for sub in ast.walk(node):
                if not isinstance(sub, ast.Call):
                    continue
                func = sub.func  # f(…), or module.f(…) of a describe/ module imported by name
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                    name = func.attr if func.value.id in from_describe else ""
                else:
                    name = func.id if isinstance(func, ast.Name) and func.id in from_describe else ""
                if name:
                    found.append((sub.lineno, sub.col_offset, name))
            calls[node.name] = [name for _, _, name in sorted(found)]
    return calls


def thin_command_problems(source: str) -> list[str]:
    """Each command that does not call exactly one builder once, plus renderers only."""
    problems = []
    for name, called in describe_room_calls(source).items():
        builders = [c for c in called if c in BUILDERS]
        others = [c for c in called if c not in BUILDERS | RENDERERS | REQUESTS]
        if len(builders) != 1 or others:
            problems.append(f"{name}: calls {', '.join(called) or 'nothing of describe/'}")
    return problems


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("describe.py", {"cmd_describe": ["describe", "DescribeRequest", "description_text"]}),
        ("compare.py", {"cmd_compare": ["compare", "CompareRequest", "comparison_text"]}),
    ],
)
def test_the_command_calls_one_describe_function(module: str, expected: dict[str, list[str]]) -> None:
    source = (CLI / module).read_text()
    assert describe_room_calls(source) == expected
    assert thin_command_problems(source) == []


def test_show_calls_one_describe_function() -> None:
    """``show`` (cli/runs.py, beside commands that are not descriptions) is one call too."""
    source = (CLI / "runs.py").read_text()
    assert describe_room_calls(source)["cmd_show"] == ["show", "ShowRequest", "shown_text"]
    assert [p for p in thin_command_problems(source) if p.startswith("cmd_show:")] == []


def test_the_check_catches_a_command_that_assembles_numbers() -> None:
    before = """
def cmd_describe(args):
    from jitterlab.describe.analysis import describe_run, latency_views
    from jitterlab.describe.text import describe_text
    d = describe_run(args.run)
    print(describe_text(d, latency_views(args.run)))
"""
    assert thin_command_problems(before) == ["cmd_describe: calls describe_run, describe_text, latency_views"]
    twice = """
def cmd_describe(args):
    from jitterlab.describe.description import describe
    return describe(args) or describe(args)
"""
    assert thin_command_problems(twice) == ["cmd_describe: calls describe, describe"]
    through_a_module = """
def cmd_compare(args):
    from jitterlab.describe import compare as cmp
    rc = cmp.compare_runs(args.a, args.b)
    print(cmp.comparison_json(rc))
"""
    assert thin_command_problems(through_a_module) == ["cmd_compare: calls compare_runs, comparison_json"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real stored runs of 20,000 samples, 2 s each."""
    root = tmp_path_factory.mktemp("store")
    for seed in (11, 12):
        make_run(
            root, spiky(seed, 20_000, far_spikes=True), t_send=1_000_000_000 + np.arange(20_000) * 100_000
        )
    return root


def run_ids(store: Path) -> list[str]:
    return sorted(p.parent.name for p in store.glob("*/run.json"))


def test_the_description_is_what_the_command_prints(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``describe --json`` prints the description's JSON and the text its renderer's, to
    the byte; the description is typed and frozen."""
    ref = run_ids(store)[0]
    d = describe(DescribeRequest((ref,), ResultsStore(store), percentiles=(50.0, 99.9)))
    assert isinstance(d, SampleDescription)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.chosen = None  # type: ignore[misc]
    code, out, _ = run_main(
        ["describe", ref, "--percentiles", "50,99.9", "--json", "--store", str(store)], capsys
    )
    assert code == 0
    assert out == json.dumps(tidy_json(d.to_json()), indent=2) + "\n"
    code, out, _ = run_main(["describe", ref, "--percentiles", "50,99.9", "--store", str(store)], capsys)
    assert code == 0 and out == description_text(d)[0] + "\n"


def test_a_union_describes_each_run_as_describe_does(store: Path) -> None:
    refs = run_ids(store)
    union = describe(DescribeRequest(tuple(refs), ResultsStore(store), union=True))
    assert isinstance(union, UnionDescription)
    for ref, member in zip(refs, union.runs, strict=True):
        alone = describe(DescribeRequest((ref,), ResultsStore(store)))
        assert isinstance(alone, SampleDescription)
        assert member.run.summary == alone.run.summary
        assert member.intervals == alone.intervals
    assert union.union.summary.count == sum(m.run.summary.count for m in union.runs)


def test_a_refused_request_opens_no_engine(store: Path) -> None:
    """The engine (a cluster) is opened only once the request is checked, and once."""
    opened: list[Engine] = []

    def engine() -> Engine:
        opened.append(LOCAL)
        return LOCAL

    ref = run_ids(store)[0]
    with pytest.raises(JitterlabError, match="--window must be a positive duration"):
        describe(DescribeRequest((ref,), ResultsStore(store), window_ns=0, engine=engine))
    with pytest.raises(JitterlabError, match="--union describes with the stacked-z test"):
        describe(DescribeRequest(tuple(run_ids(store)), ResultsStore(store), union=True, engine=engine))
    assert opened == []
    d = describe(DescribeRequest((ref,), ResultsStore(store), engine=engine))
    assert opened == [LOCAL]
    here = describe(DescribeRequest((ref,), ResultsStore(store)))
    assert isinstance(d, SampleDescription) and isinstance(here, SampleDescription)
    assert d.to_json() == here.to_json()


def test_the_comparison_is_what_compare_prints(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = run_ids(store)
    opened: list[Engine] = []

    def engine() -> Engine:
        opened.append(LOCAL)
        return LOCAL

    with pytest.raises(JitterlabError):
        compare(CompareRequest(a, "no-such-run", ResultsStore(store), engine=engine))
    assert opened == []  # a run not found starts no cluster
    d = compare(CompareRequest(a, b, ResultsStore(store), percentiles=(99.0,), engine=engine))
    assert isinstance(d, ComparedRuns) and opened == [LOCAL]
    args = ["compare", a, b, "--percentiles", "99", "--store", str(store)]
    code, out, _ = run_main([*args, "--json"], capsys)
    assert code == 0 and out == json.dumps(tidy_json(d.to_json()), indent=2) + "\n"
    code, out, _ = run_main(args, capsys)
    assert code == 0 and out == comparison_text(d) + "\n"


def test_show_is_what_the_command_prints(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``show --json`` prints the shown run's JSON and the text its renderer's, to the byte;
    the engine is opened once (here: the local one, as a cluster's would be)."""
    ref = run_ids(store)[0]
    opened: list[Engine] = []

    def engine() -> Engine:
        opened.append(LOCAL)
        return LOCAL

    asked = ShowRequest(ref, ResultsStore(store), percentiles=(50.0, 99.9), recompute=True)
    shown = show(dataclasses.replace(asked, engine=engine))
    assert isinstance(shown, ShownRun) and opened == [LOCAL]
    here = show(asked)
    assert shown.to_json() == here.to_json() and shown.intervals == here.intervals
    assert here.chosen is not None and set(here.chosen) == {"p50", "p99.9"}
    args = ["show", ref, "--percentiles", "50,99.9", "--recompute", "--store", str(store)]
    code, out, _ = run_main([*args, "--json"], capsys)
    assert code == 0 and out == json.dumps(tidy_json(here.to_json()), indent=2) + "\n"
    code, out, _ = run_main(args, capsys)
    assert code == 0 and out == shown_text(here) + "\n"


def test_show_of_a_histogram_import_opens_no_engine(capsys: pytest.CaptureFixture[str]) -> None:
    """A histogram-only import is shown here from its stored summary: no cluster started."""
    folder = next(p.parent for p in sorted(GOLDEN_STORE.glob("*-import-ycsb*/run.json")))
    opened: list[Engine] = []

    def engine() -> Engine:
        opened.append(LOCAL)
        return LOCAL

    shown = show(ShowRequest(str(folder), engine=engine))
    assert shown.run.histogram_only and opened == [] and shown.summary["count"] > 0
    code, out, _ = run_main(["show", str(folder), "--json"], capsys)
    assert code == 0 and out == json.dumps(tidy_json(shown.to_json()), indent=2) + "\n"


def test_a_run_given_is_described_as_it_is_and_keeps_no_columns(store: Path) -> None:
    """The report and the paper hand ``describe`` the runs they opened: with ``hold`` the
    one memory rule holds the run (the description's copy, not the caller's object); the
    numbers are those of the run read in row groups, as ``describe`` reads it."""
    run = load_run(run_ids(store)[0], ResultsStore(store))
    held = describe(DescribeRequest((run,), hold=True, views=False, sources=False))
    assert isinstance(held, SampleDescription)
    assert held.run.run.loaded and held.run.ordered is not None and not run.loaded
    assert held.views is None and held.span is None
    streamed = describe(DescribeRequest((run,)))
    assert isinstance(streamed, SampleDescription)
    assert not streamed.run.run.loaded and streamed.run.ordered is None and not run.loaded
    assert streamed.run.summary == held.run.summary
    assert streamed.run.categories == held.run.categories
    assert [q.value for q in streamed.intervals] == [q.value for q in held.intervals]
    spanned = describe(DescribeRequest((run,), from_s=0.5, to_s=1.5))
    assert isinstance(spanned, SampleDescription) and spanned.span is not None
    assert spanned.run.summary.count < held.run.summary.count


def test_an_unavailable_attribution_is_one_note_on_stderr_and_not_in_the_text(store: Path) -> None:
    d = describe(DescribeRequest((run_ids(store)[0],), ResultsStore(store)))
    assert isinstance(d, SampleDescription)
    plain, notes = description_text(d)
    assert notes == []
    block = {"available": False, "reason": "the run was not traced"}
    untraced = dataclasses.replace(d, run=dataclasses.replace(d.run, attribution=block))
    text, notes = description_text(untraced)
    assert notes == ["spike attribution: unavailable (the run was not traced)"]
    assert text == plain

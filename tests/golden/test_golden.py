"""Golden answers of issue 37: every analysis command's answer on a fixed corpus of real runs.

The corpus (tests/fixtures/golden/store, made once by make_corpus.py and committed) holds
the main job's 28 bench runs, the six HdrHistogram logs, cyclictest and .hgrm imports, a
merged run, net, repl, mtp and monitor runs, a damaged and an empty run. Each case runs the
CLI in-process on a copy of that store (the fixtures are never written) and compares what
it printed, normalised once by :func:`normalise`, with the answer recorded from main before
the analysis redesign (tests/fixtures/golden/answers/CASE.json).

- ``show --json`` (and with ``--percentiles``), ``describe --json`` (stacked-z; GESD,
  Walsh, 100 ms windows, a baseline, ``--from/--to`` and ``--union`` on some), ``compare
  --json`` of like pairs and one unlike pair, ``export`` as hgrm and hlog (text) and csv
  (SHA-256), and the numbers of ``report``'s tables (parsed from its HTML, no image bytes)
  and at full precision (:func:`in_memory`: the in-memory description report rounds);
- a failing command's answer is its exit code and its one-line message;
- ``--cluster local:2`` gives the local answer, byte for byte after normalisation.

Recording again (only after a reviewed reason, see EXCEPTIONS.md)::

    JITTERLAB_GOLDEN_REGENERATE=1 PYTHONPATH=$PWD/src .venv/bin/python -m pytest tests/golden

The largest cases are marked ``slow``; the unmarked ones still run every command on every
kind of run.
"""

from __future__ import annotations

import difflib
import hashlib
import html.parser
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import run_main

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
ANSWERS = CORPUS / "answers"
REGENERATE = os.environ.get("JITTERLAB_GOLDEN_REGENERATE") == "1"
LEVELS = "50,90,99,99.9,99.99"
STORE = "<store>"

# --- normalisation: written once, applied to every answer ---------------------------------
#
# Removed, because it cannot be equal between two machines or two invocations:
# - every "context" member of a JSON answer (the machine, kernel, tool version and commit a
#   run was measured with, and whether it was measured "here": the reading machine);
# - the path of the store copy the test reads (replaced by <store>);
# - in report: everything outside its tables (the generation time, the context line, the
#   images); the tables' cells are kept as printed;
# - the standard error of a command that succeeded, except its warning codes
#   (``warning[CODE]``): its progress lines say how far it got, not what it found.
# Everything else is kept as printed.


def _drop_context(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_context(v) for k, v in value.items() if k != "context"}
    if isinstance(value, list):
        return [_drop_context(v) for v in value]
    return value


class _Tables(html.parser.HTMLParser):
    """Every <table> of an HTML page as rows of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def report_tables(page: str) -> list[list[list[str]]]:
    """The report's tables (rows of cell texts, as printed)."""
    parser = _Tables()
    parser.feed(page)
    return parser.tables


def normalise(text: str, store: Path) -> str:
    """``text`` with the store copy's path written as <store>."""
    return text.replace(str(store), STORE)


def answer(case: Case, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """Run ``case`` in-process on ``store``; its answer, normalised."""
    if case.form == "memory":
        return in_memory(case, store)
    args = [*case.args, "--store", str(store)]
    out_file = tmp_path / "out.html"
    if case.form == "report":
        args += ["-o", str(out_file)]
    code, out, err = run_main(args, capsys)
    result: dict[str, Any] = {"args": list(case.args), "exit": code}
    if code != 0:
        result["stderr"] = normalise(err, store).strip().splitlines()
        return result
    result["warnings"] = sorted(set(re.findall(r"warning\[([\w-]+)\]", err)))
    out = normalise(out, store)
    if case.form == "json":
        result["stdout"] = _drop_context(json.loads(out))
    elif case.form == "text":
        result["stdout"] = out.splitlines()
    elif case.form == "sha256":
        result["stdout_sha256"] = hashlib.sha256(out.encode()).hexdigest()
        result["stdout_lines"] = out.count("\n")
    else:
        result["tables"] = report_tables(normalise(out_file.read_text(encoding="utf-8"), store))
    return result


def in_memory(case: Case, store: Path) -> dict[str, Any]:
    """The numbers report prints, at full precision: report describes a run of its size in
    memory (describe/report.py reads the samples, then ``describe_run``), so its tables are
    rounded views of this description and of the type-7 percentiles of the sorted samples
    (``report --percentiles``). ``describe --json`` streams instead: this is the other path.
    If the redesign moves these functions, this is the one place to call their successors."""
    import numpy as np

    from jitterlab.core.errors import JitterlabError
    from jitterlab.core.tidy import tidy_json
    from jitterlab.describe.analysis import describe_run, description_json
    from jitterlab.stats.summary import percentiles_sorted
    from jitterlab.store import load_run

    result: dict[str, Any] = {"args": list(case.args)}
    try:
        run = load_run(case.args[1], store)
        run.table  # noqa: B018 (held in memory, as report holds a run of this size)
        d = describe_run(run)
        levels = tuple(float(x) for x in LEVELS.split(","))
        chosen = percentiles_sorted(np.sort(run.latency_ns), levels)
    except JitterlabError as e:
        return result | {"exit": 2, "stderr": [normalise(str(e), store)]}
    document = description_json(d) | {
        "percentiles_sorted": dict(zip(LEVELS.split(","), chosen.tolist(), strict=True))
    }
    return result | {"exit": 0, "stdout": tidy_json(_drop_context(document))}


# --- the cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One command line (without ``--store``) and the form of its answer."""

    name: str
    args: tuple[str, ...]
    form: str = "json"  # json | text | sha256 | report | memory (in_memory: no command line)
    slow: bool = False
    cluster: bool = False  # also run with --cluster local:2 and expect the same answer


def _corpus() -> dict[str, list[str]]:
    """Run ids by kind, from corpus.json."""
    kinds: dict[str, list[str]] = {}
    for run in json.loads((CORPUS / "corpus.json").read_text())["runs"]:
        kinds.setdefault(run["kind"], []).append(run["id"])
    return kinds


def kinds_of(kinds: dict[str, list[str]], *names: str) -> list[str]:
    return [r for name in names for r in kinds.get(name, [])]


def _bench(kinds: dict[str, list[str]], technique: str, pairs: int, policy: str) -> str:
    return next(r for r in kinds["bench"] if f"-{technique}-p{pairs}-{policy}-" in r)


def cases() -> Iterator[Case]:
    kinds = _corpus()
    every = sorted(r for ids in kinds.values() for r in ids)
    for run in every:
        yield Case(f"show--{run}", ("show", run, "--json"))
        yield Case(f"show-percentiles--{run}", ("show", run, "--percentiles", LEVELS, "--json"))
        yield Case(f"describe--{run}", ("describe", run, "--json"))
        yield Case(f"export-hgrm--{run}", ("export", run, "--format", "hgrm", "-o", "-"), "text")
        yield Case(f"export-hlog--{run}", ("export", run, "--format", "hlog", "-o", "-"), "text")
        yield Case(f"export-csv--{run}", ("export", run, "--format", "csv", "-o", "-"), "sha256")
        if not run.startswith(tuple(kinds_of(kinds, "hlog", "cyclictest", "hgrm"))):
            yield Case(f"report-numbers--{run}", ("describe-in-memory", run), "memory")
    a, b = _bench(kinds, "mutex", 1, "other"), _bench(kinds, "mutex", 1, "rr90")
    spin2 = _bench(kinds, "spin", 2, "other")
    few = [a, spin2, kinds["hlog"][0], kinds["merge"][0], kinds["net"][0], kinds["monitor"][0]]
    for run in few:
        yield Case(f"describe-gesd--{run}", ("describe", run, "--test", "gesd", "--json"))
        yield Case(f"describe-walsh--{run}", ("describe", run, "--test", "walsh", "--json"))
        yield Case(f"describe-window-100ms--{run}", ("describe", run, "--window", "100ms", "--json"))
    for technique in ("mutex", "spin", "spsc", "futex", "pipe", "unix", "caf"):
        for pairs in (1, 2):
            other, rr = _bench(kinds, technique, pairs, "other"), _bench(kinds, technique, pairs, "rr90")
            yield Case(f"compare--{other}--{rr}", ("compare", other, rr, "--json"))
    yield Case(f"compare-unlike--{a}--{kinds['net'][0]}", ("compare", a, kinds["net"][0], "--json"))
    spsc1, spsc2 = _bench(kinds, "spsc", 1, "other"), _bench(kinds, "spsc", 2, "other")
    yield Case(
        f"compare-percentiles--{spsc1}--{spsc2}",
        ("compare", spsc1, spsc2, "--percentiles", "50,99,99.9", "--json"),
    )
    yield Case(
        f"compare-histograms--{kinds['hlog'][2]}--{kinds['hlog'][3]}", ("compare", *kinds["hlog"][2:4])
    )
    for bad in (kinds["damaged"][0], kinds["empty"][0]):
        yield Case(f"compare-bad--{a}--{bad}", ("compare", a, bad, "--json"))
    yield Case(f"describe-baseline--{b}--{a}", ("describe", b, "--baseline", a, "--json"))
    yield Case(f"describe-union--{a}--{b}", ("describe", "--union", a, b, "--json"))
    net = kinds["net"][0]
    span = ("describe", net, "--from", "0.5", "--to", "1.5", "--json")
    yield Case(f"describe-span--{net}", span, cluster=True)  # a filter of the reader: any engine
    span = ("export", net, "--format", "hgrm", "--from", "0.5", "--to", "1.5", "-o", "-")
    yield Case(f"export-hgrm-span--{net}", span, "text", cluster=True)
    small = [a, b, kinds["hlog"][2], kinds["merge"][0], net, kinds["mtp"][0]]
    yield Case("report-small", ("report", *small, "--percentiles", "50,99,99.9"), "report")
    yield Case("report-damaged", ("report", a, kinds["damaged"][0]), "report")
    yield Case("report-empty", ("report", a, kinds["empty"][0]), "report")
    yield Case("report-union", ("report", "--union", a, b), "report")
    yield Case("report-every-run", ("report",), "report", slow=True)
    # the cluster's answers against the local ones
    for run in (spin2, kinds["merge"][0], net):
        recompute = ("show", run, "--recompute", "--percentiles", "50,99,99.9,max", "--json")
        yield Case(f"show-recompute--{run}", recompute, cluster=True)
    for run in (spin2, kinds["hlog"][5], kinds["merge"][0]):
        yield Case(f"describe--{run}", ("describe", run, "--json"), cluster=True)
    yield Case(f"compare--{a}--{b}", ("compare", a, b, "--json"), cluster=True)
    yield Case(
        f"export-hgrm--{spin2}", ("export", spin2, "--format", "hgrm", "-o", "-"), "text", cluster=True
    )


def _params(cluster: bool) -> list[Any]:
    seen: set[str] = set()
    params = []
    for case in cases():
        if (cluster and not case.cluster) or case.name in seen:
            continue
        seen.add(case.name)
        marks = [pytest.mark.slow] if case.slow or cluster else []
        params.append(pytest.param(case, id=case.name, marks=marks))
    return params


# --- the test -------------------------------------------------------------------------------


def _fingerprint(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


@pytest.fixture(scope="session")
def golden_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of the corpus' store: the commands never see (or write) tests/fixtures; the
    fixtures are checked unchanged at the end."""
    before = _fingerprint(CORPUS / "store")
    copy = tmp_path_factory.mktemp("golden") / "store"
    shutil.copytree(CORPUS / "store", copy)
    yield copy
    assert _fingerprint(CORPUS / "store") == before, "tests/fixtures/golden/store was written"


def _encode(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=1, ensure_ascii=False) + "\n"


def _check(case_name: str, got: dict[str, Any], what: str) -> None:
    path = ANSWERS / f"{case_name}.json"
    if REGENERATE and what == "local":
        ANSWERS.mkdir(parents=True, exist_ok=True)
        path.write_text(_encode(got), encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"no recorded answer {path.name}: record it with JITTERLAB_GOLDEN_REGENERATE=1")
    expected = path.read_text(encoding="utf-8")
    if what != "local":
        got = {**got, "args": json.loads(expected)["args"]}  # the command line differs by --cluster
    actual = _encode(got)
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(), actual.splitlines(), f"recorded {path.name}", what, lineterm="", n=2
        )
        lines = list(diff)
        shown = "\n".join(lines[:80]) + (f"\n… {len(lines) - 80} more diff lines" if len(lines) > 80 else "")
        pytest.fail(f"{case_name}: the answer changed (EXCEPTIONS.md lists the allowed changes)\n{shown}")


@pytest.mark.parametrize("case", _params(cluster=False))
def test_answer_is_the_recorded_one(
    case: Case, golden_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _check(case.name, answer(case, golden_store, tmp_path, capsys), "local")


@pytest.mark.parametrize("case", _params(cluster=True))
def test_cluster_answer_is_the_local_one(
    case: Case, golden_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on_cluster = Case(case.name, (*case.args, "--cluster", "local:2"), case.form)
    _check(case.name, answer(on_cluster, golden_store, tmp_path, capsys), "--cluster local:2")


def test_every_kind_of_run_is_in_the_corpus() -> None:
    """The corpus issue 37 asks for: nothing left out when it is made again."""
    kinds = _corpus()
    assert len(kinds["bench"]) == 28 and len(kinds["hlog"]) == 6
    wanted = {"cyclictest", "hgrm", "merge", "net", "repl", "mtp", "monitor", "damaged", "empty"}
    assert wanted <= set(kinds)
    stored = {p.name for p in (CORPUS / "store").iterdir() if p.is_dir() and not p.name.startswith(".")}
    assert stored == {r for ids in kinds.values() for r in ids}


def test_every_answer_belongs_to_a_case() -> None:
    """No answer left behind by a case that is gone (recording again keeps old files)."""
    names = {case.name for case in cases()}
    stale = sorted(p.stem for p in ANSWERS.glob("*.json") if p.stem not in names)
    assert not stale, f"answers of no case: {stale[:5]}"


@pytest.mark.parametrize(
    "name", ["merged", "net-ping", "repl-3", "mtp-ingest", "monitor", "hgrm-import", "empty"]
)
def test_names_resolve_to_the_corpus_runs(
    name: str, golden_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The corpus' runs are found by the names they were stored with, as by their ids."""
    code, out, err = run_main(["runs", "--json", "--store", str(golden_store)], capsys)
    assert code == 0, err
    named = {r.get("name"): r["id"] for r in json.loads(out)}
    ids = {r for ids in _corpus().values() for r in ids}
    assert named.get(name) in ids, (name, named)

"""The layout's rules, checked on the source: arrows point one way (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import tomllib

from conftest import module_nodes

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "jitterlab"

# Which rooms each room may import (itself always). cli sits on top and may import any room.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "stats": {"core"},  # only core/programs.py, to find the C++ kernels (stats/kernels.py)
    "store": {"core", "stats"},
    "measure": {"core", "stats", "store"},
    "describe": {"core", "stats", "store"},
    # the Dask executor: a second Engine (store/reader.py) whose passes run on a cluster's
    # workers; the CLI builds it and hands it down, nothing below imports it
    "cluster": {"core", "stats", "store"},
    # inject validate measures the proxy with the measure room's job runner
    "simulate": {"core", "stats", "store", "measure"},
    # motion-to-photon: analyses videos and sensor logs, writes runs through measure's runner
    "mtp": {"core", "stats", "store", "measure"},
    # live monitoring of experiments: the recorder, serve, trial screening, SSQ; runs through measure's runner
    "monitor": {"core", "stats", "store", "measure"},
    # replication scaling: runs the native tool with the measure room's job runner, across
    # net's namespaces with its impairment on the links
    "repl": {"core", "stats", "store", "measure", "net"},
    # across nodes: agents, namespaces, and the injection engine's models on the link
    "net": {"core", "stats", "store", "measure", "simulate"},
    # the OpenXR layer's config, environment and `xr run` (a monitor serve per channel, models checked)
    "xr": {"core", "stats", "store", "measure", "simulate", "monitor"},
    "cli": {
        "core",
        "stats",
        "store",
        "measure",
        "describe",
        "cluster",
        "simulate",
        "mtp",
        "monitor",
        "repl",
        "net",
        "xr",
    },
}
TOP_LEVEL = {"__init__", "__main__"}  # the public face re-exports; __main__ calls the cli


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path, package: Path) -> list[tuple[int, str]]:
    """Every ``jitterlab.*`` module imported anywhere in ``path``, function-local and relative ones too.

    A relative import is resolved against the file's own package (``from ..measure import jvm`` in
    ``describe/report.py`` is ``jitterlab.measure``), so it cannot slip past the rule.
    """
    tree = ast.parse(path.read_text())
    own_package = ["jitterlab", *path.relative_to(package).parent.parts]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = own_package[: len(own_package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "jitterlab":
                found += [(node.lineno, f"jitterlab.{a.name}") for a in node.names]
            elif module.startswith("jitterlab."):
                found.append((node.lineno, module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("jitterlab")]
    return found


def wrong_arrows(package: Path) -> list[str]:
    problems = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        room = relative.parts[0] if len(relative.parts) > 1 else relative.stem
        if room in TOP_LEVEL:
            continue
        if room not in ALLOWED:
            problems.append(
                f"{relative}: '{room}' is not a room of the layout (add it to ALLOWED and the docs)"
            )
            continue
        for line, module in imports_of(path, package):
            target = room_of(module)
            if target != room and target not in ALLOWED[room]:
                problems.append(f"{relative}:{line}: {room} imports {module}")
    return problems


def test_imports_point_one_way() -> None:
    assert wrong_arrows(PACKAGE) == []


def test_the_check_catches_a_wrong_arrow(tmp_path: Path) -> None:
    # describe must never import a measuring room, even inside a function
    (tmp_path / "describe").mkdir()
    (tmp_path / "describe" / "report.py").write_text(
        "def f():\n    from jitterlab.measure.jvm import parse_gc_log\n    return parse_gc_log\n"
    )
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "runs.py").write_text("from jitterlab import describe\n")
    assert wrong_arrows(tmp_path) == [
        "describe/report.py:2: describe imports jitterlab.measure.jvm",
        "store/runs.py:1: store imports jitterlab.describe",
    ]


def test_the_check_catches_a_relative_import_across_rooms(tmp_path: Path) -> None:
    # a relative import is the same arrow spelled differently: it must not pass
    (tmp_path / "describe").mkdir()
    (tmp_path / "describe" / "report.py").write_text(
        "from ..measure import jvm\nfrom . import summary\nfrom .. import net\n"
    )
    (tmp_path / "store" / "hdr").mkdir(parents=True)
    (tmp_path / "store" / "hdr" / "codec.py").write_text(
        "from ...describe.plots import f\nfrom .. import runs\n"
    )
    assert wrong_arrows(tmp_path) == [
        "describe/report.py:1: describe imports jitterlab.measure",
        "describe/report.py:3: describe imports jitterlab.net",
        "store/hdr/codec.py:1: store imports jitterlab.describe.plots",
    ]


def test_ruff_bans_relative_imports() -> None:
    # the second guard: ruff's flake8-tidy-imports rule rejects relative imports in src/ and tests/
    config = tomllib.loads((PACKAGE.parents[1] / "pyproject.toml").read_text())
    lint = config["tool"]["ruff"]["lint"]
    assert "TID252" in lint["select"] or "TID" in lint["select"]
    assert lint["flake8-tidy-imports"]["ban-relative-imports"] == "all"


@pytest.mark.parametrize("room", sorted(ALLOWED))
def test_every_room_exists_and_says_what_it_is_for(room: str) -> None:
    init = PACKAGE / room / "__init__.py"
    assert init.is_file(), f"{room}/ has no __init__.py"
    assert ast.get_docstring(ast.parse(init.read_text())), f"{room}/__init__.py has no docstring"


def test_cli_modules_are_thin() -> None:
    long = {p.name: n for p in (PACKAGE / "cli").glob("*.py") if (n := len(p.read_text().splitlines())) > 250}
    assert long == {}


# The one reader (issue 37): a run's samples file is opened in store/ only (store/reader.py),
# so nothing outside store/ imports pyarrow's Parquet module or asks Polars to read Parquet.
PARQUET_MODULES = ("pyarrow.parquet", "pyarrow.dataset")
PARQUET_READERS = {"scan_parquet", "read_parquet", "ParquetFile", "ParquetWriter", "read_schema"}


def parquet_outside_store(package: Path) -> list[str]:
    """Every import of a Parquet module, and every call of a Parquet reader by name, in a
    module outside ``store/`` (function-local ones too)."""
    problems = []
    for relative, node in module_nodes(package, lambda relative: relative.startswith("store/")):
        if isinstance(node, ast.Attribute) and node.attr in PARQUET_READERS:
            problems.append(f"{relative}:{node.lineno}: reads Parquet ({node.attr})")
        if any(n == m or n.startswith(m + ".") for n in imported_names(node) for m in PARQUET_MODULES):
            problems.append(f"{relative}:{node.lineno}: imports a Parquet module")
    return sorted(set(problems))


def imported_names(node: ast.AST) -> list[str]:
    """What an import names: ``import a.b`` a.b; ``from a import b`` a and a.b (nothing for
    another node, or a relative ``from . import b``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return []


def test_only_the_store_opens_parquet_files() -> None:
    assert parquet_outside_store(PACKAGE) == []


def test_the_parquet_check_catches_an_import_and_a_read(tmp_path: Path) -> None:
    (tmp_path / "describe").mkdir()
    (tmp_path / "describe" / "a.py").write_text(
        "def f(p):\n    import pyarrow.parquet as pq\n    return pq.read_table(p)\n"
    )
    (tmp_path / "describe" / "b.py").write_text("from pyarrow import parquet\n")
    (tmp_path / "describe" / "c.py").write_text("import polars as pl\nx = pl.scan_parquet('f')\n")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "reader.py").write_text("import pyarrow.parquet as pq\n")
    assert parquet_outside_store(tmp_path) == [
        "describe/a.py:2: imports a Parquet module",
        "describe/b.py:1: imports a Parquet module",
        "describe/c.py:2: reads Parquet (scan_parquet)",
    ]


def runtime_imports_of(path: Path, package: Path) -> set[str]:
    """:func:`imports_of` less those under ``if TYPE_CHECKING:`` (names for annotations,
    never executed)."""
    typing_only = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {
                sub.lineno for sub in node.body for sub in ast.walk(sub) if hasattr(sub, "lineno")
            }
    return {module for line, module in imports_of(path, package) if line not in typing_only}


def circles_in(package: Path, room: str) -> list[list[str]]:
    """The import circles among the modules of ``room`` (function-local imports count:
    a circle hidden in a function is still one; imports for annotations only do not),
    each as the modules around it."""
    modules: dict[str, set[str]] = {}
    for path in sorted((package / room).rglob("*.py")):
        relative = path.relative_to(package).with_suffix("")
        name = ".".join(["jitterlab", *relative.parts]).removesuffix(".__init__")
        modules[name] = runtime_imports_of(path, package)
    # the room's own package is left out as a target: ``from jitterlab.store import names``
    # reaches a submodule through it, and __init__ only gathers names
    package_name = f"jitterlab.{room}"
    graph = {
        m: {t for t in targets if t in modules and t not in (m, package_name)}
        for m, targets in modules.items()
    }
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                found.append(path[path.index(target) :])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return found


def test_no_import_circle_inside_the_store() -> None:
    """Issue 37: store/cluster.py (now cluster/engine.py) imported cluster_sample and
    cluster_twopass (in functions), which imported it back; what they share is
    cluster/scan.py."""
    assert circles_in(PACKAGE, "store") == []
    assert circles_in(PACKAGE, "cluster") == []


def test_the_dask_executor_is_a_room_of_its_own() -> None:
    """Issue 37 item 3: the Dask executor is not part of store/; only the CLI imports it
    (describe, export, merge and the others take an ``Engine``)."""
    assert not list((PACKAGE / "store").glob("cluster*.py"))
    importers = {
        path.relative_to(PACKAGE).parts[0]
        for path in PACKAGE.rglob("*.py")
        if any(room_of(m) == "cluster" for _, m in imports_of(path, PACKAGE))
    }
    assert importers <= {"cli", "cluster"}, importers


def test_the_circle_check_catches_a_circle_hidden_in_a_function(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "a.py").write_text(
        "from jitterlab.store.c import x\ndef f():\n    from jitterlab.store.b import g\n"
    )
    (tmp_path / "store" / "b.py").write_text("from jitterlab.store.a import f\n")
    (tmp_path / "store" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from jitterlab.store.a import f\n"
    )
    assert circles_in(tmp_path, "store") == [["jitterlab.store.a", "jitterlab.store.b"]]


def engine_questions(package: Path) -> list[str]:
    """Places that ask an engine what it is instead of calling the ``Engine`` protocol
    (store/reader.py): ``hasattr(engine, …)``, ``getattr(engine, …)``, ``… is LOCAL``."""
    problems = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("hasattr", "getattr")
                and node.args
                and "engine" in ast.unparse(node.args[0]).lower()
            ):
                problems.append(f"{relative}:{node.lineno}: {node.func.id}({ast.unparse(node.args[0])}, …)")
            elif (
                isinstance(node, ast.Compare)
                and any(isinstance(op, ast.Is | ast.IsNot) for op in node.ops)
                and any(ast.unparse(c) == "LOCAL" for c in [node.left, *node.comparators])
            ):
                problems.append(f"{relative}:{node.lineno}: {ast.unparse(node)}")
    return problems


def test_no_one_asks_an_engine_what_it_is() -> None:
    """Issue 37: describe chose the two kernel passes by ``engine is LOCAL`` and
    ``hasattr(engine, "two_pass")``, compare its sample by ``getattr(engine, "sample")``;
    both are now methods every engine has (``Engine.two_pass``, ``Engine.sample``)."""
    assert engine_questions(PACKAGE) == []


def test_the_engine_check_catches_each_question(tmp_path: Path) -> None:
    (tmp_path / "describe").mkdir()
    (tmp_path / "describe" / "a.py").write_text(
        "def f(engine):\n    if engine is LOCAL:\n        pass\n"
        "    if hasattr(engine, 'two_pass'):\n        pass\n    g = getattr(engine, 'sample', None)\n"
    )
    assert engine_questions(tmp_path) == [
        "describe/a.py:2: engine is LOCAL",
        "describe/a.py:4: hasattr(engine, …)",
        "describe/a.py:6: getattr(engine, …)",
    ]


# Issue 37 item 1: nothing outside store/ names a samples column. A room reads a run's samples
# through store/'s accessors (`Run.latency_ns`, `Run.t_send_ns`, `RawSamples.seq`, the reader's
# chunks), never by the column's name. These files use one of the names for something that is
# not a run's samples; each says why.
NAMES_A_COLUMN_ALLOWED = {
    # the C recorder's ring event (the struct the ring holds before the drain loop writes the
    # events as a run through store/)
    "monitor/recorder.py": "the ring's event layout, declared where the C struct is mirrored",
    "monitor/server.py": "fields of the ring's events (monitor/recorder.py's layout), not of stored samples",
    # run.json's `obtained.placements[].pair` and the spike-CPU block's `"from": "pair"`
    "measure/bench.py": "a placement's `pair` field in run.json, not a column",
    "describe/attribution.py": "reads that run.json value (`where['from'] == 'pair'`), not the column",
}


def samples_column_names() -> set[str]:
    """Every samples column's name: store/schema.py's ``SAMPLE_COLUMNS`` and the optional
    ones store/reader.py names (``ACTUAL_SEND``: net's open-loop runs)."""
    from jitterlab.store.reader import ACTUAL_SEND
    from jitterlab.store.schema import SAMPLE_COLUMNS

    return {*SAMPLE_COLUMNS, ACTUAL_SEND}


def column_names_outside_store(package: Path) -> list[str]:
    """Every string constant equal to a samples column's name (:func:`samples_column_names`)
    used as a subscript, a call's argument or a comparison's operand in a module outside
    ``store/`` (docstrings and comments are not code, so they may name it)."""
    names = samples_column_names()
    problems = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[0] == "store" or relative.as_posix() in NAMES_A_COLUMN_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            used: list[ast.expr] = []
            if isinstance(node, ast.Subscript):
                used = [node.slice]
            elif isinstance(node, ast.Call):
                used = [*node.args, *(k.value for k in node.keywords)]
            elif isinstance(node, ast.Compare):
                used = [node.left, *node.comparators]
            elif isinstance(node, ast.List | ast.Tuple | ast.Set) and isinstance(
                getattr(node, "ctx", None), ast.Load
            ):
                used = list(node.elts)
            elif isinstance(node, ast.Dict):
                used = [k for k in node.keys if k is not None]
            for value in used:
                if isinstance(value, ast.Constant) and value.value in names:
                    problems.append(f"{relative}:{node.lineno}: names the samples column {value.value!r}")
    return sorted(set(problems))


def test_nothing_outside_the_store_names_a_samples_column() -> None:
    assert column_names_outside_store(PACKAGE) == []


def test_every_allowed_column_name_is_still_used() -> None:
    """An allow-list entry whose file no longer names a column goes (so the list only shrinks)."""
    for relative in NAMES_A_COLUMN_ALLOWED:
        path = PACKAGE / relative
        assert path.exists(), relative
        tree = ast.parse(path.read_text())
        constants = {
            n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
        }
        assert constants & samples_column_names(), (
            f"{relative} no longer names a column: drop it from the list"
        )


def test_the_column_check_catches_each_form(tmp_path: Path) -> None:
    (tmp_path / "describe").mkdir()
    (tmp_path / "describe" / "a.py").write_text(
        "def f(run, t, b):\n"
        "    x = t.column('t_recv_ns')\n"
        "    y = b['seq']\n"
        "    z = run.summary(since='t_send_ns')\n"
        "    if run.since == 'pair':\n"
        "        pass\n"
        "    cols = ['t_send_ns', 'latency']\n"
        "    '''t_send_ns in a docstring is prose'''\n"
        "    return run.meta['summary']['latency_ns'], run.column('t_actual_send_ns')\n"
    )
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "reader.py").write_text("SEND = 't_send_ns'\nx = b['seq']\n")
    assert column_names_outside_store(tmp_path) == [
        "describe/a.py:2: names the samples column 't_recv_ns'",
        "describe/a.py:3: names the samples column 'seq'",
        "describe/a.py:4: names the samples column 't_send_ns'",
        "describe/a.py:5: names the samples column 'pair'",
        "describe/a.py:7: names the samples column 't_send_ns'",
        "describe/a.py:9: names the samples column 't_actual_send_ns'",
    ]


# Issue 37 item 5: recovery of interrupted runs in one place, store/recovery.py. Outside it a
# function about recovering is only one of these (each says why it is not there).
RECOVERY_OUTSIDE_ALLOWED = {
    # run.json of a leftover: the machine's environment and doctor facts, which the store does
    # not read; `recover` hands it to store/recovery.py and does nothing else
    "measure/jobs.py": {"recover", "_recovered_meta"},
    "cli/runs.py": {"cmd_recover"},  # the command: parse, call measure.jobs.recover, print
}


def recovery_outside_its_module(package: Path) -> list[str]:
    """Every function whose name says it recovers (``*recover*``) defined outside
    store/recovery.py and the allowed ones."""
    problems = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative == "store/recovery.py":
            continue
        allowed = RECOVERY_OUTSIDE_ALLOWED.get(relative, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and "recover" in node.name
                and node.name not in allowed
            ):
                problems.append(f"{relative}:{node.lineno}: {node.name}")
    return problems


def test_recovery_is_in_one_place() -> None:
    assert recovery_outside_its_module(PACKAGE) == []


def test_jobs_recover_only_hands_over() -> None:
    """measure/jobs.py's ``recover`` is one call of store/recovery.py's, with the meta maker."""
    tree = ast.parse((PACKAGE / "measure" / "jobs.py").read_text())
    (recover,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "recover"]
    body = [s for s in recover.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    assert [ast.unparse(s) for s in body] == ["return recovery.recover(store, warn, _recovered_meta)"]


def test_the_recovery_check_catches_a_second_place(tmp_path: Path) -> None:
    (tmp_path / "measure").mkdir()
    (tmp_path / "measure" / "jobs.py").write_text("def recover():\n    pass\ndef _recover_one():\n    pass\n")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "runs.py").write_text("class S:\n    def recover_parts(self):\n        pass\n")
    (tmp_path / "store" / "recovery.py").write_text("def recover():\n    pass\n")
    assert recovery_outside_its_module(tmp_path) == [
        "measure/jobs.py:3: _recover_one",
        "store/runs.py:2: recover_parts",
    ]


# docs/architecture.md's claims that a test can keep (issue 37 item 5).
FORKS_IN_DESCRIBE = {"describe/report.py", "describe/paper/figures.py"}  # its workers; the figure child


def processes_in_describe(package: Path) -> list[str]:
    """describe/ starts no program (no ``subprocess`` anywhere in it); a fork of itself
    (``multiprocessing``, ``ProcessPoolExecutor``, ``os.fork``) only in the modules named."""
    problems = []
    for relative, node in module_nodes(package, lambda relative: not relative.startswith("describe/")):
        names = imported_names(node)
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("fork", "forkpty", "spawnv", "system", "popen")
            and ast.unparse(node.value) == "os"
        ):
            names = [f"os.{node.attr}"]
        for name in names:
            if name.split(".")[0] == "subprocess" or name in ("os.system", "os.popen", "os.spawnv"):
                problems.append(f"{relative}:{node.lineno}: starts a program ({name})")
            elif (
                name.split(".")[0] == "multiprocessing"
                or name.endswith("ProcessPoolExecutor")
                or name.startswith("os.fork")
            ) and relative not in FORKS_IN_DESCRIBE:
                problems.append(f"{relative}:{node.lineno}: makes a process ({name})")
    return sorted(set(problems))


def test_describe_starts_no_program_and_forks_only_where_named() -> None:
    assert processes_in_describe(PACKAGE) == []


def test_the_process_check_catches_a_program_and_a_fork(tmp_path: Path) -> None:
    (tmp_path / "describe").mkdir()
    (tmp_path / "describe" / "a.py").write_text("import subprocess\n")
    (tmp_path / "describe" / "b.py").write_text("import os\npid = os.fork()\n")
    (tmp_path / "describe" / "c.py").write_text("from concurrent.futures import ProcessPoolExecutor\n")
    (tmp_path / "describe" / "report.py").write_text("import multiprocessing\n")
    assert processes_in_describe(tmp_path) == [
        "describe/a.py:1: starts a program (subprocess)",
        "describe/b.py:2: makes a process (os.fork)",
        "describe/c.py:1: makes a process (concurrent.futures.ProcessPoolExecutor)",
    ]


def test_every_exporter_writes_to_a_stream() -> None:
    """docs/architecture.md: an exporter is ``(run, options, out) -> None`` (``Exporter``)."""
    import inspect

    from jitterlab.describe.export import EXPORTERS

    for name, exporter in EXPORTERS.items():
        signature = inspect.signature(exporter)
        assert len(signature.parameters) == 3, name
        assert signature.return_annotation in (None, "None"), name


def sample_writers_outside_store(package: Path) -> list[str]:
    """Where a ``SampleWriter`` is made outside store/ (docs/architecture.md: only a
    pipeline's series, in measure/jobs.py)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.startswith("store/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "SampleWriter":
                found.append(relative)
    return sorted(set(found))


def test_samples_files_are_written_in_the_store_but_a_pipelines_series() -> None:
    assert sample_writers_outside_store(PACKAGE) == ["measure/jobs.py"]


def test_the_results_store_is_its_three_concerns() -> None:
    """store/runs.py split by concern (issue 37 item 5): ``ResultsStore`` adds no method of its
    own; each comes from staging.py, publish.py or listing.py, and runs.py stays a short face."""
    from jitterlab.store.runs import ResultsStore

    homes = {
        name: getattr(ResultsStore, name).__module__
        for name in dir(ResultsStore)
        if callable(getattr(ResultsStore, name)) and not name.startswith("__")
    }
    assert set(homes.values()) == {
        "jitterlab.store.staging",
        "jitterlab.store.publish",
        "jitterlab.store.listing",
    }
    assert len((PACKAGE / "store" / "runs.py").read_text().splitlines()) <= 100


def describe_run_users(package: Path) -> list[str]:
    """The modules of ``package`` that name ``describe_run`` (an import, a call, a reference)
    besides analysis.py, which defines it (issue 37 item 4: only describe/description.py
    calls it; the report, ``paper``, ``show`` and the notebook render its typed description)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative == "describe/analysis.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            named = (
                (isinstance(node, ast.Name) and node.id == "describe_run")
                or (isinstance(node, ast.Attribute) and node.attr == "describe_run")
                or (isinstance(node, ast.alias) and node.name == "describe_run")
            )
            if named:
                found.append(relative)
                break
    return found


def test_only_the_description_calls_describe_run(tmp_path: Path) -> None:
    assert describe_run_users(PACKAGE) == ["describe/description.py"]
    # the check sees an import inside a function and a call through the module
    (tmp_path / "describe").mkdir()
    (tmp_path / "describe" / "report.py").write_text(
        "def section(run):\n    from jitterlab.describe.analysis import describe_run\n    return describe_run(run)\n"
    )
    (tmp_path / "paper.py").write_text(
        "from jitterlab.describe import analysis\nd = analysis.describe_run(None)\n"
    )
    (tmp_path / "describe" / "analysis.py").write_text("def describe_run(run):\n    return run\n")
    assert describe_run_users(tmp_path) == ["describe/report.py", "paper.py"]

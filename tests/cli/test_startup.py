"""The command line starts at once (issue 28 item 3): only the command being run imports its
room, and the one-line help of every command is the one its module registers."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_main
from jitterlab.cli.main import main as cli_main

HEAVY = ("numpy", "pandas", "pyarrow", "scipy", "matplotlib")
# cheaper but paid by every command: importlib.metadata (email, zipfile: ~40 ms) for the
# version, tomllib (~20 ms) for the warning codes, secrets (hashlib, random) for a random
# name; they come from _build_info.json, on first use, and os.urandom instead
MEDIUM = ("importlib.metadata", "tomllib", "secrets")


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        # `net topo up/down` do 0.03 s of work: their parser and the topo command itself
        # (`list` runs it without root side effects) import no heavy library (issue 28 item 3)
        ["net", "--help"],
        ["net", "topo", "--help"],
        ["net", "topo", "up", "--help"],
        ["net", "topo", "down", "--help"],
        ["net", "topo", "list"],
    ],
)
def test_version_and_help_import_no_heavy_library(args: list[str]) -> None:
    heavy = HEAVY + MEDIUM
    code = (
        "import sys\nfrom jitterlab.cli import main\ntry:\n    main("
        + repr(args)
        + ")\nexcept SystemExit:\n    pass\n"
        "print('heavy:' + ','.join(m for m in " + repr(heavy) + " if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "heavy:", f"imported by {args}: {done.stdout}"


def command_paths() -> list[list[str]]:
    """Every command and sub-command the parser knows (``bench``, ``model build``, ``mtp
    analyze``, ...), read from the parser itself so that a command added later is covered."""
    main = sys.modules.get("jitterlab.cli.main") or __import__("jitterlab.cli.main", fromlist=["x"])
    paths: list[list[str]] = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        paths.append(path)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, [*path, name])

    for command in main.COMMANDS:
        sub = next(
            a for a in main.build_parser(command)._actions if isinstance(a, argparse._SubParsersAction)
        )
        walk(sub.choices[command], [command])
    return paths


# One process imports the command line's entry (nothing heavy, checked), then forks once per
# page: each child starts from exactly what a fresh `jitterlab ... --help` has loaded at that
# point, prints the page to /dev/null and reports the heavy modules it ended up with.
FORKED_HELP = """
import json, os, sys
from jitterlab.cli import main
HEAVY = {heavy!r}
assert not [m for m in HEAVY if m in sys.modules], "heavy before any command"
found = {{}}
for path in json.loads(sys.argv[1]):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        code = 0
        try:
            main([*path, "--help"])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        report = {{"code": code, "heavy": [m for m in HEAVY if m in sys.modules]}}
        os.write(w, json.dumps(report).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as pipe:
        found[" ".join(path)] = json.loads(pipe.read())
    os.waitpid(pid, 0)
print(json.dumps(found))
"""


def test_every_help_page_imports_no_heavy_library() -> None:
    """`--help` of every command and sub-command (issue 28): the page is the parser's, so it
    comes without numpy, pandas, pyarrow, scipy or matplotlib (the room's libraries load when
    the command runs)."""
    paths = command_paths()
    names = {" ".join(p) for p in paths}
    # the parser walk finds the nested pages, not only the top-level commands
    assert {"bench", "hiccup", "monitor serve", "repl bench", "inject", "mtp analyze"} <= names
    assert {"model build", "describe", "report", "net topo up"} <= names
    code = FORKED_HELP.format(heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(paths)], capture_output=True, text=True, check=True
    )
    found = json.loads(done.stdout)
    assert set(found) == names
    assert {page: r["code"] for page, r in found.items() if r["code"] != 0} == {}
    assert {page: r["heavy"] for page, r in found.items() if r["heavy"]} == {}


def test_every_command_is_registered_by_its_module_with_the_listed_help() -> None:
    main = sys.modules.get("jitterlab.cli.main") or __import__("jitterlab.cli.main", fromlist=["x"])
    for command, (group, line) in main.COMMANDS.items():
        parser = main.build_parser(command)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        helps = {a.dest: a.help for a in sub._choices_actions}
        assert helps[command] == line, command
        # the real parser of the group (with its options), not the one-line stand-in
        assert sub.choices[command]._actions[1:], command
        module = main.command_module(group)
        assert command in module.COMMANDS


def test_an_unknown_command_is_one_line() -> None:
    with pytest.raises(SystemExit) as e:
        cli_main(["no-such-command"])
    assert e.value.code == 2


def test_jitterlab_alone_prints_the_command_overview(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([], capsys)
    assert code == 0 and err == ""
    assert all(command in out for command in sys.modules["jitterlab.cli.main"].COMMANDS)


def test_runs_reads_run_json_only(tmp_path: Path) -> None:
    """`jitterlab runs` lists an empty store and a store with a run without numpy, pyarrow,
    scipy (the stored summary is in run.json); `show` of the same run does load them."""
    store = str(tmp_path / "store")
    csv = tmp_path / "latencies.csv"
    csv.write_text("latency_ns\n" + "".join(f"{1000 + 7 * i}\n" for i in range(100)))

    def heavy_after(args: list[str]) -> list[str]:
        code = (
            "import sys\nfrom jitterlab.cli import main\ntry:\n    main(" + repr(args) + ")\n"
            "except SystemExit:\n    pass\n"
            "print('heavy:' + ','.join(m for m in " + repr(HEAVY) + " if m in sys.modules))"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert "error" not in done.stderr, done.stderr
        return [m for m in done.stdout.strip().splitlines()[-1].removeprefix("heavy:").split(",") if m]

    assert heavy_after(["runs", "--store", store]) == []
    subprocess.run([sys.executable, "-m", "jitterlab", "import", str(csv), "--store", store], check=True)
    assert heavy_after(["runs", "--store", store]) == []
    (run,) = [d.name for d in Path(store).iterdir() if not d.name.startswith(".")]
    assert "numpy" in heavy_after(["show", run, "--store", store])

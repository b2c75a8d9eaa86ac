"""docs/cli.md is generated from the parsers and current; every flag has one meaning."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from jitterlab.cli.common import DeprecatedAlias
from jitterlab.cli.main import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]
# Flags whose value kind differs by command, each for a stated reason (everything else: one kind).
KNOWN_EXCEPTIONS = {
    "--duration": "hiccup keeps its duration as text for the harness (parsed by the same units)",
    "--scenario": "net bench takes a comma list of workloads, bench one workload",
    "--threshold": "describe: a modified z-score; hiccup: the smallest gap recorded (a duration or auto)",
}


def test_docs_cli_md_is_current() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gen_cli_docs.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def _kinds() -> dict[str, set[tuple[str, str]]]:
    kinds: dict[str, set[tuple[str, str]]] = defaultdict(set)

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for child_name, child in a.choices.items():
                    walk(child, f"{name} {child_name}")
            elif a.option_strings and not isinstance(a, DeprecatedAlias):
                kind = (
                    "flag"
                    if a.nargs == 0
                    else getattr(a.type, "kind", None) or getattr(a.type, "__name__", "text")
                )
                for option in a.option_strings:
                    kinds[option].add((kind, name))

    for command in COMMANDS:
        top = build_parser(command)
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        walk(sub.choices[command], command)
    return kinds


def test_every_flag_has_one_kind_of_value_across_commands() -> None:
    mixed = {o: sorted(s) for o, s in _kinds().items() if len({k for k, _ in s}) > 1}
    assert set(mixed) <= set(KNOWN_EXCEPTIONS), {o: s for o, s in mixed.items() if o not in KNOWN_EXCEPTIONS}


def test_the_shared_vocabulary_means_the_same_everywhere() -> None:
    kinds = _kinds()
    expected = {"--samples": "integer", "--rate": "number", "--seed": "integer", "--json": "flag"}
    expected |= {"--warmup": "duration", "--window": "duration", "--report": "Path", "--store": "Path"}
    for option, kind in expected.items():
        assert {k for k, _ in kinds[option]} == {kind}, (option, sorted(kinds[option]))

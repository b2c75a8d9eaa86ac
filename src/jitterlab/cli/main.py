"""The ``jitterlab`` command line: progress and warnings on stderr, data on stdout.

Each command group lives in a module of its own (parse, call the room, print); this one
assembles the parser and turns errors into one line with a fixed exit code.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from jitterlab.cli.common import EXIT_INTERRUPTED, EXIT_USAGE, Parser
from jitterlab.core.errors import JitterlabError, escape_controls
from jitterlab.core.signals import Interrupted, stop_on_signals
from jitterlab.core.version import __version__

# Every command: the cli module that parses and runs it, and its line in `jitterlab --help`.
# Only the module of the command being run is imported (numpy, pyarrow, scipy, matplotlib
# come with the modules), so `--version`, `--help` and a command's own start stay fast;
# tests/cli/test_startup.py checks that each module registers these commands with this help.
COMMANDS: dict[str, tuple[str, str]] = {
    "bench": ("bench", "measure message-passing latency (n sender/receiver pairs)"),
    "runs": ("runs", "list stored runs"),
    "show": ("runs", "summary of one run"),
    "report": ("runs", "write one self-contained HTML report of runs"),
    "compare": ("compare", "compare run B against run A: verdict per percentile"),
    "paper": ("paper", "tables (LaTeX, Markdown, CSV), PDF/SVG figures, methods and a checklist of runs"),
    "recover": ("runs", "store what killed measurements left in the store's .staging/ as partial runs"),
    "rename": ("names", "give a stored run a name (its id stays, and still resolves)"),
    "export": ("interop", "write a run as HdrHistogram (hgrm, hlog), CSV or Parquet"),
    "import": ("interop", "store an HdrHistogram log (.hlog) or a CSV of samples as a run"),
    "merge": ("merge", "one run from runs and HdrHistogram logs of several hosts or times (source kept)"),
    "describe": ("describe", "summary, outlier categories and time windows of a run"),
    "doctor": ("system", "check what on this machine shapes latency, with the fix for each"),
    "hiccup": ("system", "per-CPU OS-noise meter: every interruption of a busy loop, stored as a run"),
    "model": ("model", "latency models: build from a run, design from parameters, show, sample"),
    "inject": (
        "inject",
        "delay a live UDP/TCP stream with a model (proxy), or 'inject validate' the proxy against it",
    ),
    "mtp": ("mtp", "motion-to-photon latency: from a video, or from per-frame sensor logs"),
    "monitor": ("monitor", "live latency inside an application: serve a channel, screen trials"),
    "ssq": ("monitor", "Simulator Sickness Questionnaire scores (Kennedy et al. 1993)"),
    "sdk": ("sdk", "where the C/C++ SDK is: headers, libraries, CMake and pkg-config files"),
    "repl": ("repl", "multi-user replication scaling: N clients through one server (seed 003)"),
    "net": ("net", "latency and throughput across nodes: namespaces or hosts (seed 004)"),
    "xr": ("xr", "OpenXR layer: delay an unchanged VR application's tracking by a model"),
}


def command_module(name: str) -> Any:
    """The cli module of a command group, imported now."""
    return importlib.import_module(f"jitterlab.cli.{name}")


def register(module: Any, sub: Any) -> None:
    """Let a command group's module add its sub-parsers."""
    (getattr(module, "add_parsers", None) or module.add_parser)(sub)


class _Parser(Parser):
    """:class:`Parser` taking a value that starts with a minus and a digit (``--pause -1ms``)
    as a value, so it reaches its option's range check (argparse's rule: only ``-1``, ``-1.5``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?[0-9]")

    def add_subparsers(self, **kwargs: Any) -> Any:  # every level (model make, net topo up …)
        return super().add_subparsers(**(kwargs | {"parser_class": _Parser}))


def build_parser(command: str | None = None) -> Parser:
    """The parser: full for ``command``'s group, one help line for every other command."""
    parser = _Parser(prog="jitterlab", description="Measure, describe and simulate latency jitter.")
    parser.add_argument("--version", action="version", version=f"jitterlab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    chosen = COMMANDS[command][0] if command in COMMANDS else None
    done: set[str] = set()
    for name, (group, line) in COMMANDS.items():
        if group == chosen:
            if group not in done:
                register(command_module(group), sub)
                done.add(group)
        else:
            sub.add_parser(name, help=line)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if not words:  # `jitterlab` alone: the command overview, as `git` and `cargo` do
        build_parser(None).print_help()
        return 0
    command = next((w for w in words if not w.startswith("-")), None)
    args = build_parser(command).parse_args(words)
    stop_on_signals()
    from jitterlab.store.runs import ResultsStore

    # a root jitterlab refuses a store another user owns unless told to trust its owner; for
    # this command only (a notebook or a test calls main() and then uses stores itself)
    refused_before = ResultsStore.refuse_others_as_root
    ResultsStore.refuse_others_as_root = not getattr(args, "trust_store_owner", False)
    try:
        return int(command_module(COMMANDS[args.command][0]).COMMANDS[args.command](args))
    except JitterlabError as e:
        print(f"jitterlab: error: {escape_controls(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as e:
        print(f"jitterlab: interrupted{f' by {e}' if isinstance(e, Interrupted) else ''}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug: one line by default, the traceback on request
        if os.environ.get("JITTERLAB_DEBUG"):
            raise
        print(
            f"jitterlab: internal error: {type(e).__name__}: {escape_controls(str(e))} (set JITTERLAB_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1
    finally:
        ResultsStore.refuse_others_as_root = refused_before

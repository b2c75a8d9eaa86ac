"""The ``jitterlab`` command line: progress and warnings on stderr, data on stdout.

Each command group lives in a module of its own (parse, call the room, print); this one
assembles the parser and turns errors into one line with a fixed exit code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from jitterlab.cli import bench, describe, inject, interop, model, monitor, mtp, net, repl, runs, system
from jitterlab.cli.common import EXIT_INTERRUPTED, EXIT_USAGE, Parser
from jitterlab.core.errors import JitterlabError
from jitterlab.core.signals import Interrupted, stop_on_signals
from jitterlab.core.version import __version__

COMMANDS: dict[str, Callable[..., int]] = (
    bench.COMMANDS
    | runs.COMMANDS
    | interop.COMMANDS
    | describe.COMMANDS
    | system.COMMANDS
    | model.COMMANDS
    | inject.COMMANDS
    | mtp.COMMANDS
    | monitor.COMMANDS
    | repl.COMMANDS
    | net.COMMANDS
)


def build_parser() -> Parser:
    parser = Parser(prog="jitterlab", description="Measure, describe and simulate latency jitter.")
    parser.add_argument("--version", action="version", version=f"jitterlab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    bench.add_parser(sub)
    runs.add_parsers(sub)
    interop.add_parsers(sub)
    describe.add_parser(sub)
    system.add_parsers(sub)
    model.add_parser(sub)
    inject.add_parser(sub)
    mtp.add_parser(sub)
    monitor.add_parsers(sub)
    repl.add_parser(sub)
    net.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    stop_on_signals()
    try:
        return COMMANDS[args.command](args)
    except JitterlabError as e:
        print(f"jitterlab: error: {e}", file=sys.stderr)
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
            f"jitterlab: internal error: {type(e).__name__}: {e} (set JITTERLAB_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1

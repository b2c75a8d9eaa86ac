"""What every measuring command shares beyond the options of :mod:`jitterlab.cli.common`:
the ``--report`` flag and its HTML report of the runs just made, and the line announcing
each run as it is stored. The report's libraries (matplotlib) are imported only when a
report is written, so a command's ``--help`` and its parser stay light."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitterlab.cli.common import note
from jitterlab.core.tidy import counted

if TYPE_CHECKING:
    from jitterlab.store import Run


def report_option(parser: argparse.ArgumentParser) -> None:
    """``--report FILE``: the one HTML report of the runs a measuring command just made."""
    parser.add_argument(
        "--report", type=Path, metavar="FILE", help="end by writing the HTML report of the runs just made"
    )


def check_report(args: argparse.Namespace) -> None:
    """Refuse an unwritable ``--report`` before any measuring (one line, exit 2)."""
    if getattr(args, "report", None):
        from jitterlab.core.fileio import check_writable_file

        check_writable_file(Path(args.report), "--report")


def write_runs_report(runs: Sequence[Run], out: Path | None, title: str, preface_html: str = "") -> None:
    """End a measuring command with ``--report``: the HTML report of ``runs`` (the one
    ``jitterlab report`` writes), matplotlib imported only now; ``preface_html`` is a section
    of the command's own before the runs' (``mtp analyze``: the check of the analysis)."""
    if out and runs:
        from jitterlab.describe.report import write_report

        note(f"writing the report of {counted(len(runs), 'run')}…")
        size = write_report(list(runs), Path(out), title, preface_html)
        note(f"wrote {out} ({size / 1e6:.1f} MB)")


def json_context(runs: Sequence[Run]) -> dict[str, Any]:
    """The ``context`` heading a measuring command's ``--json``: the block of the machine its
    runs were measured on, or, when it stored none, of this machine now (its environment
    and the doctor's findings read now, as a run made now would carry them)."""
    from jitterlab.describe.context import command_context, machine_context

    if runs:
        return command_context(runs)
    import datetime as dt

    from jitterlab.measure.jobs import common_meta

    return machine_context(common_meta("", dt.datetime.now(dt.timezone.utc)))


def announce(run: Run) -> None:
    """Each run's line as soon as it is stored, so a log (stderr not a terminal) shows
    progress through a long matrix, not everything at the end."""
    from jitterlab.describe.text import stored_line

    named = f" as {run.name}" if run.name else ""
    print(f"stored {run.id}{named}  {stored_line(run)}", file=sys.stderr, flush=True)

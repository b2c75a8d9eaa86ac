"""``jitterlab import``: a file recorded elsewhere (an HdrHistogram log, a CSV, Parquet or
Arrow file of samples, a cyclictest histogram, a .hgrm, a PresentMon CSV) stored as runs, through the same runner as every measurement."""

from __future__ import annotations

from pathlib import Path

from jitterlab.core.errors import JitterlabError
from jitterlab.measure.runner import Context, Done, Plan, Point
from jitterlab.store.formats import import_any
from jitterlab.store.ingest import ImportOptions


def import_plan(path: Path, options: ImportOptions) -> Plan:
    """One point: ``path`` read (by what it is: store/formats.py) and stored."""
    if not path.is_file():
        raise JitterlabError(f"{path}: no such file")

    def execute(ctx: Context) -> Done:
        return Done(import_any(path, ctx.store, options, ctx.warn))

    return Plan("import", [Point(str(path), execute)])

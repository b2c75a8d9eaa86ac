"""``jitterlab import``: a file recorded elsewhere (an HdrHistogram log, a CSV of samples)
stored as a run, through the same runner as every measurement."""

from __future__ import annotations

from pathlib import Path

from jitterlab.core.errors import JitterlabError
from jitterlab.measure.runner import Context, Done, Plan, Point


def import_plan(path: Path, skip_invalid: bool = False) -> Plan:
    """One point: ``path`` read (by its suffix) and stored."""
    if not path.is_file():
        raise JitterlabError(f"{path}: no such file")

    def execute(ctx: Context) -> Done:
        from jitterlab.store.ingest import import_file  # pyarrow's CSV reader only when importing

        return Done([import_file(path, ctx.store, skip_invalid, ctx.warn)])

    return Plan("import", [Point(str(path), execute)])

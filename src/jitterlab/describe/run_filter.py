"""``jitterlab runs`` filters and sorts (issue 43 item 1): ``--technique``, ``--name``,
``--since``, ``--status``, ``--where COLUMN OP VALUE`` over the columns of ``runs --json``,
and ``--sort COLUMN`` (``-COLUMN`` for descending).

Pure selection over run metadata (run.json only: no samples are read).
"""

from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitterlab.core.errors import JitterlabError
from jitterlab.core.units import parse_duration_ns

if TYPE_CHECKING:
    from jitterlab.store import Run

# the columns --where and --sort know: the ``runs --json`` row's, with technique, pairs and policy
COLUMNS = (
    "id",
    "name",
    "label",
    "technique",
    "pairs",
    "policy",
    "status",
    "created_utc",
    "count",
    "p50_ns",
    "p99_ns",
    "max_ns",
)
NUMERIC = {"pairs", "count", "p50_ns", "p99_ns", "max_ns"}
_WHERE = re.compile(r"\s*([a-z0-9_]+)\s*(<=|>=|!=|==|=|<|>|~)\s*(.*?)\s*$")
STATUSES = ("complete", "partial", "damaged")
_AGO = re.compile(r"([0-9]*\.?[0-9]+)(m|min|h|d|w)")
_AGO_UNITS = {"m": 60.0, "min": 60.0, "h": 3600.0, "d": 86_400.0, "w": 604_800.0}


def add_filter_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--technique", metavar="NAME", help="only runs of this technique (e.g. mutex, hiccup, import)"
    )
    p.add_argument(
        "--name", metavar="PATTERN", help="only runs whose name matches (a glob such as 'mutex-*')"
    )
    p.add_argument(
        "--since",
        metavar="WHEN",
        help="only runs created since a UTC date or time (2026-11-27, 2026-11-27T18:00) or within "
        "a duration ago (2h, 30m, 7d)",
    )
    p.add_argument("--status", choices=STATUSES, help="only runs of this status (default: every status)")
    p.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="'COLUMN OP VALUE'",
        help=f"only runs where this holds (repeatable, all must): OP one of = != < <= > >= ~ (contains); "
        f"COLUMN one of {', '.join(COLUMNS)}; *_ns columns take durations ('p99_ns>1ms')",
    )
    p.add_argument(
        "--sort",
        metavar="COLUMN",
        help="sort by this column (--sort=-COLUMN: descending; default: oldest first)",
    )


def row(run: Run) -> dict[str, Any]:
    """The values --where and --sort see for ``run``."""
    s = run.meta.get("summary", {}).get("latency_ns", {})
    return {
        "id": run.id,
        "name": run.name or "",
        "label": run.label,
        "technique": run.technique_label,
        "pairs": run.config.get("pairs"),
        "policy": run.policy_label,
        "status": str(run.meta.get("status") or ""),
        "created_utc": str(run.meta.get("created_utc") or ""),
        "count": s.get("count"),
        "p50_ns": s.get("p50"),
        "p99_ns": s.get("p99"),
        "max_ns": s.get("max"),
    }


def since_utc(text: str, now: dt.datetime | None = None) -> str:
    """``--since`` as an ISO time stamp comparable with run.json's ``created_utc``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        m = _AGO.fullmatch(text)
        try:
            seconds = float(m.group(1)) * _AGO_UNITS[m.group(2)] if m else parse_duration_ns(text, "s") / 1e9
        except JitterlabError:
            raise JitterlabError(
                f"--since {text!r}: give a UTC date or time (2026-11-27, 2026-11-27T18:00) or a duration ago (2h, 7d)"
            ) from None
        when = now - dt.timedelta(seconds=seconds)
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc).isoformat()


def _where(text: str) -> Callable[[dict[str, Any]], bool]:
    m = _WHERE.fullmatch(text)
    if not m or m.group(1) not in COLUMNS:
        raise JitterlabError(
            f"--where {text!r}: give COLUMN OP VALUE, e.g. 'p99_ns>1ms' or 'technique=mutex' "
            f"(columns: {', '.join(COLUMNS)}; OP: = != < <= > >= ~)"
        )
    column, op, raw = m.groups()
    value: Any = raw.strip("'\"")
    if column in NUMERIC and op != "~":
        try:
            value = parse_duration_ns(value, "ns") if column.endswith("_ns") else float(value)
        except (JitterlabError, ValueError):
            raise JitterlabError(
                f"--where {text!r}: {column} takes a number{' or a duration' if column.endswith('_ns') else ''}"
            ) from None

    def holds(r: dict[str, Any]) -> bool:
        have = r.get(column)
        if op == "~":
            return str(value).lower() in str(have if have is not None else "").lower()
        if have is None:
            return op == "!="
        have = float(have) if column in NUMERIC else str(have)
        if op in ("=", "=="):
            return bool(have == value)
        if op == "!=":
            return bool(have != value)
        if op == "<":
            return bool(have < value)
        if op == "<=":
            return bool(have <= value)
        if op == ">":
            return bool(have > value)
        return bool(have >= value)

    return holds


def select_runs(
    runs: Sequence[Run], damaged: Sequence[tuple[Path, str]], args: argparse.Namespace
) -> tuple[list[Run], list[tuple[Path, str]]]:
    """The runs (and damaged runs) that pass ``args``' filters, in ``--sort`` order."""
    tests = [_where(w) for w in getattr(args, "where", None) or []]
    technique, pattern = getattr(args, "technique", None), getattr(args, "name", None)
    status = getattr(args, "status", None)
    since = since_utc(args.since) if getattr(args, "since", None) else None
    sort = getattr(args, "sort", None)
    if sort and sort.lstrip("-") not in COLUMNS:
        raise JitterlabError(f"--sort {sort!r}: give one of {', '.join(COLUMNS)} (-COLUMN: descending)")

    def keep(run: Run) -> bool:
        r = row(run)
        if technique and technique not in (r["technique"], run.config.get("technique")):
            return False
        if pattern and not fnmatch.fnmatchcase(r["name"], pattern):
            return False
        if status and r["status"] != status:
            return False
        if since and (not r["created_utc"] or _utc(r["created_utc"]) < since):
            return False
        return all(t(r) for t in tests)

    chosen = [r for r in runs if keep(r)]
    if sort:
        column = sort.lstrip("-")

        def key(run: Run) -> tuple[int, Any]:
            value = row(run)[column]
            if value is None or value == "":
                return (1, 0)
            return (0, float(value) if column in NUMERIC else str(value))

        present = sorted([r for r in chosen if key(r)[0] == 0], key=key, reverse=sort.startswith("-"))
        chosen = present + [r for r in chosen if key(r)[0] == 1]  # runs without the value last
    filtering = technique or pattern or since or tests or (status and status != "damaged")
    kept_damaged = [] if filtering else list(damaged)
    if status and status != "damaged":
        kept_damaged = []
    if status == "damaged":
        chosen = []
    return chosen, kept_damaged


def _utc(text: str) -> str:
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc).isoformat()

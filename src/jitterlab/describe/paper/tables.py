"""The paper's tables: one typed structure, written as LaTeX, Markdown and CSV.

A table is a list of :class:`Column` and rows of :data:`Cell`. A cell holds the exact
number (nanoseconds, a count, a fraction) or text; the CSV carries the exact number, the
LaTeX and Markdown the number in the table's unit, rounded to the column's decimals.
A percentile cell is an :class:`Estimate`: its value and, where known, the interval and
whether the tail level is resolved. An unresolved level is printed as the tables of
``describe`` print it (describe/tables.py ``level_cell``): "≥ x" (the lower end of its
interval) or "not resolved"; the CSV leaves its value empty and says ``false`` in the
level's ``_resolved`` column.

LaTeX: booktabs rules, ``dcolumn`` ``D`` columns (numbers aligned on the decimal point;
dcolumn is in every TeX distribution's base tools, unlike siunitx), the unit in each
header; the document must load ``booktabs``, ``dcolumn`` and ``graphicx`` (wide tables are
scaled to the line).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from jitterlab.core.tidy import tidy_float

UNSCALED = {"count", "text", "percent", "value"}
NOT_RESOLVED = "not resolved"
AT_LEAST = "≥ "


@dataclass(frozen=True)
class Estimate:
    """A percentile: its value and, where known, the interval around it (same unit).

    ``resolved`` is False when the sample holds too few values beyond the level for the
    interval to close (its upper end would lie above the largest sample)."""

    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    resolved: bool = True
    method: str | None = None


Cell = float | int | str | Estimate | None


@dataclass(frozen=True)
class Column:
    """A column: its header, what kind of value it holds (``ns`` (scaled to the table's
    unit), ``count``, ``percent`` (a fraction, shown ×100), ``value`` (a number in its own
    ``unit``, shown and written as it is: ms of a replication summary, messages/s …) or
    ``text``) and, for numbers, the decimals shown. An ``ns`` column of :class:`Estimate`
    cells gets its interval in a second column beside it; ``resolved``: the CSV says in a
    ``_resolved`` column whether each cell's level is resolved (columns without interval)."""

    header: str
    kind: str = "ns"
    decimals: int = 2
    interval: bool = False  # write the Estimate's interval in a column beside
    unit: str = ""  # a ``value`` column's unit (in its header; the CSV header ends with it)
    resolved: bool = False  # the CSV gets a ``_resolved`` column (Estimate cells without interval)


@dataclass
class Table:
    name: str  # file stem: table1, collectors, comparison, …
    caption: str
    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)
    unit: str = "µs"  # the ns columns' unit in LaTeX and Markdown
    notes: list[str] = field(default_factory=list)  # below the table

    @property
    def scale(self) -> float:
        return UNIT_NS[self.unit]


UNIT_NS = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}
UNRESOLVED_NOTE = (
    "≥ x: not resolved (fewer than 10 samples are expected beyond this level): x is the lower end "
    "of its interval, the level is at least x; 'not resolved' where no interval is known"
)


def unit_for(values: Sequence[float]) -> str:
    """The unit that shows the median of ``values`` (ns) with 1 to 3 integer digits."""
    finite = sorted(v for v in values if v is not None and math.isfinite(v))
    typical = finite[len(finite) // 2] if finite else 0.0
    for unit in ("s", "ms", "µs"):
        if typical >= UNIT_NS[unit]:
            return unit
    return "ns"


def decimals_for(values: Sequence[float], scale: float, significant: int = 3) -> int:
    """Decimals that show the smallest of ``values`` (ns, in the unit of ``scale``) with
    ``significant`` digits (at most 3 decimals)."""
    finite = [abs(v) / scale for v in values if v is not None and math.isfinite(v) and v != 0]
    if not finite:
        return 0
    smallest = min(finite)
    digits = math.floor(math.log10(smallest)) + 1
    return max(0, min(3, significant - digits))


def _number(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


def shown(table: Table, column: Column, value: float | int) -> str:
    """A number as the LaTeX and Markdown tables show it."""
    if column.kind == "count":
        return str(int(value))
    if column.kind == "percent":
        return _number(float(value) * 100, column.decimals)
    if column.kind == "value":
        return _number(float(value), column.decimals)
    return _number(float(value) / table.scale, column.decimals)


def _value_of(cell: Cell) -> float | int | None:
    if isinstance(cell, Estimate):
        return cell.value
    if isinstance(cell, (int, float)):
        return cell
    return None


def header_with_unit(table: Table, column: Column) -> str:
    """A column's header with its unit (the Markdown's; the LaTeX's escaped): the table's
    for ``ns``, % for ``percent``, its own for ``value``."""
    if column.kind == "ns":
        return f"{column.header} ({table.unit})"
    if column.kind == "percent":
        return f"{column.header} (%)"
    if column.kind == "value" and column.unit:
        return f"{column.header} ({column.unit})"
    return column.header


def interval_text(table: Table, column: Column, cell: Cell) -> str:
    """``[low, high]`` in the table's unit; ``—`` where no interval is known; an open
    upper end as ``[low, —)``."""
    if not isinstance(cell, Estimate) or cell.ci_low is None:
        return "—"
    low = shown(table, column, cell.ci_low)
    if cell.ci_high is None:
        return f"[{low}, —)"
    return f"[{low}, {shown(table, column, cell.ci_high)}]"


def _text_cell(table: Table, column: Column, cell: Cell) -> str:
    if cell is None:
        return "—"
    if isinstance(cell, str):
        return cell
    if isinstance(cell, Estimate):
        if not cell.resolved:  # as describe's tables print it (describe/tables.py level_cell)
            return NOT_RESOLVED if cell.ci_low is None else AT_LEAST + shown(table, column, cell.ci_low)
        if not math.isfinite(cell.value):
            return "—"
        return shown(table, column, cell.value)
    if isinstance(cell, float) and not math.isfinite(cell):
        return "—"
    return shown(table, column, cell)


# --- Markdown ---


def markdown(table: Table) -> str:
    headers: list[str] = []
    aligns: list[str] = []
    for c in table.columns:
        headers.append(header_with_unit(table, c))
        aligns.append("---" if c.kind == "text" else "---:")
        if c.interval:
            headers.append(f"95 % CI ({table.unit})")
            aligns.append(":---:")
    lines = [f"**{table.caption}**", "", "| " + " | ".join(headers) + " |", "|" + "|".join(aligns) + "|"]
    for row in table.rows:
        cells: list[str] = []
        for c, cell in zip(table.columns, row, strict=True):
            cells.append(_text_cell(table, c, cell).replace("|", "\\|"))
            if c.interval:
                cells.append(interval_text(table, c, cell))
        lines.append("| " + " | ".join(cells) + " |")
    if table.notes:
        lines += [""] + [f"{note}  " for note in table.notes]
    return "\n".join(lines) + "\n"


# --- CSV: the exact numbers ---


def _exact(value: float | int) -> str:
    """A CSV number as ``--json`` gives it: a float at 12 significant digits, no binary noise;
    no number (NaN, where ``--json`` has null) is an empty cell."""
    if isinstance(value, float) and math.isnan(value):
        return ""
    return repr(tidy_float(value) if isinstance(value, float) else value)


def csv_text(table: Table) -> str:
    """One header row, then the rows with the exact values: ns columns in nanoseconds
    (``_ns``), ``value`` columns in their unit (``_ms`` …), fractions as fractions; an
    Estimate's interval, resolution and interval method (``binomial``, ``block``,
    ``binomial-counts``: stats/quantile_ci.py) beside. An unresolved level's value is
    empty (its ``_resolved`` is ``false``; the lower end of its interval is its bound)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    headers: list[str] = []
    for c in table.columns:
        name = c.header.replace(" ", "_")
        unit = "ns" if c.kind == "ns" else c.unit if c.kind == "value" else ""
        headers.append(f"{name}_{unit}" if unit else name)
        if c.interval:
            headers += [f"{name}_ci_low_ns", f"{name}_ci_high_ns", f"{name}_resolved", f"{name}_ci_method"]
        elif c.resolved:
            headers.append(f"{name}_resolved")
    w.writerow(headers)
    for row in table.rows:
        cells: list[str] = []
        for c, cell in zip(table.columns, row, strict=True):
            value = _value_of(cell)
            if isinstance(cell, Estimate) and not cell.resolved:
                value = math.nan  # no value: the level is not resolved (its bound: ci_low)
            cells.append("" if cell is None else (_exact(value) if value is not None else str(cell)))
            if c.resolved and not c.interval:
                cells.append(str(cell.resolved).lower() if isinstance(cell, Estimate) else "")
            if c.interval:
                e = cell if isinstance(cell, Estimate) else None
                cells += [
                    "" if e is None or e.ci_low is None else _exact(e.ci_low),
                    "" if e is None or e.ci_high is None else _exact(e.ci_high),
                    "" if e is None else str(e.resolved).lower(),
                    "" if e is None or e.method is None else e.method,
                ]
        w.writerow(cells)
    return out.getvalue()


# --- LaTeX ---

_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "×": r"$\times$",
    "µ": r"\textmu{}",
    "σ": r"$\sigma$",
    "—": "---",
    "–": "--",
    "†": r"\textsuperscript{\dag}",
    "±": r"$\pm$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
}


def latex_escape(text: str) -> str:
    """``text`` safe in LaTeX's text mode (the few non-ASCII characters jitterlab writes
    mapped to commands; any other non-ASCII character becomes ``?``)."""
    out = []
    for ch in text:
        if ch in _LATEX_ESCAPES:
            out.append(_LATEX_ESCAPES[ch])
        elif ord(ch) < 128:
            out.append(ch)
        else:
            out.append("?")
    return "".join(out)


def _dcolumn(strings: Sequence[str]) -> str:
    """dcolumn's ``D{.}{.}{i.d}`` for numbers written as ``strings`` (text cells such as
    "≥ x" and "not resolved" are centred apart)."""
    integer, decimals = 1, 0
    for s in strings:
        if not _is_number(s):
            continue
        whole, _, frac = s.partition(".")
        integer, decimals = max(integer, len(whole)), max(decimals, len(frac))
    return f"D{{.}}{{.}}{{{integer}.{decimals}}}"


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _centred(text: str) -> str:
    return r"\multicolumn{1}{c}{" + text + "}"


def latex(table: Table) -> str:
    """A ``table`` environment: booktabs, ``D`` columns, the unit in each header, the
    notes below; input it from a document that loads booktabs, dcolumn and graphicx."""
    specs: list[str] = []
    headers: list[str] = []
    body: list[list[str]] = [[] for _ in table.rows]
    for j, c in enumerate(table.columns):
        if c.kind == "text":
            specs.append("l")
            headers.append(latex_escape(c.header))
            for i, row in enumerate(table.rows):
                body[i].append(latex_escape(_text_cell(table, c, row[j])))
        else:
            strings = [_text_cell(table, c, row[j]) for row in table.rows]
            specs.append(_dcolumn(strings))
            headers.append(_centred(latex_escape(header_with_unit(table, c))))
            for i, s in enumerate(strings):
                body[i].append(s if _is_number(s) else _centred(latex_escape(s)))
        if c.interval:
            specs.append("c")
            headers.append(rf"95\,\% CI ({latex_escape(table.unit)})")
            for i, row in enumerate(table.rows):
                body[i].append(latex_escape(interval_text(table, c, row[j])))
    lines = [
        r"\begin{table*}[htbp]" if len(specs) > 7 else r"\begin{table}[htbp]",
        r"\centering\small",
        r"\caption{" + latex_escape(table.caption) + "}",
        r"\label{tab:jitterlab-" + table.name + "}",
        r"\resizebox{\linewidth}{!}{%" if len(specs) > 7 else "{%",
        r"\begin{tabular}{" + "".join(specs) + "}",
        r"\toprule",
        " & ".join(headers) + r" \\",
        r"\midrule",
        *[" & ".join(cells) + r" \\" for cells in body],
        r"\bottomrule",
        r"\end{tabular}}",
    ]
    for note in table.notes:
        lines.append(r"\par\smallskip\footnotesize " + latex_escape(note))
    lines.append(r"\end{table*}" if len(specs) > 7 else r"\end{table}")
    return "\n".join(lines) + "\n"

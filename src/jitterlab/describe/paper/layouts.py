"""The paper's tables, laid out from :class:`jitterlab.describe.paper.build.PaperData`.

* **Table 1** (Stauffert et al. 2016, Table 1, one row per technique × pairs × policy):
  n, median, mean, max and the chosen percentiles, each percentile with its interval.
* **Collectors** (ibid., Tables 2–3): technique × pairs, collector, scheduler: n, max,
  mean, median; only when the runs cover several collectors.
* **Comparison**: each like-with-like comparison's rows as ``compare --json`` has them.
* **Replication Tables 3–4** (seed 003 §7.3): the rows ``describe/replication.py`` gives the
  report and ``repl bench``, as text cells (the CSV holds the same formatted strings).
* **Histograms**: histogram-only runs (imported HdrHistogram logs), apart: HdrHistogram's
  percentile definition and binomial intervals on the counts, as ``describe --json``.

Runs of different kinds or units go into separate tables (one per group, numbered).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from jitterlab.core.percentiles import percentile_key
from jitterlab.describe.paper.build import PaperData, RunData
from jitterlab.describe.paper.tables import UNRESOLVED_NOTE, Column, Estimate, Table, decimals_for, unit_for
from jitterlab.stats.compare import MAX_ROW
from jitterlab.store import Run


def _level_name(key: str) -> str:
    return "median" if key == "p50" else key


def _ns_values(rows: Sequence[Sequence[object]], columns: Sequence[Column], j: int) -> list[float]:
    out: list[float] = []
    for row in rows:
        cell = row[j]
        value = cell.value if isinstance(cell, Estimate) else cell
        if isinstance(value, (int, float)):
            out.append(float(value))
        if isinstance(cell, Estimate):
            out += [v for v in (cell.ci_low, cell.ci_high) if v is not None]
    return out


def _finish(table: Table) -> Table:
    """Choose the table's unit (from its ns columns) and each column's decimals."""
    ns = [j for j, c in enumerate(table.columns) if c.kind == "ns"]
    values = [v for j in ns for v in _ns_values(table.rows, table.columns, j)]
    table.unit = unit_for([v for j in ns[:1] for v in _ns_values(table.rows, table.columns, j)] or values)
    for j in ns:
        c = table.columns[j]
        decimals = decimals_for(_ns_values(table.rows, table.columns, j), table.scale)
        table.columns[j] = Column(c.header, c.kind, decimals, c.interval)
    if any(isinstance(cell, Estimate) and not cell.resolved for row in table.rows for cell in row):
        table.notes.append(UNRESOLVED_NOTE)
    return table


def groups(data: PaperData) -> dict[str, list[RunData]]:
    out: dict[str, list[RunData]] = {}
    for r in data.runs:
        out.setdefault(r.group, []).append(r)
    return out


def _suffix(index: int) -> str:
    return "" if index == 0 else f"-{index + 1}"


def table1(data: PaperData) -> list[Table]:
    tables = []
    for i, (group, members) in enumerate(groups(data).items()):
        keys = ["p50", *[percentile_key(p) for p in data.levels if p not in (50.0, 100.0)]]
        columns = [
            Column("run", "text"),
            Column("technique", "text"),
            Column("pairs", "text"),
            Column("policy", "text"),
            Column("n", "count"),
            *[Column(_level_name(k), "ns", interval=True) for k in keys[:1]],
            Column("mean", "ns"),
            Column("max", "ns"),
            *[Column(_level_name(k), "ns", interval=True) for k in keys[1:]],
        ]
        rows: list[list[object]] = []
        for r in members:
            c = r.run.config
            runtime = str(c.get("runtime", "native"))
            technique = r.run.technique_label if runtime == "native" else f"{runtime}/{r.run.technique_label}"
            rows.append(
                [
                    f"#{r.number}",
                    technique,
                    str(c.get("pairs", "—")),
                    r.run.policy_label,
                    r.summary.count,
                    r.levels["p50"],
                    r.summary.mean,
                    r.summary.max,
                    *[r.levels[k] for k in keys[1:]],
                ]
            )
        caption = (
            "Latency per technique, pairs and scheduling policy (layout of Stauffert et al. 2016, "
            "Table 1): n samples, type-7 percentiles with their 95 % intervals (binomial order statistics, "
            "or batch means over time blocks where the samples are dependent; the CSV names each)"
        )
        if len(groups(data)) > 1:
            caption += f"; runs of kind {group}"
        tables.append(_finish(Table(f"table1{_suffix(i)}", caption, columns, rows)))  # type: ignore[arg-type]
    return tables


def collectors(data: PaperData) -> list[Table]:
    """Tables 2–3 of the seed when the runs cover two or more collectors."""
    with_gc = [r for r in data.runs if r.run.config.get("gc")]
    if len({r.run.config["gc"] for r in with_gc}) < 2:
        return []
    cells: dict[tuple[str, str, str], RunData] = {}
    for r in with_gc:
        c = r.run.config
        what = str(c.get("technique", "?")) + (f"/{c['variant']}" if c.get("variant") else "")
        cells[(f"{what} ×{c.get('pairs', '?')}", str(c["gc"]), r.run.policy_label)] = r
    rows: list[list[object]] = []
    shown: set[str] = set()
    for (group, gc, policy), r in sorted(cells.items()):
        rows.append(
            [
                group if group not in shown else "",
                gc,
                policy,
                r.summary.count,
                r.summary.max,
                r.summary.mean,
                r.levels["p50"],
            ]
        )
        shown.add(group)
    columns = [
        Column("technique", "text"),
        Column("GC", "text"),
        Column("scheduler", "text"),
        Column("n", "count"),
        Column("max", "ns"),
        Column("mean", "ns"),
        Column("median", "ns", interval=True),
    ]
    caption = "Garbage collector × scheduler (layout of Stauffert et al. 2016, Tables 2-3)"
    return [_finish(Table("collectors", caption, columns, rows))]  # type: ignore[arg-type]


def comparison(data: PaperData) -> list[Table]:
    if not data.comparisons:
        return []
    confidence = data.comparisons[0].result.confidence
    columns = [
        Column("A", "text"),
        Column("B", "text"),
        Column("level", "text"),
        Column("A value", "ns"),
        Column("B value", "ns"),
        Column("change", "percent", 1),
        Column("CI low", "percent", 1),
        Column("CI high", "percent", 1),
        Column("verdict", "text"),
    ]
    rows: list[list[object]] = []
    for rc in data.comparisons:
        name_a, name_b = data.comparison_names(rc)
        for d in rc.result.percentiles:
            is_max = d.percentile == MAX_ROW
            rows.append(
                [
                    name_a,
                    name_b,
                    "max" if is_max else f"p{d.percentile:g}",
                    d.a,
                    d.b,
                    d.relative,
                    None if is_max else d.ci_low,
                    None if is_max else d.ci_high,
                    d.verdict,
                ]
            )
    noise = data.comparisons[0].result.noise_threshold
    caption = (
        f"B against A, like with like: change of each percentile with its {confidence:.0%} interval "
        f"and the verdict (noise threshold ±{noise:.0%}); as 'jitterlab compare A B' gives them"
    )
    return [_finish(Table("comparison", caption, columns, rows))]  # type: ignore[arg-type]


def histograms(data: PaperData) -> list[Table]:
    """Histogram-only runs in a table of their own: n, median, mean, max and the chosen
    levels, each value HdrHistogram's (getValueAtPercentile) with the binomial interval on
    the counts; an unresolved level is "—" with its lower bound only."""
    if not data.histograms:
        return []
    keys = ["p50", *[percentile_key(p) for p in data.levels if p not in (50.0, 100.0)]]
    columns = [
        Column("run", "text"),
        Column("source", "text"),
        Column("n", "count"),
        Column(_level_name("p50"), "ns", interval=True),
        Column("mean", "ns"),
        Column("max", "ns"),
        *[Column(_level_name(k), "ns", interval=True) for k in keys[1:]],
    ]
    rows: list[list[object]] = []
    for h in data.histograms:
        cells: dict[str, object] = {}
        for k in keys:
            q = h.levels[k]
            cells[k] = (
                Estimate(q.value, q.ci_low, q.ci_high, q.resolved, q.method)
                if q.value is not None
                else Estimate(math.nan, q.ci_low, None, False, q.method)
            )
        s = h.summary
        source = str(h.run.config.get("source_format") or h.run.config.get("runtime", "import"))
        rows.append(
            [f"#{h.number}", source, int(s["count"]), cells["p50"], s.get("mean"), s.get("max")]
            + [cells[k] for k in keys[1:]]
        )
    caption = (
        "Histogram-only runs (imported HdrHistogram logs), apart from the sample runs: HdrHistogram's "
        "percentile definition (the highest value equivalent to the bucket at the rank), 95 % binomial "
        "intervals on the counts (no order kept: no block method); not comparable digit for digit with "
        "the type-7 tables"
    )
    return [_finish(Table("histograms", caption, columns, rows))]  # type: ignore[arg-type]


def _unique(headers: Sequence[str]) -> list[str]:
    """Headers made unique for the CSV (a repeated ``p50`` becomes ``p50 (2)``)."""
    seen: dict[str, int] = {}
    out = []
    for h in headers:
        seen[h] = seen.get(h, 0) + 1
        out.append(h if seen[h] == 1 else f"{h} ({seen[h]})")
    return out


def text_table(name: str, caption: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> Table:
    """A table whose rows another module already formats (text cells, written as they are)."""
    columns = [Column(h, "text") for h in _unique(headers)]
    return Table(name, caption, columns, [[str(c) for c in row] for row in rows])


def replication(data: PaperData) -> list[Table]:
    """Seed 003's Tables 3–4 of the replication runs, as the report and ``repl bench`` give them."""
    from jitterlab.describe.replication import replication_rows, table3_layout, table4_layout

    runs = [Run(r.run.path, r.run.meta) for r in data.runs]  # read again: each row reads its run
    rows = replication_rows(runs)
    if not rows:
        return []
    tables = []
    for name, layout, caption in (
        ("replication-table3", table3_layout, "Replication scaling (seed 003 §7.3, Table 3): update "
         "interval and latency per number of clients N (ms), with the seed's values beside"),
        ("replication-table4", table4_layout, "Replication scaling (seed 003 §7.3, Table 4): server "
         "frame rate, ping and data rates per N, measured, predicted and the seed's"),
    ):  # fmt: skip
        headers, body = layout(rows)
        tables.append(text_table(name, caption, headers, body))
    return tables


def all_tables(data: PaperData) -> list[Table]:
    return [*table1(data), *collectors(data), *comparison(data), *replication(data), *histograms(data)]

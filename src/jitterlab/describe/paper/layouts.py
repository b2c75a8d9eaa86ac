"""The paper's tables, laid out from :class:`jitterlab.describe.paper.build.PaperData`.

* **Table 1** (Stauffert et al. 2016, Table 1, one row per technique × pairs × policy):
  n, median, mean, max and the chosen percentiles, each percentile with its interval.
* **Collectors** (ibid., Tables 2–3): technique × pairs, collector, scheduler: n, max,
  mean, median; only when the runs cover several collectors.
* **Comparison**: each like-with-like comparison's rows as ``compare --json`` has them.
* **Replication Tables 3–4** (seed 003 §7.3): the rows ``describe/replication.py`` gives the
  report and ``repl bench``, as numbers (ms, fps, KB/s; the unit in each header).
* **net** (seed 004 Tables 3–6): ping round trip, throughput and stream latency, open loop,
  frames per second of distributed rendering.
* **MTP**: each run's estimators and analysis windows, and describe's time windows.
* **Monitor trials**: each trial's screening against the run's baseline (``monitor trials``).
* **Histograms**: histogram-only runs (imported HdrHistogram logs), apart: HdrHistogram's
  percentile definition and binomial intervals on the counts, as ``describe --json``.

Runs of different kinds or units go into separate tables (one per group, numbered).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from jitterlab.core.percentiles import is_resolved, percentile_key
from jitterlab.describe.paper.build import PaperData, RunData
from jitterlab.describe.paper.tables import UNRESOLVED_NOTE, Column, Estimate, Table, decimals_for, unit_for
from jitterlab.stats.compare import MAX_ROW
from jitterlab.stats.summary import Summary
from jitterlab.store import Run


def _level_name(key: str) -> str:
    return "median" if key == "p50" else key


def _level_keys(data: PaperData) -> list[str]:
    """The median's key, then the chosen levels' (``p99``, …): the levels a table shows."""
    return ["p50", *[percentile_key(p) for p in data.levels if p not in (50.0, 100.0)]]


def _ns_values(rows: Sequence[Sequence[object]], j: int) -> list[float]:
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
    """Choose the table's unit (from its first ns column, or all of them where that one is
    empty) and each ns column's decimals (from its own values)."""
    ns = {j: _ns_values(table.rows, j) for j, c in enumerate(table.columns) if c.kind == "ns"}
    first = next(iter(ns.values()), [])
    table.unit = unit_for(first or [v for values in ns.values() for v in values])
    for j, values in ns.items():
        table.columns[j] = dataclasses.replace(table.columns[j], decimals=decimals_for(values, table.scale))
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
    by_group = groups(data)
    keys = _level_keys(data)
    for i, (group, members) in enumerate(by_group.items()):
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
        if len(by_group) > 1:
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
    keys = _level_keys(data)
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


def _ms_levels(summary: Summary) -> list[Estimate]:
    """p50, p99 and p99.9 of a summary in ms, each flagged by the one rule (an unresolved
    level prints as "not resolved", its CSV cell empty)."""
    return [
        Estimate(v, resolved=not summary.count or is_resolved(summary.count, level))
        for v, level in ((summary.p50, 50.0), (summary.p99, 99.0), (summary.p99_9, 99.9))
    ]


def _seed(values: tuple[float, ...] | None, k: int) -> float | None:
    return None if values is None else values[k]


def _kb(v: float | None) -> float | None:
    return None if v is None else v / 1000


def replication(data: PaperData) -> list[Table]:
    """Seed 003's Tables 3–4 of the replication runs (the rows ``describe/replication.py``
    gives the report and ``repl bench``, as numbers: ms, fps and KB/s, each column's unit in
    its header; the CSV holds them exact, as ``describe --json``'s replication block)."""
    from jitterlab.describe.replication import SEED_TABLE3, SEED_TABLE4, replication_rows

    runs = [Run(r.run.path, r.run.meta) for r in data.runs]  # read again: each row reads its run
    rows = replication_rows(runs)
    if not rows:
        return []

    def ms(header: str, decimals: int = 2, resolved: bool = False) -> Column:
        return Column(header, "value", decimals, unit="ms", resolved=resolved)

    def kb(header: str) -> Column:
        return Column(header, "value", 1, unit="KB/s")

    def summary_columns(what: str) -> list[Column]:
        """mean, SD, p50, p99 and p99.9 of the interval or the latency (the cells of
        ``summary_cells``)."""
        return [
            ms(f"{what} mean", 1),
            ms(f"{what} SD"),
            *[ms(f"{what} {level}", resolved=True) for level in ("p50", "p99", "p99.9")],
        ]

    def summary_cells(summary: Summary) -> list[object]:
        return [
            summary.mean if summary.count else None,
            summary.std if summary.count else None,
            *_ms_levels(summary),
        ]

    def shares(values: tuple[float, ...]) -> str:
        return "/".join(f"{100 * v:.1f}" for v in values[:4]) + ("/…" if len(values) > 4 else "") or "—"

    t3_columns = [
        Column("N", "count"),
        *summary_columns("interval"),
        Column("interval categories %", "text"),
        ms("seed interval mean", 0),
        ms("seed interval SD"),
        *summary_columns("latency"),
        Column("latency categories %", "text"),
        ms("seed movement begin mean", 0),
        ms("seed movement begin SD"),
    ]
    t3_rows: list[list[object]] = []
    t4_rows: list[list[object]] = []
    for r in rows:
        seed3, seed4 = SEED_TABLE3.get(r.clients), SEED_TABLE4.get(r.clients)
        t3_rows.append(
            [
                r.clients,
                *summary_cells(r.interval_ms),
                shares(r.interval_categories),
                _seed(seed3, 2),
                _seed(seed3, 3),
                *summary_cells(r.latency_ms),
                shares(r.latency_categories),
                _seed(seed3, 0),
                _seed(seed3, 1),
            ]
        )
        rt, pr, ping = r.rates, r.predicted, r.ping_ms
        lag = Estimate(r.lag_p99_ms, resolved=not r.lag_count or is_resolved(r.lag_count, 99.0))
        t4_rows.append(
            [
                r.clients,
                r.server_fps,
                _seed(seed4, 0),
                ping.mean if ping.count else None,
                ping.std if ping.count else None,
                Estimate(ping.p99, resolved=is_resolved(ping.count, 99.0)) if ping.count else None,
                _seed(seed4, 2),
                _kb(rt.get("client_out_avg")),
                _seed(seed4, 3),
                _kb(rt.get("server_in")),
                _kb(rt.get("server_in_wire")),
                _kb(pr.get("server_in")),
                _seed(seed4, 4),
                _kb(rt.get("server_out")),
                _kb(pr.get("server_out_table1")),
                _kb(pr.get("server_out_poses")),
                _seed(seed4, 5),
                _kb(rt.get("client_in_avg")),
                _seed(seed4, 6),
                lag if r.lag_count else None,
                "yes" if r.generator_limited else "no",
            ]
        )
    t4_columns = [
        Column("N", "count"),
        Column("server fps", "value", 1, unit="1/s"),
        Column("seed server fps", "value", 0, unit="1/s"),
        ms("ping mean", 1),
        ms("ping SD"),
        ms("ping p99", 1, resolved=True),
        ms("seed ping", 0),
        kb("client out"),
        kb("seed client out"),
        kb("server in"),
        kb("server in wire"),
        kb("server in Table 1"),
        kb("seed server in"),
        kb("server out"),
        kb("server out Table 1"),
        kb("server out N(N-1)BHz"),
        kb("seed server out"),
        kb("client in"),
        kb("seed client in"),
        ms("generator lag p99", 2, resolved=True),
        Column("generator limited", "text"),
    ]
    return [
        Table(
            "replication-table3",
            "Replication scaling (seed 003 §7.3, Table 3): update interval and latency per number of "
            "clients N (ms), with the seed's values beside (category shares: main/1/2/3 %)",
            t3_columns,
            t3_rows,  # type: ignore[arg-type]
            notes=[NOT_RESOLVED_LINE],
        ),
        Table(
            "replication-table4",
            "Replication scaling (seed 003 §7.3, Table 4): server frame rate, ping and data rates per N "
            "(KB/s = 1,000 bytes/s), measured, predicted (Table 1, N(N-1)BHz) and the seed's",
            t4_columns,
            t4_rows,  # type: ignore[arg-type]
            notes=[NOT_RESOLVED_LINE],
        ),
    ]


NOT_RESOLVED_LINE = (
    "not resolved: fewer than 10 samples are expected beyond the level (docs/statistics.md); "
    "the CSV leaves its value empty and says false in its _resolved column"
)


def all_tables(data: PaperData) -> list[Table]:
    return [
        *table1(data),
        *collectors(data),
        *comparison(data),
        *replication(data),
        *network(data),
        *mtp(data),
        *monitor(data),
        *histograms(data),
    ]


# --- other kinds of run: their own tables -----------------------------------------------


def _levels_of(r: RunData, data: PaperData) -> list[Estimate]:
    """The run's median and chosen levels (describe --json's values and intervals)."""
    return [r.levels[k] for k in _level_keys(data)]


def _level_columns(data: PaperData) -> list[Column]:
    return [Column(_level_name(k), "ns", interval=True) for k in _level_keys(data)]


def _block(r: RunData, name: str) -> dict[str, Any]:
    """The run's ``mtp`` or ``net`` block of run.json ({} where it has none)."""
    block = r.run.meta.get(name)
    return block if isinstance(block, dict) else {}


def mtp(data: PaperData) -> list[Table]:
    """Motion-to-photon runs: each run's estimators (a video's cross-correlation headline and
    the two sine fits, as ``mtp analyze --json`` and the run's ``mtp`` block give them, in
    ms) with its trust and windows; and the time windows ``describe`` prints for it."""
    runs = [r for r in data.runs if r.run.config.get("runtime") == "mtp"]
    if not runs:
        return []
    rows: list[list[object]] = []
    for r in runs:
        block = _block(r, "mtp")
        method = str(block.get("method", r.run.config.get("source_format", "?")))
        estimators = block.get("estimators_ms") or {}
        windows = block.get("windows") or {}
        common = [
            windows.get("count"),
            windows.get("window_s"),
            windows.get("mean_ms"),
            windows.get("sd_ms"),
        ]
        if estimators:
            for name, value in estimators.items():
                headline = " (headline)" if name == block.get("headline") else ""
                rows.append(
                    [
                        f"#{r.number}",
                        method,
                        f"{name}{headline}",
                        value,
                        str(block.get("trust", "—")),
                        *common,
                    ]
                )
        else:  # a frame log: one latency per frame, no estimator; its median as describe gives it
            rows.append([f"#{r.number}", method, "median of the frames", r.summary.p50 / 1e6, "—", *common])
    columns = [
        Column("run", "text"),
        Column("method", "text"),
        Column("estimator", "text"),
        Column("latency", "value", 2, unit="ms"),
        Column("trust", "text"),
        Column("windows", "count"),
        Column("window", "value", 2, unit="s"),
        Column("windows mean", "value", 2, unit="ms"),
        Column("windows SD", "value", 3, unit="ms"),
    ]
    caption = (
        "Motion-to-photon runs: each estimator's latency (a video's headline is the overlap-normalised "
        "cross-correlation; docs/mtp.md) and the analysis windows' mean and SD, as the run's mtp block "
        "and 'jitterlab mtp' give them; a frame log's median of its per-frame latencies"
    )
    tables = [Table("mtp", caption, columns, rows)]  # type: ignore[arg-type]
    window_rows: list[list[object]] = []
    for r in runs:
        w = r.windows
        if w is None:
            continue
        for i in range(w.start_ns.size):
            count = int(w.count[i])
            window_rows.append(
                [
                    f"#{r.number}",
                    float(w.start_ns[i]) / 1e9,
                    count,
                    float(w.mean[i]),
                    Estimate(float(w.p50[i]), resolved=is_resolved(count, 50.0)),
                    Estimate(float(w.p99[i]), resolved=is_resolved(count, 99.0)),
                    float(w.max[i]),
                ]
            )
    if window_rows:
        width = next(r.windows.width_ns for r in runs if r.windows is not None) / 1e9
        window_columns = [
            Column("run", "text"),
            Column("start", "value", 0, unit="s"),
            Column("n", "count"),
            Column("mean", "ns"),
            Column("median", "ns", resolved=True),
            Column("p99", "ns", resolved=True),
            Column("max", "ns"),
        ]
        caption = (
            f"Motion-to-photon runs over time: windows of {width:g} s by send time, as 'jitterlab describe' "
            "prints them (a window's p99 is not resolved below 1,000 samples)"
        )
        tables.append(_finish(Table("mtp-windows", caption, window_columns, window_rows)))  # type: ignore[arg-type]
    return tables


def network(data: PaperData) -> list[Table]:
    """Seed 004's tables of ``net`` runs (describe/network.py gives them to describe and
    report): Table 6 (ping round trip), Table 5 (throughput), the stream's one-way latency,
    the open loop (corrected beside uncorrected) and Tables 3–4 (frames per second of
    distributed rendering); latencies from each run's description (describe --json)."""
    from jitterlab.describe.network import SEED_FPS, SEED_PING_S, SEED_THROUGHPUT, uncorrected_summary

    runs = [r for r in data.runs if "net" in r.run.meta]
    by = {
        s: [r for r in runs if r.run.config.get("scenario") == s]
        for s in ("ping", "stream", "open-loop", "frame-sync")
    }
    levels = _level_columns(data)
    tables: list[Table] = []

    def where(r: RunData) -> str:
        return "intra-node" if r.run.config.get("intra_node") else "inter-node"

    def lost(r: RunData) -> int:
        net = _block(r, "net")
        return int(net.get("measured_lost", net.get("lost", 0)))

    if by["ping"]:
        rows = [
            [
                f"#{r.number}",
                str(r.run.config.get("transport")),
                r.summary.count,
                r.summary.mean,
                r.summary.std,
                *_levels_of(r, data),
                r.summary.max,
                lost(r),
            ]
            for r in by["ping"]
        ]
        columns = [
            Column("run", "text"),
            Column("transport", "text"),
            Column("pings", "count"),
            Column("mean", "ns"),
            Column("SD", "ns"),
            *levels,
            Column("max", "ns"),
            Column("lost", "count"),
        ]
        platform, scala, akka = SEED_PING_S
        caption = (
            "Ping round trip per transport (layout of seed 004, Table 6; the seed gives means only: "
            f"platform {platform} s, Scala {scala} s, Akka {akka} s)"
        )
        tables.append(_finish(Table("net-table6", caption, columns, rows)))  # type: ignore[arg-type]
    if by["stream"]:
        rows = [
            [
                f"#{r.number}",
                str(r.run.config.get("transport")),
                where(r),
                _block(r, "net").get("msg_per_s"),
                r.summary.count,
                *_levels_of(r, data),
                r.summary.max,
                int(_block(r, "net").get("lost", 0)),
            ]
            for r in by["stream"]
        ]
        columns = [
            Column("run", "text"),
            Column("transport", "text"),
            Column("where", "text"),
            Column("throughput", "value", 0, unit="msg/s"),
            Column("received", "count"),
            *levels,
            Column("max", "ns"),
            Column("lost", "count"),
        ]
        seed = "; ".join(
            f"{w}: platform {a}, Scala {b}, Akka {c}" for w, (a, b, c) in SEED_THROUGHPUT.items()
        )
        caption = (
            "Throughput (messages/s, median of the steps; layout of seed 004, Table 5) and the stream's "
            f"one-way latency at the receiver; the seed's messages/s: {seed}"
        )
        tables.append(_finish(Table("net-table5", caption, columns, rows)))  # type: ignore[arg-type]
    if by["open-loop"]:
        rows = []
        for r in by["open-loop"]:
            raw = uncorrected_summary(r.run)
            net = _block(r, "net")
            rows.append(
                [
                    f"#{r.number}",
                    str(r.run.config.get("transport")),
                    r.run.config.get("rate_hz"),
                    *_levels_of(r, data),
                    Estimate(raw.p99, resolved=is_resolved(raw.count, 99.0)),
                    Estimate(raw.p99_9, resolved=is_resolved(raw.count, 99.9)),
                    net.get("late_share"),
                    net.get("max_lag_ns"),
                    lost(r),
                ]
            )
        columns = [
            Column("run", "text"),
            Column("transport", "text"),
            Column("rate", "value", 0, unit="1/s"),
            *levels,
            Column("uncorrected p99", "ns", resolved=True),
            Column("uncorrected p99.9", "ns", resolved=True),
            Column("late sends", "percent", 2),
            Column("max lag", "ns"),
            Column("lost", "count"),
        ]
        caption = (
            "Open loop: latency from the intended send time (coordinated omission corrected; its levels with "
            "intervals) beside latency from the actual send time (uncorrected)"
        )
        tables.append(_finish(Table("net-open-loop", caption, columns, rows)))  # type: ignore[arg-type]
    if by["frame-sync"]:
        rows = []
        for r in by["frame-sync"]:
            net = _block(r, "net")
            skew = net.get("skew") or {}
            frames = skew.get("frames")
            p99 = skew.get("frame_p99_ns")
            rows.append(
                [
                    f"#{r.number}",
                    net.get("render_nodes"),
                    where(r),
                    "sync" if r.run.config.get("sync") else "no sync",
                    str(r.run.config.get("impaired") or "—"),
                    net.get("fps"),
                    None
                    if p99 is None
                    else Estimate(float(p99), resolved=frames is None or is_resolved(int(frames), 99.0)),
                ]
            )
        columns = [
            Column("run", "text"),
            Column("render nodes", "count"),
            Column("where", "text"),
            Column("sync", "text"),
            Column("impairment", "text"),
            Column("frame rate", "value", 1, unit="fps"),
            Column("skew p99", "ns", resolved=True),
        ]
        seed = ", ".join(
            f"{'sync' if s else 'no sync'} {a} fps intra-node, {b} inter-node"
            for s, (a, b) in SEED_FPS.items()
        )
        caption = (
            "Frames per second of distributed rendering at 60 fps (layout of seed 004, Tables 3 (2 render "
            f"nodes) and 4 (9 render nodes)); the seed: {seed}"
        )
        tables.append(_finish(Table("net-tables3-4", caption, columns, rows)))  # type: ignore[arg-type]
    return tables


def monitor(data: PaperData) -> list[Table]:
    """Monitor runs: each trial with its screening against the run's baseline, the rows of
    ``monitor trials --json`` (``data.trials``: the command reads them through monitor/
    trials.py); a run served without a baseline lists its trials and their sample counts,
    not screened."""
    runs = [r for r in data.runs if isinstance(r.run.meta.get("monitor"), dict)]
    rows: list[list[object]] = []
    unscreened = []
    for r in runs:
        block = r.run.meta["monitor"]
        if not block.get("trials"):
            continue
        screened = data.trials.get(r.run.id)
        if screened is not None:
            for t in screened:
                rows.append(
                    [
                        f"#{r.number}",
                        str(t["trial"]),
                        str(t["writer"]),
                        t["samples"],
                        t["outliers"],
                        t["outlier_share"],
                        "/".join(str(c) for c in t["category_counts"]),
                        t["max_ns"],
                        t["p_value"],
                        "contaminated" if t["contaminated"] else "clean",
                        t["reason"],
                    ]
                )
        else:
            why = "served without a baseline" if not block.get("thresholds_ns") else "trials not read"
            if not block.get("thresholds_ns"):
                unscreened.append(f"#{r.number}")
            for t in block["trials"]:
                rows.append(
                    [f"#{r.number}", str(t["tag"]), str(t.get("writer", "")), int(t["samples"]), None, None,
                     "—", None, None, "not screened", why]
                )  # fmt: skip
    if not rows:
        return []
    columns = [
        Column("run", "text"),
        Column("trial", "text"),
        Column("writer", "text"),
        Column("n", "count"),
        Column("outliers", "count"),
        Column("outlier share", "percent", 2),
        Column("by category", "text"),
        Column("max", "ns"),
        Column("p", "value", 4),
        Column("verdict", "text"),
        Column("reason", "text"),
    ]
    caption = (
        "Monitor trials with their screening against the run's baseline (the stacked test's thresholds, "
        "outlier share and top cut of the baseline; a one-sided binomial test of the share), as "
        "'jitterlab monitor trials' gives them"
    )
    table = Table("monitor-trials", caption, columns, rows)  # type: ignore[arg-type]
    if unscreened:
        table.notes.append(
            f"run(s) {', '.join(unscreened)} were served without --baseline: their trials are not screened"
        )
    return [_finish(table)]

"""Replication scaling (seed 003 §7.3) described: the seed's Tables 3–4 laid out from runs
that carry a ``repl`` block, Table 1's predicted data rates beside the measured ones, the
seed's published figures beside both, and where the knee is and why (docs/replication.md).

Update latency is the samples (pose sent by one client → read by an observer); the update
interval is the time between consecutive updates of one avatar at one observer, the
quantity the seed's Table 3 calls "update rate".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from jitterlab.core.html import esc, figure_img, html_table
from jitterlab.core.palette import BLUE, ORANGE, VERMILLION
from jitterlab.core.percentiles import is_resolved
from jitterlab.core.render import render
from jitterlab.stats import stacked_z_test, summarize
from jitterlab.stats.intervals import stream_intervals
from jitterlab.stats.summary import Summary
from jitterlab.store import Run

# Latoschik et al. 2019 (seed 003 §7.3), Table 3: (movement begin M, SD, update interval M, SD) in ms.
SEED_TABLE3: dict[int, tuple[float, float, float, float]] = {
    2: (8, 3.65, 18, 6.26),
    5: (7, 2.81, 21, 8.94),
    10: (8, 2.64, 19, 6.99),
    25: (8, 2.64, 30, 6.67),
    50: (12, 7.3, 40, 16.60),
    75: (8, 1.96, 57, 13.22),
    100: (8, 0, 95, 14.82),
    125: (10, 1.3, 158, 10.65),
}
# Table 4: server fps, VR client fps, ping ms, KB/s: client out avg, server in, server out, client in avg.
SEED_TABLE4: dict[int, tuple[float, float, float, float, float, float, float]] = {
    2: (120, 90, 9, 11.5, 23.0, 21.5, 10.8),
    5: (120, 90, 9, 11.0, 54.5, 146.9, 29.4),
    10: (120, 90, 11, 10.8, 107.5, 571.8, 57.3),
    25: (120, 90, 13, 11.6, 288.7, 3653.7, 143.1),
    50: (40, 90, 35, 10.5, 534.7, 7081.1, 136.4),
    75: (17, 60, 65, 6.4, 474.8, 9377.3, 124.4),
    100: (11, 60, 117, 4.2, 1038.8, 10163.3, 98.7),
    125: (6, 35, 182, 2.8, 342.7, 11386.2, 80.9),
}
SEED_SETUP = (
    "seed: UE4.20 on Windows 10, server and 2 VR clients on i7-8700K hosts, load clients on 32 hosts (up to 4 "
    "per host), 1 Gbit Ethernet; Table 3 by counting frames of a 240 Hz video of 60 Hz monitors, Table 4 from "
    "UE4's Stat Net (with compression). Here: {here}, server and clients on their own vCPU, no rendering "
    "(so no client fps), UDP payload bytes without compression."
)


def setup_line(rows: Sequence[ReplRow]) -> str:
    """The seed's setup and ours: loopback, or namespaces (through a router, impaired)."""
    config = rows[0].run.config
    nodes = int(config.get("nodes", 2))
    if config.get("placement") == "hosts":
        clock = rows[0].run.meta.get("clock", {}).get("mode", "unsynchronised")
        return SEED_SETUP.format(
            here=f"{nodes} hosts over ssh (the server on one, the clients split over {nodes - 1}; clocks {clock})"
        )
    if config.get("placement") != "netns":
        return SEED_SETUP.format(here="one host, loopback")
    here = (
        f"one host, {nodes} network namespaces (the server on one, the clients split over {nodes - 1})"
        + (" joined through a router" if config.get("router") else " joined by veth pairs")
        + (f", impaired {config['impaired']}" if config.get("impaired") else "")
    )
    return SEED_SETUP.format(here=here)


TICK_SHORTFALL = 0.98
# /proc/stat's per-CPU columns (proc(5)), as the native tool writes them (native/repl/cpu_stat.hpp)
PROC_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass(frozen=True)
class CpuAttribution:
    """Where the server's CPU time went in the window (issue 27 item 9; docs/replication.md).

    ``thread_user``/``thread_system``: the server thread's own user and system time as shares
    of one core (getrusage; system includes the softirq that ran in its context). ``core``:
    each /proc/stat column's share of the time of the CPUs the server ticked on, weighted by
    the share of ticks on each (``cpus``), so other threads on that core count too."""

    thread_user: float
    thread_system: float
    core: dict[str, float]
    cpus: dict[int, float]

    @property
    def kernel(self) -> float:
        """The kernel's share of the core: system calls, softirq and hard interrupts."""
        return self.core["system"] + self.core["softirq"] + self.core["irq"]

    @property
    def user(self) -> float:
        return self.core["user"] + self.core["nice"]

    def text(self) -> str:
        shares = ", ".join(
            f"{self.core[f]:.0%} {f}"
            for f in ("user", "system", "softirq", "irq", "idle", "steal")
            if self.core[f]
        )
        where = "the kernel (system calls and softirq)" if self.kernel > self.user else "user code"
        return (
            f"the server thread ran {self.thread_user:.0%} of a core in user code and {self.thread_system:.0%} "
            f"in the kernel; its core was {shares}: mostly {where}"
        )


def cpu_attribution(repl: dict[str, Any]) -> CpuAttribution | None:
    """The attribution from a run's ``repl.cpu_time`` block; None for runs without one."""
    cpu_time = repl.get("cpu_time")
    if not cpu_time:
        return None
    window = max(int(repl["server"].get("window_ns", 0)), 1)
    server = cpu_time["threads"]["server"]
    ticks = cpu_time.get("server_ticks_on_cpu", [])
    per_cpu = {int(c["cpu"]): c for c in cpu_time.get("proc_stat", {}).get("cpus", [])}
    on = {cpu: n for cpu, n in enumerate(ticks) if n and cpu in per_cpu}
    total = sum(on.values())
    if not total:
        return None
    residency = {cpu: n / total for cpu, n in on.items()}
    core = dict.fromkeys(PROC_STAT_FIELDS, 0.0)
    for cpu, weight in residency.items():
        columns = [int(per_cpu[cpu][f"{f}_ns"]) for f in PROC_STAT_FIELDS]
        whole = max(sum(columns), 1)
        for f, v in zip(PROC_STAT_FIELDS, columns, strict=True):
            core[f] += weight * v / whole
    return CpuAttribution(
        thread_user=server["user_ns"] / window,
        thread_system=server["sys_ns"] / window,
        core=core,
        cpus=residency,
    )


@dataclass(frozen=True)
class ReplRow:
    """One N, described."""

    run: Run
    clients: int
    latency_ms: Summary
    interval_ms: Summary
    latency_categories: tuple[float, ...]  # share of each stacked-z category, main first
    interval_categories: tuple[float, ...]
    server_fps: float
    tick_hz: float
    ping_ms: Summary
    rates: dict[str, float]
    predicted: dict[str, float]
    lag_p99_ms: float
    generator_limited: bool
    lag_count: int  # sends the lag was measured over: whether its p99 is resolved
    busy_share: float
    cpu_share: float
    rcvbuf_errors: int
    send_failures: int
    updates_missing: int
    cpu: CpuAttribution | None = None  # None: a run from before the attribution was recorded


def is_replication_run(run: Run) -> bool:
    return run.config.get("technique") == "repl" and isinstance(run.meta.get("repl"), dict)


def _shares(values: np.ndarray) -> tuple[float, ...]:
    if values.size < 3:
        return ()
    return tuple(c.share for c in stacked_z_test(values).categories if c.index >= 0)


def describe_replication(run: Run) -> ReplRow:
    repl = run.meta["repl"]
    t_recv = run.t_recv_ns
    latency = run.latency_ns
    intervals = stream_intervals(run.pair, t_recv)
    ticks, lag = repl.get("server_ticks", {}), repl.get("generator_lag", {})
    counters = repl.get("udp_counters", {})
    return ReplRow(
        run=run,
        clients=int(run.config["clients"]),
        latency_ms=summarize(latency / 1e6),
        interval_ms=summarize(intervals / 1e6),
        latency_categories=_shares(latency),
        interval_categories=_shares(intervals),
        server_fps=float(ticks.get("ticks_per_s", float("nan"))),
        tick_hz=float(run.config["server_tick_hz"]),
        ping_ms=summarize(np.asarray(repl.get("ping_rtt_ns", []), dtype=np.float64) / 1e6),
        rates=repl.get("rates_bytes_per_s", {}),
        predicted=repl.get("predicted_bytes_per_s", {}),
        lag_p99_ms=float(lag.get("p99_ns", float("nan"))) / 1e6,
        generator_limited=bool(lag.get("limited", False)),
        lag_count=int(lag.get("count", 0)),
        busy_share=float(ticks.get("busy_share", float("nan"))),
        cpu_share=float(ticks.get("cpu_share", float("nan"))),
        rcvbuf_errors=int(counters.get("RcvbufErrors", 0)),
        send_failures=int(repl["server"].get("send_failures", 0))
        + int(repl["clients_fleet"].get("send_failures", 0)),
        updates_missing=int(repl.get("updates_missing", 0)),
        cpu=cpu_attribution(repl),
    )


def replication_rows(runs: Sequence[Run]) -> list[ReplRow]:
    """The replication runs among ``runs``, described, by N."""
    return sorted((describe_replication(r) for r in runs if is_replication_run(r)), key=lambda r: r.clients)


@dataclass(frozen=True)
class Knee:
    clients: int | None  # the first N whose server ticked below its rate; None: no knee
    causes: tuple[str, ...]


def causes_of(row: ReplRow) -> tuple[str, ...]:
    """Why a run's server fell behind, from what was measured beside it."""
    causes = []
    where = f": {row.cpu.text()}" if row.cpu else ""
    if row.busy_share >= 0.9 or row.cpu_share >= 0.9:
        causes.append(
            f"server CPU: the tick loop was busy {row.busy_share:.0%} of the time "
            f"({row.cpu_share:.0%} of a core in CPU time){where}"
        )
    elif row.busy_share >= 0.5:
        causes.append(
            f"server CPU, with the host contended: busy {row.busy_share:.0%}, {row.cpu_share:.0%} of a core{where}"
        )
    if row.generator_limited:
        causes.append(f"generator: p99 send lag {row.lag_p99_ms:.2f} ms > 1 ms")
    if row.rcvbuf_errors or row.send_failures:
        causes.append(
            f"socket drops: {row.rcvbuf_errors} datagrams dropped on full receive buffers (/proc/net/snmp "
            f"RcvbufErrors), {row.send_failures} refused at send"
        )
    return tuple(causes) or ("none of server CPU, generator lag or socket drops stands out",)


def find_knee(rows: Sequence[ReplRow]) -> Knee:
    """The first N (in increasing order) at which the server's ticks per second dropped
    below 98 % of its configured tick rate, and the causes measured at that N."""
    for row in sorted(rows, key=lambda r: r.clients):
        if row.server_fps < TICK_SHORTFALL * row.tick_hz:
            return Knee(row.clients, causes_of(row))
    return Knee(None, ())


def _m_sd(s: Summary) -> str:
    return f"{s.mean:.1f} ({s.std:.2f})" if s.count else "n/a"


def _shares_text(shares: tuple[float, ...]) -> str:
    return (
        "/".join(f"{100 * s:.1f}" for s in shares[:4]) + ("/…" if len(shares) > 4 else "")
        if shares
        else "n/a"
    )


def _kb(v: float | None) -> str:
    return f"{v / 1000:,.1f}" if v is not None else "n/a"


def _seed3(n: int, k: int) -> str:
    row = SEED_TABLE3.get(n)
    return f"{row[k]:g} ({row[k + 1]:.2f})" if row else "–"


def _seed4(n: int, k: int) -> str:
    row = SEED_TABLE4.get(n)
    return f"{row[k]:,g}" if row else "–"


def _p99_text(value_ms: float, count: int, digits: int) -> str:
    """A p99 in ms by the one rule: "n/a" of nothing, "not resolved" where ``count`` values
    do not resolve it (core/percentiles.py ``is_resolved``), else the value."""
    if not count:
        return "n/a"
    return "not resolved" if not is_resolved(count, 99.0) else f"{value_ms:.{digits}f}"


def _tail_ms(s: Summary) -> list[str]:
    """p50, p99 and p99.9 (ms) of a summary, each "not resolved" where its count does not
    resolve the level (core/percentiles.py ``is_resolved``; docs/statistics.md)."""
    levels = ((s.p50, 50.0), (s.p99, 99.0), (s.p99_9, 99.9))
    return ["not resolved" if s.count and not is_resolved(s.count, lv) else f"{v:.2f}" for v, lv in levels]


def table3_layout(rows: Sequence[ReplRow]) -> tuple[list[str], list[list[str]]]:
    headers = [
        "N",
        "update interval M (SD) ms",
        "p50",
        "p99",
        "p99.9",
        "categories %",
        "seed M (SD)",
        "latency M (SD) ms",
        "p50",
        "p99",
        "p99.9",
        "categories %",
        "seed movement begin",
    ]
    body = []
    for r in rows:
        i, lat = r.interval_ms, r.latency_ms
        body.append(
            [
                str(r.clients),
                _m_sd(i),
                *_tail_ms(i),
                _shares_text(r.interval_categories),
                _seed3(r.clients, 2),
                _m_sd(lat),
                *_tail_ms(lat),
                _shares_text(r.latency_categories),
                _seed3(r.clients, 0),
            ]
        )
    return headers, body


def table4_layout(rows: Sequence[ReplRow]) -> tuple[list[str], list[list[str]]]:
    headers = [
        "N",
        "server fps",
        "seed",
        "ping M (SD) ms",
        "p99",
        "seed",
        "client out KB/s",
        "seed",
        "server in KB/s",
        "wire",
        "Table 1",
        "seed",
        "server out KB/s",
        "Table 1",
        "N(N-1)BHz",
        "seed",
        "client in KB/s",
        "seed",
        "gen. lag p99 ms",
    ]
    body = []
    for r in rows:
        rt, pr = r.rates, r.predicted
        body.append(
            [
                str(r.clients),
                f"{r.server_fps:.1f}",
                _seed4(r.clients, 0),
                _m_sd(r.ping_ms),
                _p99_text(r.ping_ms.p99, r.ping_ms.count, 1),
                _seed4(r.clients, 2),
                _kb(rt.get("client_out_avg")),
                _seed4(r.clients, 3),
                _kb(rt.get("server_in")),
                _kb(rt.get("server_in_wire")),
                _kb(pr.get("server_in")),
                _seed4(r.clients, 4),
                _kb(rt.get("server_out")),
                _kb(pr.get("server_out_table1")),
                _kb(pr.get("server_out_poses")),
                _seed4(r.clients, 5),
                _kb(rt.get("client_in_avg")),
                _seed4(r.clients, 6),
                _p99_text(r.lag_p99_ms, r.lag_count, 2) + (" LIMITED" if r.generator_limited else ""),
            ]
        )
    return headers, body


def impairment_lines(rows: Sequence[ReplRow]) -> list[str]:
    """Per N, whether the link's model was realised (net/impair.py's check of the engine's log)."""
    lines = []
    for r in rows:
        check = (r.run.meta.get("impairment") or {}).get("check")
        if check is None:
            continue
        lines.append(
            f"impairment at N={r.clients}: {r.run.meta['impairment']['spec']}, realised p50 "
            f"{check['realised_p50_ns'] / 1e6:.3f} ms over {check['packets']} packets ({check['dropped']} dropped): "
            + ("reproduced" if check["reproduced"] else f"NOT reproduced ({check['criterion']})")
        )
    return lines


def knee_line(rows: Sequence[ReplRow]) -> str:
    knee = find_knee(rows)
    if knee.clients is None:
        top = max(rows, key=lambda r: r.clients)
        return f"knee: none up to N={top.clients}: the server kept {TICK_SHORTFALL:.0%} of its tick rate throughout"
    return (
        f"knee: N={knee.clients} (server ticks/s first below {TICK_SHORTFALL:.0%} of the rate); "
        + "; ".join(knee.causes)
    )


def replication_text(runs: Sequence[Run]) -> str:
    """Tables 3–4 as text, the knee, and the drops, for ``repl bench`` and ``describe``."""
    rows = replication_rows(runs)
    if not rows:
        return ""
    first = rows[0].run.config
    head = (
        f"replication: {first['rate_hz']:g} Hz per client, server tick {first['server_tick_hz']:g} Hz, "
        f"{first['payload_bytes']} B poses, {first['observers']} observers, {first['duration_s']:g} s per N"
    )
    drops = [
        f"N={r.clients}: {r.rcvbuf_errors} receive-buffer drops, {r.send_failures} send refusals, "
        f"{r.updates_missing} poses never seen by an observer"
        for r in rows
        if r.rcvbuf_errors or r.send_failures or r.updates_missing
    ]
    cpu = [
        f"N={r.clients}: thread {r.cpu.thread_user:.0%} user + {r.cpu.thread_system:.0%} kernel; core "
        + "/".join(f"{100 * r.cpu.core[f]:.0f}" for f in ("user", "system", "softirq", "idle"))
        for r in rows
        if r.cpu
    ]
    parts = [
        head,
        "",
        "Table 3 layout: update interval and update latency at the observers "
        "(categories: share of samples in the stacked modified z-score categories, main first)",
        render(*table3_layout(rows)),
        "",
        "Table 4 layout: server ticks/s, ping, data rates (KB = 1000 B; Table 1: in = B × Hz × N, out = N × in)",
        render(*table4_layout(rows)),
        "",
        knee_line(rows),
        *(["server CPU (% user/system/softirq/idle of its core): " + "; ".join(cpu)] if cpu else []),
        *(["drops: " + "; ".join(drops)] if drops else ["drops: none counted"]),
        *impairment_lines(rows),
        setup_line(rows),
    ]
    return "\n".join(parts)


def replication_section(runs: Sequence[Run]) -> str:
    """The report's section: the tables and latency, interval and bandwidth against N."""
    rows = replication_rows(runs)
    if not rows:
        return ""
    n = [r.clients for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    ax = axes[0]
    for stat, style in (("mean", "o-"), ("p99", "s--")):
        ax.plot(n, [getattr(r.interval_ms, stat) for r in rows], style, color=BLUE, label=f"interval {stat}")
        ax.plot(n, [getattr(r.latency_ms, stat) for r in rows], style, color=ORANGE, label=f"latency {stat}")
    seed_n = [k for k in n if k in SEED_TABLE3]
    ax.plot(seed_n, [SEED_TABLE3[k][2] for k in seed_n], "x:", color="#555", label="seed interval M")
    ax.set_xlabel("clients N")
    ax.set_ylabel("ms")
    ax.set_yscale("log")
    ax.set_title("update interval and latency", fontsize=10)
    ax.legend(fontsize=7)
    ax = axes[1]
    for key, colour, label in (
        ("server_in", BLUE, "server in"),
        ("server_out", VERMILLION, "server out"),
    ):
        ax.plot(n, [r.rates.get(key, np.nan) / 1000 for r in rows], "o-", color=colour, label=label)
    ax.plot(
        n,
        [r.predicted.get("server_in", np.nan) / 1000 for r in rows],
        ":",
        color=BLUE,
        label="Table 1 in",
    )
    ax.plot(
        n,
        [r.predicted.get("server_out_table1", np.nan) / 1000 for r in rows],
        ":",
        color=VERMILLION,
        label="Table 1 out",
    )
    ax.set_xlabel("clients N")
    ax.set_ylabel("KB/s")
    ax.set_yscale("log")
    ax.set_title("bandwidth", fontsize=10)
    ax.legend(fontsize=7)
    ax = axes[2]
    ax.plot(n, [r.server_fps for r in rows], "o-", color=BLUE, label="server ticks/s")
    ax.axhline(rows[0].tick_hz, color="#999", ls="--", lw=0.8, label="configured")
    knee = find_knee(rows)
    if knee.clients is not None:
        ax.axvline(knee.clients, color=VERMILLION, lw=1, label=f"knee N={knee.clients}")
    ax.set_xlabel("clients N")
    ax.set_title("server ticks per second", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    t3, t4 = table3_layout(rows), table4_layout(rows)
    return (
        "<h2>Replication scaling (seed 003 §7.3)</h2><div class='card'>"
        + figure_img(fig, "update interval, latency, bandwidth and server ticks against N")
        + f"<p><b>{esc(knee_line(rows))}</b></p><h3>Table 3 layout</h3>"
        + html_table(t3[0], [[esc(c) for c in row] for row in t3[1]])
        + "<h3>Table 4 layout</h3><div style='overflow-x:auto'>"
        + html_table(t4[0], [[esc(c) for c in row] for row in t4[1]])
        + "</div>"
        + "".join(f"<p>{esc(line)}</p>" for line in impairment_lines(rows))
        + f"<p class='muted'>{esc(setup_line(rows))}</p></div>"
    )


def replication_json(runs: Sequence[Run]) -> dict[str, Any]:
    rows = replication_rows(runs)
    knee = find_knee(rows)
    return {
        "knee": {"clients": knee.clients, "causes": list(knee.causes)},
        "rows": [
            {
                "run": r.run.id,
                "clients": r.clients,
                "update_interval_ms": r.interval_ms.to_dict(),
                "update_latency_ms": r.latency_ms.to_dict(),
                "interval_category_shares": list(r.interval_categories),
                "latency_category_shares": list(r.latency_categories),
                "server_ticks_per_s": r.server_fps,
                "ping_ms": r.ping_ms.to_dict(),
                "rates_bytes_per_s": r.rates,
                "predicted_bytes_per_s": r.predicted,
                "generator_lag_p99_ms": r.lag_p99_ms,
                "generator_limited": r.generator_limited,
                "rcvbuf_errors": r.rcvbuf_errors,
                "send_failures": r.send_failures,
                "updates_missing": r.updates_missing,
                "server_cpu": dataclasses.asdict(r.cpu) if r.cpu else None,
                "seed_table3": SEED_TABLE3.get(r.clients),
                "seed_table4": SEED_TABLE4.get(r.clients),
            }
            for r in rows
        ],
    }

"""Seed 004's Tables 3-6 from stored ``net`` runs, with the seed's figures beside ours.

Table 6 (ping round trip) and Table 5 (throughput, messages/s) per transport; Tables 3-4
(frame rate of distributed rendering, synchronised or not, intra- and inter-node, with 2 and
9 render nodes); and the open-loop table, which the seed did not have: latency from the
intended send time (coordinated omission corrected) beside latency from the actual one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jitterlab.core.percentiles import is_resolved
from jitterlab.core.render import render
from jitterlab.describe.analysis import file_summary
from jitterlab.describe.context import command_context
from jitterlab.stats.summary import Summary
from jitterlab.store import Run
from jitterlab.store.reader import ACTUAL_SEND, LOCAL, SEND
from jitterlab.store.runs import verified_samples_path

# Wiebusch et al. (seed 004) Tables 5-6: Simulator X's platform layer, Scala actors, Akka.
SEED_THROUGHPUT = {"intra-node": ("120,000", "—", "1,140,000"), "inter-node": ("11,400", "11,400", "90,000")}
SEED_PING_S = ("0.2", "0.2", "< 0.001")
SEED_FPS = {True: (60, 5), False: (60, 60)}  # sync / no sync: intra-node, inter-node
SEED_SETUP = (
    "hardware: the seed ran a 3-node powerwall (2x Opteron 6168 / FX-6100, Gigabit Ethernet) and a 10-node "
    "tiled display (Core 2 6600); these runs are network namespaces over veth on one 2-vCPU KVM guest, so "
    "only the shape carries over: which transport is faster, and what synchronisation costs as delay grows."
)


def is_net_run(run: Run) -> bool:
    return "net" in run.meta


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def _summary(run: Run, since: str = SEND) -> Summary:
    """The exact summary of the run's latencies (from ``since``), read in row groups (the
    one stored at commit when it is this version's): never the run in memory."""
    path = verified_samples_path(run)
    return file_summary(run, path) if since == SEND else LOCAL.summary(path, since)


def uncorrected_summary(run: Run) -> Summary:
    """An open-loop run's latency from the actual send time (uncorrected: what a closed-loop
    tool would report), beside its own from the intended one; a run stored without the
    actual send times: its own."""
    columns = (run.meta.get("samples") or {}).get("columns") or []
    return _summary(run, ACTUAL_SEND if ACTUAL_SEND in columns else SEND)


def _level_ms(value: float, count: int, level: float) -> str:
    """A percentile in ms, or "not resolved" where ``count`` samples do not resolve its
    level (core/percentiles.py ``is_resolved``; docs/statistics.md)."""
    return "not resolved" if count and not is_resolved(count, level) else _ms(value)


def _tail_ms(s: Summary) -> list[str]:
    """p50, p99 and p99.9 of a summary in ms, each "not resolved" where it is not."""
    if s.count == 0:
        return [_ms(float("nan"))] * 3
    return [_level_ms(v, s.count, level) for v, level in ((s.p50, 50.0), (s.p99, 99.0), (s.p99_9, 99.9))]


def _latency(run: Run, summary: Summary | None = None) -> tuple[float, float, float, float, float]:
    s = summary or _summary(run)
    if s.count == 0:
        return (float("nan"),) * 5
    return s.mean, s.std, s.p50, s.p99, s.p99_9


def _where(run: Run) -> str:
    c = run.config
    return "intra-node" if c.get("intra_node") else "inter-node"


def _measured_lost(net: dict[str, Any]) -> int:
    """Lost in the measured window, the one the stored samples cover (runs before it: all)."""
    return int(net.get("measured_lost", net["lost"]))


def ping_rows(runs: Sequence[Run]) -> tuple[list[str], list[list[Any]]]:
    headers = ["transport", "round trip M (SD) ms", "p50", "p99", "p99.9", "max", "pings", "lost"]
    rows = []
    for run in runs:
        if run.config.get("scenario") != "ping":
            continue
        whole = _summary(run)
        m, sd, _, _, _ = _latency(run, whole)
        count, top = whole.count, whole.max
        net = run.meta["net"]
        rows.append(
            [
                run.config["transport"],
                f"{_ms(m)} ({_ms(sd)})",
                *_tail_ms(whole),
                _ms(float(top) if count else 0),
                count,  # the stored pings: the warm-up's answered ones are not stored
                _measured_lost(net),
            ]
        )
    return headers, rows


def open_loop_rows(runs: Sequence[Run]) -> tuple[list[str], list[list[Any]]]:
    headers = [
        "transport",
        "rate/s",
        "p50 ms",
        "p99",
        "p99.9",
        "uncorrected p99",
        "p99.9",
        "late sends",
        "max lag ms",
        "lost",
    ]
    rows = []
    for run in runs:
        if run.config.get("scenario") != "open-loop":
            continue
        raw = uncorrected_summary(run)
        net = run.meta["net"]
        rows.append(
            [
                run.config["transport"],
                f"{run.config.get('rate_hz', 0):g}",
                *_tail_ms(_summary(run)),
                *_tail_ms(raw)[1:],  # uncorrected p99, p99.9
                f"{net['late_share']:.2%}",
                _ms(net["max_lag_ns"]),
                _measured_lost(net),
            ]
        )
    return headers, rows


def throughput_rows(runs: Sequence[Run]) -> tuple[list[str], list[list[Any]]]:
    stream = [r for r in runs if r.config.get("scenario") == "stream"]
    transports = list(dict.fromkeys(r.config["transport"] for r in stream))
    headers = ["", *transports, "seed: platform", "Scala", "Akka"]
    rows = []
    for where in ("intra-node", "inter-node"):
        cells = []
        for t in transports:
            match = [r for r in stream if r.config["transport"] == t and _where(r) == where]
            cells.append(f"{match[-1].meta['net']['msg_per_s']:,.0f}" if match else "—")
        if any(c != "—" for c in cells):
            rows.append([where, *cells, *SEED_THROUGHPUT[where]])
    return headers, rows


def stream_latency_rows(runs: Sequence[Run]) -> tuple[list[str], list[list[Any]]]:
    headers = ["transport", "where", "one-way p50 ms", "p99", "p99.9", "received", "lost"]
    rows = []
    for run in runs:
        if run.config.get("scenario") != "stream":
            continue
        net = run.meta["net"]
        rows.append(
            [
                run.config["transport"],
                _where(run),
                *_tail_ms(_summary(run)),
                net["answered"],
                net["lost"],
            ]
        )
    return headers, rows


def _fps(runs: Sequence[Run], where: str, impairment: str | None) -> str:
    match = [r for r in runs if _where(r) == where and (r.config.get("impaired") or None) == impairment]
    return f"{match[-1].meta['net']['fps']:.1f}" if match else "—"


def frame_rows(runs: Sequence[Run], render_nodes: int) -> tuple[list[str], list[list[Any]]]:
    frames = [
        r
        for r in runs
        if r.config.get("scenario") == "frame-sync" and r.meta["net"].get("render_nodes") == render_nodes
    ]
    if not frames:
        return [], []
    impaired = sorted({str(r.config["impaired"]) for r in frames if r.config.get("impaired")})
    headers = [
        "",
        "intra-node fps",
        f"inter-node ({render_nodes} render nodes)",
        *[f"inter-node, {i}" for i in impaired],
        "skew p99 ms",
        "seed intra",
        "seed inter",
    ]
    rows = []
    for sync in (True, False):
        mine = [r for r in frames if bool(r.config.get("sync")) == sync]

        inter = [r for r in mine if _where(r) == "inter-node" and not r.config.get("impaired")]
        skew = _skew_p99(inter[-1].meta["net"]["skew"]) if inter and inter[-1].meta["net"]["skew"] else "—"
        rows.append(
            [
                "sync" if sync else "no sync",
                _fps(mine, "intra-node", None),
                _fps(mine, "inter-node", None),
                *[_fps(mine, "inter-node", i) for i in impaired],
                skew,
                *SEED_FPS[sync],
            ]
        )
    return headers, rows


def impairment_lines(runs: Sequence[Run]) -> list[str]:
    lines = []
    for run in runs:
        check = (run.meta.get("impairment") or {}).get("check")
        if check and check.get("ks") is not None:
            verdict = "reproduced" if check["reproduced"] else "NOT reproduced"
            errors = ", ".join(f"{k} {v / 1e3:+.0f} µs" for k, v in check["quantile_error_ns"].items())
            p50_error = check["quantile_error_ns"].get("p50", 0.0)
            if str(check.get("criterion", "")).startswith("|p50 error|"):
                # a constant delay has a one-point reference, where KS is 1 for any timer error:
                # say what was realised against what was asked for instead
                target = check["realised_p50_ns"] - p50_error
                judged = f"realised delay p50 {_ms(check['realised_p50_ns'])} ms against the model's {_ms(target)} ms"
            else:
                judged = f"realised p50 {_ms(check['realised_p50_ns'])} ms; KS {check['ks']:.3f}"
            lines.append(
                f"impairment {run.config['impaired']} on {run.id}: {verdict} ({check['criterion']}; "
                f"{check['packets']} packets, {judged}; errors {errors})"
            )
    return lines


def network_text(runs: Sequence[Run]) -> str:
    runs = [r for r in runs if is_net_run(r)]
    if not runs:
        return ""
    parts: list[str] = []

    def section(title: str, table: tuple[list[str], list[list[Any]]]) -> None:
        if table[1]:
            parts.extend([title, render(*table), ""])

    section(
        "Table 6 layout: ping round trip (seed: means only: platform 0.2 s, Scala 0.2 s, Akka < 0.001 s)",
        ping_rows(runs),
    )
    section(
        "Table 5 layout: throughput, messages/s (median of the steps; the seed's figures on the right)",
        throughput_rows(runs),
    )
    section("stream: per-message one-way latency at the receiver", stream_latency_rows(runs))
    section(
        "open loop: latency from the intended send time (coordinated omission corrected) and from the actual one",
        open_loop_rows(runs),
    )
    for n, title in ((2, "Table 3 layout (powerwall)"), (9, "Table 4 layout (tiled display)")):
        section(f"{title}: frames per second of distributed rendering at 60 fps", frame_rows(runs, n))
    for other in sorted(
        {r.meta["net"].get("render_nodes") for r in runs if r.config.get("scenario") == "frame-sync"}
        - {2, 9, None}
    ):
        section(f"frame-sync with {other} render nodes: frames per second", frame_rows(runs, int(other)))
    parts += impairment_lines(runs)
    partial = [f"{r.id}: {r.meta['partial_reason']}" for r in runs if r.partial]
    parts += ["partial runs: " + "; ".join(partial)] if partial else []
    parts.append(SEED_SETUP)
    return "\n".join(parts)


def network_json(runs: Sequence[Run]) -> list[dict[str, Any]]:
    return [
        {
            "context": command_context([r]),
            "id": r.id,
            "config": r.config,
            "net": r.meta["net"],
            "summary": r.meta.get("summary"),
            "impairment": r.meta.get("impairment"),
            "status": r.meta.get("status"),
        }
        for r in runs
        if is_net_run(r)
    ]


def _skew_p99(skew: dict[str, Any]) -> str:
    """The frames' skew p99 (ms), "not resolved" where the run's frames do not resolve it
    (core/percentiles.py ``is_resolved``: fewer than 1,000 frames); a run stored before the
    frame count was kept shows its figure as stored."""
    frames = skew.get("frames")
    if frames is not None and not is_resolved(int(frames), 99.0):
        return "not resolved"
    return _ms(skew.get("frame_p99_ns", 0))

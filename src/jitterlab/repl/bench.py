"""``jitterlab repl bench``: seed 003 §7.3's replication experiment, one stored run per N.

The native ``jitterlab-repl`` tool runs the server and the client fleet on loopback; this
module checks the options, runs it once per N, and turns what it wrote into the run's
``repl`` block: generator lag, server ticks per second, data rates, pings, drops and the
kernel's UDP counters (docs/replication.md).
"""

from __future__ import annotations

import os
import resource
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.warnings import CodedWarning, Warn
from jitterlab.measure.jobs import NativeJob, policy_args, run_native_job
from jitterlab.measure.runner import Context, Done, Plan, Point
from jitterlab.repl.snmp import delta, udp_counters
from jitterlab.stats import percentiles
from jitterlab.store.rawfile import RawSamples

POSE_HEADER_BYTES = 24  # native/repl/protocol.hpp
MAX_POSE_BYTES = 1172  # a 1200-byte datagram less the server's 28-byte header
SPARE_FDS = 16  # beside one socket per client: stdio, epoll, the server socket, files
GENERATOR_LAG_LIMIT_NS = 1_000_000  # p99 lag above this: the generator, not the server, is measured
ADDRESS = "127.0.0.1"


@dataclass(frozen=True)
class ReplOptions:
    clients: tuple[int, ...] = (2, 5, 10, 25)
    rate_hz: float = 90.0
    server_tick_hz: float = 120.0
    payload: int = 144
    observers: int = 2
    duration_s: float = 30.0
    warmup_s: float = 1.0
    port: int = 0
    pin_server: int | None = None  # None: CPU 0 when two or more CPUs are allowed
    pin_clients: int | None = None  # None: CPU 1 likewise
    policy: str = "other"
    priority: int = 0
    mlock: bool = True


# The seed's EP1 (Latoschik et al. 2019, §5): VR clients replicate at 90 Hz, the server ticks at 120.
PRESETS: dict[str, ReplOptions] = {
    "seed-003": ReplOptions(clients=(2, 5, 10, 25, 50, 75, 100, 125), rate_hz=90.0, server_tick_hz=120.0)
}


def with_preset(name: str, **overrides: Any) -> ReplOptions:
    return replace(PRESETS[name], **overrides)


def check_options(o: ReplOptions) -> None:
    """Bad input as one line (JitterlabError), before anything starts."""
    if not o.clients:
        raise JitterlabError("--clients needs at least one N")
    if min(o.clients) < 2:
        raise JitterlabError(
            f"--clients: every N must be at least 2 (one user sees another), got {min(o.clients)}"
        )
    if not 0 < o.rate_hz <= 1000:
        raise JitterlabError(f"--rate must be in (0, 1000] Hz, got {o.rate_hz:g}")
    if not 0 < o.server_tick_hz <= 10000:
        raise JitterlabError(f"--server-tick must be in (0, 10000] Hz, got {o.server_tick_hz:g}")
    if not POSE_HEADER_BYTES <= o.payload <= MAX_POSE_BYTES:
        raise JitterlabError(
            f"--payload must be {POSE_HEADER_BYTES}..{MAX_POSE_BYTES} bytes (the pose header is "
            f"{POSE_HEADER_BYTES} B; a 1200 B datagram holds one pose of at most {MAX_POSE_BYTES} B), got {o.payload}"
        )
    if not 1 <= o.observers <= min(o.clients):
        raise JitterlabError(
            f"--observers must be 1..{min(o.clients)} (observers are clients), got {o.observers}"
        )
    needed = max(o.clients) + SPARE_FDS
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        raise JitterlabError(
            f"{max(o.clients)} clients need {needed} file descriptors but the limit is {soft}: "
            f"raise it with ulimit -n {needed}"
        )
    if o.port:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.bind((ADDRESS, o.port))
            except OSError as e:
                raise JitterlabError(f"port {o.port} on {ADDRESS} is in use ({e.strerror})") from e


def default_pins() -> tuple[int, int]:
    """Server and client fleet on CPUs of their own when there are two; else unpinned."""
    cpus = sorted(os.sched_getaffinity(0))
    return (cpus[0], cpus[1]) if len(cpus) >= 2 else (-1, -1)


def _read_i64(path: Path) -> np.ndarray:
    values = np.fromfile(path, dtype="<i8") if path.exists() else np.zeros(0, np.int64)
    path.unlink(missing_ok=True)
    return values


def _lag_block(lag: np.ndarray) -> dict[str, Any]:
    if lag.size == 0:
        return {"count": 0}
    p50, p99, p999 = percentiles(lag, (50.0, 99.0, 99.9))
    return {
        "count": int(lag.size),
        "p50_ns": float(p50),
        "p99_ns": float(p99),
        "p99_9_ns": float(p999),
        "max_ns": int(lag.max()),
        "late_share": float(np.mean(lag > GENERATOR_LAG_LIMIT_NS)),
        "limited": bool(p99 > GENERATOR_LAG_LIMIT_NS),
    }


def _ticks_block(ticks: np.ndarray, server: dict[str, Any], tick_hz: float) -> dict[str, Any]:
    window_s = max(server.get("window_ns", 0), 1) / 1e9
    start, busy = (ticks[:, 0], ticks[:, 1]) if ticks.size else (np.zeros(0), np.zeros(0))
    per_second: Any = (
        np.bincount(((start - start[0]) // 1_000_000_000).astype(np.int64)) if start.size else []
    )
    return {
        "ticks_per_s": len(start) / window_s,
        "ticks_per_second_series": [int(v) for v in per_second],
        "busy_p50_ns": float(np.median(busy)) if busy.size else None,
        "busy_p99_ns": float(percentiles(busy, (99.0,))[0]) if busy.size else None,
        "busy_share": float(busy.sum() / 1e9 / window_s),
        "cpu_share": server.get("cpu_ns", 0) / 1e9 / window_s,
        "period_ns": 1e9 / tick_hz,
    }


def _missing_updates(records: np.ndarray) -> int:
    """Poses an observer never saw: gaps in each avatar's sequence numbers (superseded at
    the server before a tick sent them, or dropped)."""
    if records.size == 0:
        return 0
    order = np.lexsort((records["seq"], records["pair"]))
    pair, seq = records["pair"][order], records["seq"][order]
    step = np.diff(seq)[pair[1:] == pair[:-1]]
    return int(np.clip(step - 1, 0, None).sum())


def rates(repl: dict[str, Any], clients: int) -> dict[str, float]:
    """Bytes per second measured (UDP payload bytes; the seed's KB/s are 1000 B/s)."""
    server, fleet = repl["server"], repl["clients_fleet"]
    window_s = max(fleet.get("window_ns", 0), 1) / 1e9
    return {
        "client_out_avg": fleet["bytes_out"] / clients / window_s,
        "server_in": server["pose_bytes_in"] / window_s,
        "server_out": server["bytes_out"] / window_s,
        "client_in_avg": fleet["bytes_in"] / clients / window_s,
    }


def predicted_rates(payload: int, rate_hz: float, clients: int) -> dict[str, float]:
    """The seed's Table 1 (in = bytes × Hz × N, out = N × in) and the poses this protocol
    must send out: each of N clients gets the N - 1 other poses (datagram headers not counted)."""
    server_in = payload * rate_hz * clients
    return {
        "server_in": server_in,
        "server_out_table1": clients * server_in,
        "server_out_poses": clients * (clients - 1) * rate_hz * payload,
    }


def scaling_plan(o: ReplOptions) -> Plan:
    """One run per N in ``o.clients``, checked before anything starts."""
    check_options(o)
    auto_server, auto_clients = default_pins()
    pin_server = auto_server if o.pin_server is None else o.pin_server
    pin_clients = auto_clients if o.pin_clients is None else o.pin_clients
    total = len(o.clients) * (o.duration_s + o.warmup_s)
    return Plan(
        "repl",
        [_point(o, clients, pin_server, pin_clients) for clients in o.clients],
        about=f"N = {', '.join(map(str, o.clients))} at {o.rate_hz:g} Hz, about {total:.0f} s in all",
    )


def _point(o: ReplOptions, clients: int, pin_server: int, pin_clients: int) -> Point:
    def execute(ctx: Context) -> Done:
        return run_native_job(ctx, _job(o, clients, pin_server, pin_clients, ctx.warn))

    return Point(f"repl N={clients}", execute)


def _job(o: ReplOptions, clients: int, pin_server: int, pin_clients: int, warn: Warn) -> NativeJob:
    """The native tool's run at N = ``clients`` (built when it starts: the kernel's UDP
    counters are read now, to subtract at the end)."""
    args = [
        *("--clients", str(clients), "--observers", str(o.observers)),
        *("--rate", f"{o.rate_hz:g}", "--server-tick", f"{o.server_tick_hz:g}", "--payload", str(o.payload)),
        *("--duration-ns", str(int(o.duration_s * 1e9)), "--warmup-ns", str(int(o.warmup_s * 1e9))),
        *("--address", ADDRESS, "--port", str(o.port)),
        *("--pin-server", str(pin_server), "--pin-clients", str(pin_clients)),
        *policy_args(o.policy, o.priority, o.mlock),
    ]
    config = {
        "runtime": "native",
        "technique": "repl",
        "variant": f"{o.rate_hz:g}Hz",
        "pairs": clients,  # the number of users: what the scaling plots put on x
        "clients": clients,
        "observers": o.observers,
        "rate_hz": o.rate_hz,
        "server_tick_hz": o.server_tick_hz,
        "payload_bytes": o.payload,
        "duration_s": o.duration_s,
        "warmup_s": o.warmup_s,
        "transport": "udp",
        "placement": "loopback",
        "pin": {"server": pin_server, "clients": pin_clients},
        "policy": o.policy,
        "priority": o.priority,
        "mlock": o.mlock,
    }
    before = udp_counters()

    def extra(harness: dict[str, Any]) -> dict[str, Any]:
        return {"repl": harness.get("repl", {}), "pm_qos": harness.get("pm_qos", {})}

    def finish(raw: RawSamples, meta: dict[str, Any], staging: Path) -> dict[str, Any]:
        lag = _read_i64(staging / "generator_lag.i64")
        ticks = _read_i64(staging / "server_ticks.i64")
        repl = dict(meta.get("repl") or {})
        if not repl.get("server"):
            return {}
        ticks = ticks[: ticks.size - ticks.size % 2].reshape(-1, 2)
        repl["generator_lag"] = _lag_block(lag)
        repl["server_ticks"] = _ticks_block(ticks, repl["server"], o.server_tick_hz)
        repl["udp_counters"] = delta(before, udp_counters())
        repl["rates_bytes_per_s"] = rates(repl, clients)
        repl["predicted_bytes_per_s"] = predicted_rates(o.payload, o.rate_hz, clients)
        repl["updates_missing"] = _missing_updates(raw.records)
        blocks: dict[str, Any] = {"repl": repl}
        if repl["generator_lag"].get("limited"):
            detail = (
                f"the load generator fell behind: p99 lag {repl['generator_lag']['p99_ns'] / 1e6:.2f} ms "
                f"(limit 1 ms) at N={clients}; this run measures the generator as much as the server"
            )
            w = CodedWarning("generator-limited", detail)
            warn(w)
            obtained = dict(meta.get("obtained", {}))
            obtained["warnings"] = [*obtained.get("warnings", []), w.as_dict()]
            blocks["obtained"] = obtained
        return blocks

    return NativeJob(
        program="jitterlab-repl",
        args=args,
        config=config,
        id_parts=("repl", f"n{clients}", f"{o.rate_hz:g}hz"),
        label=f"repl N={clients}",
        total=int((o.warmup_s + o.duration_s) * 1e9),
        progress_unit="s",
        extra_meta=extra,
        finish_meta=finish,
    )

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
import sys
import tempfile
from contextlib import nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import kstest

from jitterlab.core.errors import JitterlabError
from jitterlab.core.warnings import CodedWarning, Warn
from jitterlab.measure.jobs import NativeJob, policy_args, run_native_job
from jitterlab.measure.runner import Context, Done, Plan, Point
from jitterlab.net import impair
from jitterlab.net import topo as topology
from jitterlab.net.nodes import Nodes, from_hosts, namespace_nodes
from jitterlab.repl.hosts import plan_json
from jitterlab.repl.links import hosts_links, resolve
from jitterlab.repl.options import PRESETS, ReplOptions
from jitterlab.repl.snmp import delta, udp_counters, udp_counters_of
from jitterlab.stats import percentiles
from jitterlab.store.rawfile import RawSamples

POSE_HEADER_BYTES = 24  # native/repl/protocol.hpp
MAX_POSE_BYTES = 1172  # a 1200-byte datagram less the server's 28-byte header
SPARE_FDS = 16  # beside one socket per client: stdio, epoll, the server socket, files
GENERATOR_LAG_LIMIT_NS = 1_000_000  # p99 lag above this: the generator, not the server, is measured
ADDRESS = "127.0.0.1"


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
    if o.hosts and (o.router or (o.topo and not (o.impair or o.shape))):
        raise JitterlabError(
            "--hosts runs on hosts: --nodes, --topo and --router are for namespaces made or named here "
            "(--topo with --hosts only names the topology whose router --impair/--shape use)"
        )
    if o.networked and o.client_nodes < 1:
        raise JitterlabError("across nodes the server and the clients need two or more nodes")
    if o.client_nodes > min(o.clients):
        raise JitterlabError(
            f"{o.client_nodes + 1} nodes: every N must be at least {o.client_nodes} "
            "(the server has the first node, each client node needs a client)"
        )
    first_node = min(o.clients) // max(o.client_nodes, 1)
    if not 1 <= o.observers <= first_node:
        raise JitterlabError(
            f"--observers must be 1..{first_node} (observers are clients"
            + (" of the first client node" if o.client_nodes > 1 else "")
            + f"), got {o.observers}"
        )
    if o.impair is not None:
        impair.parse(o.impair)  # a bad spec is one line now, not after the first N
        if not (o.router or o.topo or o.hosts):  # hosts: their topology's router (repl/links.py)
            raise JitterlabError("--impair needs a router between the nodes: add --router")
    if (o.router or o.shape or o.impair) and not o.networked:
        raise JitterlabError(
            "--router, --shape and --impair are for nodes: add --nodes K (namespaces) or --topo"
        )
    needed = max(o.clients) + SPARE_FDS
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        raise JitterlabError(
            f"{max(o.clients)} clients need {needed} file descriptors but the limit is {soft}: "
            f"raise it with ulimit -n {needed}"
        )
    if o.port and not o.networked:
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
    busy_p = percentiles(busy, (50.0, 99.0)) if busy.size else None
    return {
        "ticks_per_s": len(start) / window_s,
        "ticks_per_second_series": [int(v) for v in per_second],
        "busy_p50_ns": float(busy_p[0]) if busy_p is not None else None,
        "busy_p99_ns": float(busy_p[1]) if busy_p is not None else None,
        "busy_share": float(busy.sum() / 1e9 / window_s),
        "cpu_share": server.get("cpu_ns", 0) / 1e9 / window_s,
        "period_ns": 1e9 / tick_hz,
    }


def _uniform_fit(share: np.ndarray, instants: int) -> dict[str, Any]:
    ks = float(kstest(share, "uniform").statistic)
    critical = 1.95 / np.sqrt(max(instants, 1))  # Kolmogorov-Smirnov at 0.1 % (Massey 1951)
    return {
        "ks": ks,
        "critical": float(critical),
        "uniform": bool(ks < critical),
        "quartiles": [float(q) for q in percentiles(share, (25.0, 50.0, 75.0))],
    }


def ping_phase_check(
    send_ns: np.ndarray, tick_start_ns: np.ndarray, observers: int, tick_hz: float
) -> dict[str, Any]:
    """Where the pings were sent against the server's tick, as a share of a tick (0 at its
    start, 1 at the next's), each against U(0, 1) (issue 27 item 7):

    ``schedule``: against the tick grid the server keeps when it is on time (period 1/tick_hz
    from its first tick in the window). Pings at random phases give U(0, 1) whatever the load;
    pings on a fixed period that is a multiple of the tick's hold one share (the old pacer,
    which runs on SCHED_FIFO, wakes within a small part of a tick even on a loaded host).
    ``ticks``: against the ticks as they happened; a loaded server's late ticks move its grid,
    so this one spreads a fixed phase too (recorded, not decisive).
    ``critical`` is for the n distinct ping instants (the observers ping together)."""
    send = np.sort(np.asarray(send_ns, dtype=np.int64))
    starts = np.asarray(tick_start_ns, dtype=np.int64)
    after = np.searchsorted(starts, send, side="right")
    inside = (after >= 1) & (after < starts.size)
    if not inside.any():
        return {"pings": 0}
    send, k = send[inside], after[inside]
    instants = int(inside.sum()) // max(observers, 1)
    period = 1e9 / tick_hz
    return {
        "pings": int(inside.sum()),
        "schedule": _uniform_fit(((send - starts[0]) % period) / period, instants),
        "ticks": _uniform_fit((send - starts[k - 1]) / (starts[k] - starts[k - 1]), instants),
    }


def _missing_updates(records: RawSamples) -> int:
    """Poses an observer never saw: gaps in each avatar's sequence numbers (superseded at
    the server before a tick sent them, or dropped)."""
    if records.rows == 0:
        return 0
    order = np.lexsort((records.seq, records.pair))
    pair, seq = records.pair[order], records.seq[order]
    step = np.diff(seq)[pair[1:] == pair[:-1]]
    return int(np.clip(step - 1, 0, None).sum())


# IPv4 (20 B, no options) and UDP (8 B) headers: what a pose datagram adds on the wire
IP_UDP_HEADER_BYTES = 28


def rates(repl: dict[str, Any], clients: int) -> dict[str, float]:
    """Bytes per second measured (UDP payload bytes; the seed's KB/s are 1000 B/s). Server in
    is what the server read in its own window, by when it read it (runs before that field:
    the poses sent in the window), and beside it the same on the wire (+ IPv4/UDP headers)."""
    server, fleet = repl["server"], repl["clients_fleet"]
    window_s = max(fleet.get("window_ns", 0), 1) / 1e9
    out = {
        "client_out_avg": fleet["bytes_out"] / clients / window_s,
        "server_in": server["pose_bytes_in"] / window_s,
        "server_out": server["bytes_out"] / window_s,
        "client_in_avg": fleet["bytes_in"] / clients / window_s,
    }
    if "pose_bytes_received" in server:
        server_s = max(server.get("window_ns", 0), 1) / 1e9
        received = server["pose_bytes_received"]
        out["server_in"] = received / server_s
        out["server_in_wire"] = (
            received + IP_UDP_HEADER_BYTES * server["pose_datagrams_received"]
        ) / server_s
    return out


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
    """One run per N in ``o.clients``, checked before anything starts; across nodes, the
    namespaces are made once around them all (or ``o.topo``'s are used)."""
    hosts = None
    if o.hosts:  # read and checked now: a bad hosts.toml is one line before anything runs
        if o.client_nodes or o.router or (o.topo and not (o.impair or o.shape)):
            raise JitterlabError(
                "--hosts runs on hosts: --nodes, --topo and --router are for namespaces made or named here "
                "(--topo with --hosts only names the topology whose router --impair/--shape use)"
            )
        hosts = from_hosts(o.hosts)
        o = replace(o, client_nodes=hosts.count - 1)
    elif o.topo and not o.client_nodes:
        o = replace(o, client_nodes=len(topology.load(o.topo).nodes) - 1)
    check_options(o)
    auto_server, auto_clients = default_pins()
    pin_server = auto_server if o.pin_server is None else o.pin_server
    pin_clients = auto_clients if o.pin_clients is None else o.pin_clients
    total = len(o.clients) * (o.duration_s + o.warmup_s)
    setup: Any = None
    if hosts is not None and (o.impair or o.shape):  # hosts that are namespaces here, or refused
        setup = partial(hosts_links, hosts, bool(o.impair), o.shape, str(o.hosts), o.topo)
        resolve(hosts, bool(o.impair), o.shape, str(o.hosts), o.topo)  # refused now, before anything runs
    elif hosts is not None:
        chosen = hosts
        setup = lambda: nullcontext(chosen)  # noqa: E731
    elif o.networked:
        if not o.topo:
            topology.require_tools()
        setup = partial(namespace_nodes, o.topo, o.client_nodes + 1, o.router, o.shape)
    kind = "hosts over ssh" if hosts is not None else "namespaces"
    where = f" across {o.client_nodes + 1} {kind}" if o.networked else ""
    return Plan(
        "repl",
        [_point(o, clients, pin_server, pin_clients) for clients in o.clients],
        setup=setup,
        about=f"N = {', '.join(map(str, o.clients))} at {o.rate_hz:g} Hz{where}, about {total:.0f} s in all",
    )


def _point(o: ReplOptions, clients: int, pin_server: int, pin_clients: int) -> Point:
    def execute(ctx: Context) -> Done:
        nodes: Nodes | None = ctx.setup
        impairment = impair.parse(o.impair) if o.impair else None
        if impairment is None or nodes is None:
            return run_native_job(ctx, _job(o, clients, pin_server, pin_clients, ctx.warn, nodes, None))
        if not nodes.router:
            raise JitterlabError(f"--impair needs a router between the nodes: topology {o.topo} has none")
        # the model on the router's links for this N's whole run, its log checked at the end
        with tempfile.TemporaryDirectory(prefix="jl-repl-impair-") as work:
            link = impair.Link(nodes.router, impairment, Path(work))
            try:
                job = _job(o, clients, pin_server, pin_clients, ctx.warn, nodes, (impairment, link))
                return run_native_job(ctx, job)
            finally:
                link.stop()

    return Point(f"repl N={clients}", execute)


def _node_args(nodes: Nodes, client_nodes: int) -> list[str]:
    """The server's socket on node 0, a client fleet on each of nodes 1..K sending to the
    address that node reaches node 0 at."""
    server_ns = nodes.launcher(0).netns
    if nodes.kind != "netns" or server_ns is None:
        raise JitterlabError(f"repl bench: nodes of kind {nodes.kind} have no namespaces")
    args = ["--address", "0.0.0.0", "--server-netns", server_ns]
    for k in range(1, client_nodes + 1):
        args += ["--fleet", f"{nodes.launcher(k).netns}@{nodes.address(k, 0)}"]
    return args


def _job(
    o: ReplOptions,
    clients: int,
    pin_server: int,
    pin_clients: int,
    warn: Warn,
    nodes: Nodes | None,
    impaired: tuple[impair.Impairment, impair.Link] | None,
) -> NativeJob:
    """The native tool's run at N = ``clients`` (built when it starts: the kernel's UDP
    counters are read now, to subtract at the end)."""
    on_hosts = nodes is not None and nodes.kind == "hosts"
    if on_hosts:  # the parts' own arguments are added by the coordinator (repl/hosts.py)
        where: list[str] = []
    elif nodes:
        where = _node_args(nodes, o.client_nodes)
    else:
        where = ["--address", ADDRESS]
    args = [
        *("--clients", str(clients), "--observers", str(o.observers)),
        *("--rate", f"{o.rate_hz:g}", "--server-tick", f"{o.server_tick_hz:g}", "--payload", str(o.payload)),
        *("--duration-ns", str(int(o.duration_s * 1e9)), "--warmup-ns", str(int(o.warmup_s * 1e9))),
        *where,
        *("--port", str(o.port)),
        *("--pin-server", str(pin_server), "--pin-clients", str(pin_clients)),
        *policy_args(o.policy, o.priority, o.mlock),
    ]
    command = None
    if on_hosts and nodes is not None:
        plan = plan_json(
            nodes.launchers[: o.client_nodes + 1],
            [nodes.address(k, 0) for k in range(1, o.client_nodes + 1)],
            clients,
        )
        coordinator = [sys.executable, "-m", "jitterlab.repl.hosts", "--plan", plan]
        command = lambda _staging: coordinator  # noqa: E731
    namespaces = (
        [nodes.launcher(k).netns or "" for k in range(o.client_nodes + 1)] if nodes and not on_hosts else []
    )
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
        "placement": nodes.kind if nodes else "loopback",
        "nodes": o.client_nodes + 1 if nodes else 1,
        "router": bool(nodes and nodes.router),
        "impaired": o.impair,
        "shape": o.shape,
        "pin": {"server": pin_server, "clients": pin_clients},
        "policy": o.policy,
        "priority": o.priority,
        "mlock": o.mlock,
    }
    counters = partial(udp_counters_of, namespaces) if namespaces else udp_counters
    before = {} if on_hosts else counters()

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
        if not on_hosts:  # across hosts: each host's own, summed by the coordinator
            repl["udp_counters"] = delta(before, counters())
        repl["rates_bytes_per_s"] = rates(repl, clients)
        repl["predicted_bytes_per_s"] = predicted_rates(o.payload, o.rate_hz, clients)
        repl["updates_missing"] = _missing_updates(raw)
        sent = np.asarray(repl.pop("ping_send_ns", []), dtype=np.int64)
        answered = np.asarray(repl.pop("ping_tick_ns", []), dtype=np.int64)
        if not on_hosts and sent.size:  # across hosts the ticks are on another host's clock
            phase = dict(repl.get("ping_phase") or {})
            check = ping_phase_check(sent, ticks[:, 0], o.observers, o.server_tick_hz)
            repl["ping_phase"] = phase | {"tick_share": check}
            if answered.size == sent.size:  # the wait for the answering tick, the way there included
                repl["ping_tick_wait_ns"] = [int(w) for w in answered - sent]
        blocks: dict[str, Any] = {"repl": repl}
        if nodes:
            blocks |= {"topology": nodes.describe(), "clock": nodes.clock()}
        if impaired:
            model, link = impaired
            log = link.stop()
            blocks["impairment"] = model.describe() | {
                "check": impair.check(model, log) if log.size else None
            }
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
        command=command,
    )

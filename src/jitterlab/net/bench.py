"""``jitterlab net bench``: seed 004's inter-node measurements on namespaces or hosts.

Each (scenario, transport[, synchronisation]) is one stored run. The coordinator starts an
agent on every node it needs (nodes.py), has the servers listen, the client connect, releases
them together (a barrier: every agent says ``ready`` before any gets ``go``), and collects
each node's samples. Samples carry, beyond the four columns every run has, the intended send
time and the source and destination node (docs/net.md).
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import atomic_write_json
from jitterlab.core.progress import ProgressBar
from jitterlab.core.warnings import CodedWarning, Warn
from jitterlab.measure import environment
from jitterlab.measure.jobs import common_meta, measured_meta
from jitterlab.measure.jvm import choose_jdk, harness_jar, jvm_sources
from jitterlab.measure.runner import Context, Done, Plan, Point, run_plan
from jitterlab.net.agents import Agent, parse_result
from jitterlab.net.impair import Impairment, Link, check
from jitterlab.net.nodes import Nodes, intra_node
from jitterlab.net.options import (  # the options the command line parses, light to import
    JVM_TRANSPORTS,
    NetOptions,
    check_options,
)
from jitterlab.stats import percentiles
from jitterlab.store import ResultsStore, Run
from jitterlab.store.rawfile import FOOTER_BYTES, HEADER_BYTES, RawSamples, read_raw_samples
from jitterlab.store.staging import BLOCKS_DIR, DRAFT_JSON, PARTS_DIR

# The JVM agent: with a parallel collector and a fixed heap its stream steps ran at
# 130,000-220,000 msg/s here; with G1 and a growing heap at 60,000-90,000.
JVM_AGENT_FLAGS = ("-XX:+UseParallelGC", "-Xms512m", "-Xmx512m")
JVM_AGENT_CLASS = "dev.jitterlab.jvm.NetAgent"
LATE_LIMIT = 0.01  # more than 1 % of sends behind schedule: the generator was measured


@dataclass(frozen=True)
class Case:
    """One stored run: what runs, over which transport, on how many nodes, where."""

    scenario: str
    transport: str
    sync: bool | None = None  # frame-sync only
    count: int = 2  # agents: client (node 0) and servers
    intra: bool = False  # every agent on node 0 (the seed's intra-node comparison)
    impairment: Impairment | None = None

    @property
    def label(self) -> str:
        sync = "" if self.sync is None else ("-sync" if self.sync else "-async")
        where = " intra-node" if self.intra else ""
        impaired = f" impaired {self.impairment.spec}" if self.impairment else ""
        return f"{self.scenario}{sync} {self.transport}{where}{impaired}"


def plan(o: NetOptions, impairment: Impairment | None) -> list[Case]:
    """Every scenario x transport (x sync for frame-sync) on the nodes given."""
    cases = []
    for scenario in o.scenarios:
        count = o.nodes if scenario == "frame-sync" else 2
        for transport in o.transports:
            for sync in o.sync if scenario == "frame-sync" else (None,):
                cases.append(Case(scenario, transport, sync, count, False, impairment))
    return cases


def seed_004_plan(o: NetOptions, impairment: Impairment) -> list[Case]:
    """Tables 3-6: ping and stream per transport (stream intra- and inter-node), frame-sync
    with 2 and 9 render nodes synchronised and not, intra- and inter-node, and the same with
    100 ms each way on the link (the seed's 5 fps, reproduced by its cause)."""
    cases = [Case("ping", t) for t in o.transports]
    cases += [Case("open-loop", t) for t in o.transports]
    cases += [Case("stream", t, intra=intra) for intra in (True, False) for t in o.transports]
    for render_nodes in (2, 9):
        for intra in (True, False):
            cases += [Case("frame-sync", "tcp", sync, render_nodes + 1, intra) for sync in (True, False)]
    cases += [Case("frame-sync", "tcp", sync, 3, False, impairment) for sync in (True, False)]
    return cases


def bench_plan(o: NetOptions, cases: list[Case], nodes: Callable[[], AbstractContextManager[Nodes]]) -> Plan:
    """Each case as one run, on the nodes ``nodes`` sets up once around them all."""
    check_options(o)
    return Plan(
        "net",
        [_point(o, case) for case in cases],
        setup=nodes,
        about=f"{len(cases)} runs, about {len(cases) * (o.duration_s + o.warmup_s):.0f} s",
    )


def _point(o: NetOptions, case: Case) -> Point:
    def execute(ctx: Context) -> Done:
        nodes: Nodes = ctx.setup
        if case.count > nodes.count:
            raise JitterlabError(f"{case.label} needs {case.count} nodes; the topology has {nodes.count}")
        if case.impairment and not nodes.router:
            raise JitterlabError("--impair needs a router between the nodes: add --router (namespaces only)")
        return _run_one(ctx.store, o, intra_node(nodes, case.count) if case.intra else nodes, case, ctx.warn)

    return Point(case.label, execute)


def jvm_agent() -> tuple[tuple[str, ...], dict[str, str]]:
    """The pekko-artery agent's command line (the harness jar, built once) and its versions."""
    jdk = choose_jdk("auto")
    jar = harness_jar()
    pom = (jvm_sources() / "pom.xml").read_text()
    pekko = re.search(r"<pekko.version>([^<]+)</pekko.version>", pom)
    argv = (str(jdk.java), *JVM_AGENT_FLAGS, "-cp", str(jar), JVM_AGENT_CLASS)
    return argv, {
        "java": jdk.version,
        "pekko": pekko.group(1) if pekko else "unknown",
        "flags": " ".join(JVM_AGENT_FLAGS),
    }


@contextmanager
def _agents(nodes: Nodes, count: int, program: tuple[str, ...]) -> Iterator[list[Agent]]:
    """An agent on each of the first ``count`` nodes, each closed on every way out."""
    with ExitStack() as stack:
        agents = []
        for i in range(count):
            agent = Agent(replace(nodes.launcher(i), program=program))
            stack.callback(agent.close)
            agents.append(agent)
        yield agents


def _run_one(store: ResultsStore, o: NetOptions, nodes: Nodes, case: Case, warn: Warn) -> Done:
    scenario, transport, sync = case.scenario, case.transport, case.sync
    started = dt.datetime.now(dt.timezone.utc)
    run_id = store.new_run_id(
        "net",
        scenario,
        transport,
        *([] if sync is None else ["sync" if sync else "async"]),
        *(["intra"] if case.intra else []),
    )
    staging = store.staging_dir(run_id, lock=True)  # recover leaves it alone while this runs
    run_id = staging.name  # another writer may hold the id drawn: the folder's name is the run's
    try:
        return _measure(store, o, nodes, case, warn, run_id, started, staging)
    except JitterlabError as e:  # an agent died or failed mid-run: what it handed over is kept
        if any((staging / PARTS_DIR).glob("part-*")):
            store.release_staging(staging)  # left to recover from here on
            raise JitterlabError(
                f"{e}; the samples recorded until then are kept in {staging.parent}: "
                "'jitterlab recover' stores them as a partial run"
            ) from None
        (staging / DRAFT_JSON).unlink(missing_ok=True)
        for name in (PARTS_DIR, BLOCKS_DIR):
            shutil.rmtree(staging / name, ignore_errors=True)
        store.discard_if_empty(staging)  # a failed run leaves no empty folder (issue 24 item 13)
        raise
    except BaseException:
        store.discard_if_empty(staging)
        raise


def _measure(
    store: ResultsStore,
    o: NetOptions,
    nodes: Nodes,
    case: Case,
    warn: Warn,
    run_id: str,
    started: dt.datetime,
    staging: Path,
) -> Done:
    scenario, transport, sync, count, impairment = (
        case.scenario,
        case.transport,
        case.sync,
        case.count,
        case.impairment,
    )
    label = case.label
    total = int((o.warmup_s + o.duration_s) * 1e9)
    bar = ProgressBar(label, total, scale=1e9, unit="s")
    interrupted = False
    server_blocks: list[RawSamples] = []
    server_results: list[dict[str, Any]] = []
    log = np.zeros((0, 3), np.int64)
    program, versions = (
        jvm_agent()
        if transport in JVM_TRANSPORTS
        else ((), {"jitterlab-net": nodes.versions["jitterlab-net"]})
    )
    if transport in JVM_TRANSPORTS and nodes.kind == "netns" and nodes.router is None and count > 2:
        raise JitterlabError(
            "pekko-artery between more than 2 namespaces needs --router (each node needs one address)"
        )
    config = {
        "runtime": "jvm" if transport in JVM_TRANSPORTS else "native",
        "technique": transport,
        "variant": case.label.split(" ")[0]
        + (" intra-node" if case.intra else "")
        + (f" {impairment.spec}" if impairment else ""),
        "pairs": max(count - 1, 1),
        "scenario": scenario,
        "transport": transport,
        "nodes": count,
        "payload_bytes": o.payload,
        "duration_s": o.duration_s,
        "warmup_s": o.warmup_s,
        **({"rate_hz": o.rate_hz} if scenario == "open-loop" else {}),
        **({"messages": o.messages, "steps": o.steps} if scenario == "stream" else {}),
        **({"fps": o.fps, "sync": sync, "states_per_frame": o.states} if scenario == "frame-sync" else {}),
        "placement": nodes.kind,
        "intra_node": case.intra,
        "impaired": impairment.spec if impairment else None,
    }
    load_before = environment.loadavg()  # /proc/loadavg before the measurement (and after: meta)
    # what recover stores if this process is killed mid-run: the draft and the agent's parts
    draft = common_meta(run_id, started) | {
        "config": config,
        "status": "partial",
        "partial_reason": "the net coordinator is still running",
        "topology": nodes.describe(),
        "clock": nodes.clock(),
        **({"impairment": impairment.describe()} if impairment else {}),
    }
    with _agents(nodes, count, program) as agents:
        client, servers = agents[0], agents[1:]
        peers = []
        for k, server in enumerate(servers, start=1):
            if transport not in server.transports:
                raise JitterlabError(f"node {k} has no {transport} transport (agent built without it)")
            port = server.serve(transport, nodes.bind(k), nodes.address(0, k), o.port, o.payload, k)
            peers.append(f"{nodes.address(0, k)}:{port}")
        params = {
            "scenario": scenario,
            "transport": transport,
            "peers": ",".join(peers),
            "advertise": nodes.address(1, 0),
            "payload": o.payload,
            "node": 0,
            "duration_ns": int(o.duration_s * 1e9),
            "warmup_ns": int(o.warmup_s * 1e9),
            "rate": f"{o.rate_hz:g}",
            "messages": o.messages,
            "steps": o.steps,
            "fps": f"{o.fps:g}",
            "sync": int(bool(sync)),
            "states": o.states,
            # stream: the sender waits between steps while the coordinator collects
            "step_pause": int(scenario == "stream"),
            # an answer crosses the impaired link twice: wait that long on top before calling it lost
            "timeout_ns": int((o.timeout_s + (2 * impairment.longest_delay_s() if impairment else 0)) * 1e9),
        }
        client.send("run " + " ".join(f"{k}={v}" for k, v in params.items()))
        client.expect("ready")
        atomic_write_json(staging / DRAFT_JSON, draft)
        # ping, frame-sync, open loop: the client's records (node 0 to the node that answered)
        # come as parts, each a raw sample file kept as it came
        client.on_part = write_part = _part_writer(store, staging)
        # stream: the receivers record; the coordinator asks them for parts while it runs
        pull = _server_parts(servers, write_part) if scenario == "stream" else None

        def progress(done: int, _total: int) -> None:
            bar.update(done)
            if pull:
                pull(False)

        if pull:
            client.on_step = lambda: pull(True)

        link = Link(nodes.router, impairment, staging) if impairment and nodes.router else None
        try:
            t_start = _now_ns()
            client.send("go")  # every server listens and the client is connected: the barrier
            try:
                result = parse_result(client.expect("result", progress))
            except KeyboardInterrupt:
                interrupted = True
                client.proc.send_signal(signal.SIGINT)  # the agent stops at its next check and reports
                result = parse_result(client.expect("result"))
            # each agent's whole block goes to a file of its own, never into memory
            blocks = staging / BLOCKS_DIR
            blocks.mkdir(mode=0o700, exist_ok=True)
            records = client.records(blocks / "node-0.jlraw")
            t_end = _now_ns()
            if scenario == "stream":
                for k, server in enumerate(servers, start=1):
                    res, block = server.collect(blocks / f"node-{k}.jlraw")
                    server_results.append(res)
                    server_blocks.append(block)
        finally:
            bar.close()
            if link:
                log = link.stop()
    # finished: the client's whole result replaces its parts (they were only for a coordinator
    # killed mid-run); they go once the run's samples file is written (ResultsStore.commit_blocks)
    # stream: one-way per message, timed at the receiver: a receiver hands its records over
    # with each part (protocol 3) and keeps only the rest for collect, so its memory does not
    # grow with the stream: the run is the parts and the final blocks together
    samples = [*_stream_parts(staging), *server_blocks] if scenario == "stream" else [records]
    net_block = _net_block(o, scenario, transport, result, records, server_results) | {
        "runtime_versions": versions,
        **({"render_nodes": count - 1} if scenario == "frame-sync" else {}),
    }
    meta = measured_meta(run_id, started, load_before) | {
        "config": config,
        "timing": {"t_start_ns": t_start, "t_end_ns": t_end},
        "net": net_block,
        "topology": nodes.describe(),
        "clock": nodes.clock(),
        "obtained": {"warnings": []},
    }
    if impairment:
        meta["impairment"] = impairment.describe() | {"check": check(impairment, log) if log.size else None}
    problems = _problems(net_block, interrupted)
    if problems:
        meta["status"], meta["partial_reason"] = "partial", "; ".join(problems)
        warn(
            CodedWarning(
                "messages-lost" if net_block["lost"] else "unclassified", f"{label}: {meta['partial_reason']}"
            )
        )
    if net_block["generator_limited"]:
        detail = (
            f"{net_block['late_share']:.1%} of sends left more than 1 ms after their schedule "
            f"(max lag {net_block['max_lag_ns'] / 1e6:.2f} ms): the sender, not the link, was measured"
        )
        w = CodedWarning("generator-limited", f"{label}: {detail}")
        meta["obtained"]["warnings"].append(w.as_dict())
        warn(w)
    return Done([_commit(store, staging, meta, samples)], interrupted)


def _now_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def _stream_parts(staging: Path) -> list[RawSamples]:
    """A stream's parts in staging, in the order they came (read as used, never loaded)."""
    return [read_raw_samples(part) for part in sorted((staging / PARTS_DIR).glob("part-*.jlraw"))]


def _problems(net_block: dict[str, Any], interrupted: bool) -> list[str]:
    problems = []
    if interrupted:
        problems.append("interrupted: the samples recorded before the stop are kept")
    if net_block["lost"] > 0:
        problems.append(f"{net_block['lost']} of {net_block['sent']} messages lost")
    dropped = net_block.get("receiver_records_dropped", 0)
    if dropped > 0:  # received and counted, but not stored: the run lacks them
        problems.append(
            f"{dropped} received messages not recorded (more than 4,000,000 between two parts: "
            "the receiver's buffer was full)"
        )
    return problems


def _net_block(
    o: NetOptions,
    scenario: str,
    transport: str,
    result: dict[str, Any],
    records: RawSamples,
    server_results: list[dict[str, Any]],
) -> dict[str, Any]:
    sent = int(result.get("sent", 0))
    late = int(result.get("late", 0))
    block: dict[str, Any] = {
        "scenario": scenario,
        "transport": transport,
        "sent": sent,
        "answered": int(result.get("answered", 0)),
        "lost": int(result.get("lost", 0)),
        "send_failures": int(result.get("send_failures", 0)),
        "late": late,
        "late_share": late / sent if sent else 0.0,
        "max_lag_ns": int(result.get("max_lag_ns", 0)),
        "window_ns": int(result.get("window_ns", 0)),
        "generator_limited": bool(sent and late / sent > LATE_LIMIT),
        "one_way": scenario in ("stream", "frame-sync"),
        "pm_qos": result.get("pm_qos", "refused"),  # /dev/cpu_dma_latency held at 0 on the sender
    }
    if scenario in ("ping", "open-loop"):
        # lost among the messages of the measured window (after the warm-up), beside the
        # stored samples; `lost` counts the warm-up too
        block["measured_lost"] = int(result.get("measured_lost", 0))
    if scenario == "stream":
        steps = []
        for part in str(result.get("steps", "-")).split(","):
            if part and part != "-":
                got, receiver_ns, sender_ns = (int(x) for x in part.split(":"))
                steps.append(
                    {
                        "messages": o.messages,
                        "received": got,
                        "receiver_ns": receiver_ns,
                        "sender_ns": sender_ns,
                        "msg_per_s": got / (receiver_ns / 1e9) if receiver_ns else 0.0,
                    }
                )
        block["steps"] = steps
        # the first step warms up (the JVM compiles the hot path during it): the median of the rest
        steady = steps[1:] if len(steps) > 1 else steps
        block["msg_per_s"] = float(np.median([s["msg_per_s"] for s in steady])) if steady else 0.0
        block["receiver_records_dropped"] = sum(int(r.get("dropped_records", 0)) for r in server_results)
        # windows the sender went on without the receiver's credit (docs/net.md: flow control)
        block["credit_timeouts"] = int(result.get("credit_timeouts", 0))
    if scenario == "frame-sync":
        frames = int(result.get("frames", 0))
        window_s = max(block["window_ns"], 1) / 1e9
        block["frames"] = frames
        block["frames_complete"] = int(result.get("frames_complete", 0))
        block["fps"] = frames / (window_s + o.warmup_s)
        # frame-sync records are frames x render nodes (60 fps x 9 nodes x 10 s: 5,400): small
        block["skew"] = _skew(records)
    return block


def _skew(records: RawSamples) -> dict[str, Any]:
    """Per frame, how much later each render node got it than the first node that did."""
    if records.rows == 0:
        return {}
    order = np.lexsort((records.t_recv_ns, records.seq))
    seq, t = records.seq[order], records.t_recv_ns[order]
    frames = np.flatnonzero(np.r_[True, seq[1:] != seq[:-1]])  # where each frame's records start
    first = np.minimum.reduceat(t, frames)
    frame_index = np.searchsorted(np.unique(seq), seq)
    skew = t - first[frame_index]
    per_frame = np.maximum.reduceat(skew, frames)
    nodes = records.records["dst_node"][order]
    per_node = {}
    for node in np.unique(nodes):
        mine = skew[nodes == node]
        per_node[str(int(node))] = {"p50_ns": float(percentiles(mine, (50.0,))[0]), "max_ns": int(mine.max())}
    frame_p = percentiles(per_frame, (50.0, 99.0))
    return {
        "frame_p50_ns": float(frame_p[0]),
        "frame_p99_ns": float(frame_p[1]),
        "frame_max_ns": int(per_frame.max()),
        "frames": int(per_frame.size),  # how many frames the p99 is of (resolved or not)
        "per_node": per_node,
    }


PART_NS = 1_000_000_000  # how often the coordinator asks a stream's receivers for their records

PartWriter = Callable[[bytes], None]


def _part_writer(store: ResultsStore, staging: Path) -> PartWriter:
    """Each part an agent hands over (a raw sample file of records in the columns the
    finished run stores) as the next part in staging, byte for byte."""
    index = 0

    def write(data: bytes) -> None:
        nonlocal index
        if len(data) <= HEADER_BYTES + FOOTER_BYTES:  # no record in it
            return
        index += 1
        store.write_raw_part(staging, index, data)

    return write


def _server_parts(servers: list[Agent], write: PartWriter) -> Callable[[bool], None]:
    """Stream: what each receiver recorded since the last pull, as a part (sender to receiver,
    as the finished run stores them), so that a coordinator killed mid-run leaves them in
    staging. ``pull(True)`` between two steps, while the sender waits and nothing is measured;
    ``pull(False)`` during a step only when the last pull is a second old (a step longer than
    a second: that pull takes CPU from the measurement, docs/net.md). An agent that cannot
    answer (one that died, or an older build without ``part``) ends the pulling; the run
    itself goes on and its end says why."""
    next_pull = _now_ns() + PART_NS
    pulling = True

    def pull(between_steps: bool) -> None:
        nonlocal next_pull, pulling
        if not pulling or (not between_steps and _now_ns() < next_pull):
            return
        next_pull = _now_ns() + PART_NS
        for server in servers:
            try:
                part = server.pull_part()
            except JitterlabError:
                pulling = False
                return
            write(part)

    return pull


def _commit(store: ResultsStore, staging: Path, meta: dict[str, Any], blocks: list[RawSamples]) -> Run:
    """The agents' blocks (raw files of the run format's net records) stored in pair, seq
    order, streaming (an external merge sort: memory independent of the run's size)."""
    return store.commit_blocks(staging, blocks, meta)


ROUND_TRIP_TOLERANCE_NS = 500_000  # the issue's ±0.5 ms on the added round trip


def check_impairment(
    store: ResultsStore, o: NetOptions, nodes: Nodes, impairment: Impairment, warn: Warn
) -> tuple[list[Run], dict[str, Any]]:
    """Ping across the router without and with the impairment: the engine's realised delay per
    packet against the model, and the round trip it adds against twice the model's median
    (each way once)."""
    cases = [Case("ping", o.transports[0]), Case("ping", o.transports[0], impairment=impairment)]
    runs = run_plan(bench_plan(o, cases, lambda: nullcontext(nodes)), store, warn).runs
    if len(runs) < 2:
        raise JitterlabError("the impairment check was interrupted")
    base, impaired = runs
    added = float(percentiles(impaired.latency_ns, (50.0,))[0] - percentiles(base.latency_ns, (50.0,))[0])
    expected = (
        2 * float(percentiles(impairment.model.base.values, (50.0,))[0])
        if impairment.model.base is not None
        else float("nan")
    )
    per_packet = (impaired.meta.get("impairment") or {}).get("check") or {}
    verdict = {
        "per_packet": per_packet,
        "round_trip_added_ns": added,
        "round_trip_expected_ns": expected,
        "round_trip_ok": abs(added - expected) <= ROUND_TRIP_TOLERANCE_NS,
        "passed": bool(per_packet.get("reproduced")) and abs(added - expected) <= ROUND_TRIP_TOLERANCE_NS,
    }
    store.amend(impaired, {"impairment": impaired.meta["impairment"] | {"round_trip": verdict}})
    return runs, verdict

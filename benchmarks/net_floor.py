"""Inter-node floor targets (issue 14), measured side by side in one run.

Contenders, between two network namespaces joined by one veth pair:
- ``sockperf ping-pong`` (Debian's sockperf) over UDP and TCP, 64-byte messages: the
  reference floor. sockperf prints half the round trip as "latency"; its percentiles are
  doubled here to compare round trips with round trips. jitterlab's sender holds
  /dev/cpu_dma_latency at 0 (idle vCPUs wake slowly here); this script holds it for the
  whole run, so sockperf is measured under the same condition;
- ``jitterlab net bench --scenario ping`` over udp, tcp, caf-io and pekko-artery, 64 bytes;
- ``jitterlab net bench --scenario stream`` over every transport (messages/s, lost);
- topology up and down, and what a coordinator killed with SIGKILL leaves behind.

Targets: udp/tcp round-trip p50 within 1.2x of sockperf's; caf-io and pekko-artery stored
with their full distributions; the Artery stream >= 90,000 msg/s with 0 messages lost;
topology up and down in < 1 s each; nothing left after kill -9 plus ``net topo down``.

Usage: python benchmarks/net_floor.py [--duration 10] [--ping-only] (as root); --ping-only
measures the udp and tcp ping beside sockperf and nothing else (the floor alone, in seconds).
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from jitterlab.measure.runner import run_plan
from jitterlab.net import topo
from jitterlab.net.bench import Case, NetOptions, bench_plan
from jitterlab.net.nodes import from_topology
from jitterlab.net.options import TRANSPORTS
from jitterlab.store import ResultsStore

PORT = 11311


def sockperf_rtt_p50_us(t: topo.Topology, tcp: bool, duration: float) -> float:
    """sockperf's p50 "latency" (half a round trip, µs) doubled."""
    server_addr = t.address(0, 1)
    extra = ["--tcp"] if tcp else []
    port = str(PORT + int(tcp))
    server = subprocess.Popen(
        ["ip", "netns", "exec", t.nodes[1], "sockperf", "sr", "-i", server_addr, "-p", port, *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        out = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                t.nodes[0],
                "sockperf",
                "pp",
                "-i",
                server_addr,
                "-p",
                port,
                "-m",
                "64",
                "-t",
                f"{duration:g}",
                *extra,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        server.terminate()
        server.wait()
    match = re.search(r"percentile 50\.000 =\s+([0-9.]+)", out)
    if not match:
        raise SystemExit(f"sockperf printed no p50:\n{out}")
    return 2 * float(match.group(1))


def killed_coordinator_leaves_nothing(store: Path) -> tuple[bool, str]:
    """Start a bench, SIGKILL it once its namespaces exist, then `net topo down --all`."""
    before = set(topo.namespaces())
    proc = subprocess.Popen(
        [sys.executable, "-m", "jitterlab", "net", "bench", "--duration", "30", "--store", str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (set(topo.namespaces()) - before):
        time.sleep(0.05)
    time.sleep(2)  # agents running
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(1)
    agents = subprocess.run(
        ["pgrep", "-f", "bin/jitterlab-net"], capture_output=True, text=True
    ).stdout.split()
    left_before = sorted(set(topo.namespaces()) - before)
    topo.down_all()
    left_after = sorted(set(topo.namespaces()) - before)
    return (
        not left_after and not agents
    ), f"after kill -9: {len(left_before)} namespaces, {len(agents)} agents; after down: {len(left_after)}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument(
        "--ping-only", action="store_true", help="udp and tcp ping beside sockperf only (no stream, no JVM)"
    )
    args = parser.parse_args()
    failures = []
    if shutil.which("sockperf") is None:
        raise SystemExit("net_floor.py compares with sockperf: install the package sockperf")
    with tempfile.TemporaryDirectory() as tmp, open("/dev/cpu_dma_latency", "wb", buffering=0) as awake:
        awake.write(b"\0\0\0\0")  # held while the file is open
        store = ResultsStore(Path(tmp) / "store")
        started = time.monotonic()
        t = topo.up(2)
        up_s = time.monotonic() - started
        try:
            nodes = from_topology(t)
            o = NetOptions(duration_s=args.duration, warmup_s=2.0, messages=100_000, steps=5)
            if args.ping_only:
                cases = [Case("ping", tr) for tr in ("udp", "tcp")]
            else:
                cases = [Case("ping", tr) for tr in TRANSPORTS] + [Case("stream", tr) for tr in TRANSPORTS]
            runs = run_plan(bench_plan(o, cases, lambda: nullcontext(nodes)), store).runs
            floor = {tr: sockperf_rtt_p50_us(t, tr == "tcp", args.duration) for tr in ("udp", "tcp")}
        finally:
            started = time.monotonic()
            topo.down(t.name)
            down_s = time.monotonic() - started
        print("64-byte round trip between two namespaces (p50, µs)")
        for run in runs:
            if run.config["scenario"] != "ping":
                continue
            tr = run.config["transport"]
            p50 = float(np.median(run.latency_ns)) / 1e3
            p99 = float(np.percentile(run.latency_ns, 99)) / 1e3
            if tr in floor:
                ratio = p50 / floor[tr]
                ok = ratio <= 1.2
                failures += [] if ok else [f"{tr} ping {ratio:.2f}x sockperf"]
                print(
                    f"  {tr:12} jitterlab {p50:8.1f}  sockperf {floor[tr]:8.1f}  ratio {ratio:.2f}x (target <= 1.2x) {'met' if ok else 'MISSED'}   p99 {p99:.1f}"
                )
            else:
                print(
                    f"  {tr:12} jitterlab {p50:8.1f}  (no sockperf peer)  p99 {p99:.1f}  samples {run.meta['samples']['rows']}"
                )
        print("stream, 64-byte messages (median of steps 2-5 of 100,000; step 1 warms up)")
        for run in runs:
            if run.config["scenario"] == "stream":
                net, tr = run.meta["net"], run.config["transport"]
                verdict = ""
                if tr == "pekko-artery":
                    ok = net["msg_per_s"] >= 90_000 and net["lost"] == 0
                    failures += [] if ok else ["Artery stream below 90,000 msg/s or lossy"]
                    verdict = f"(target >= 90,000, 0 lost) {'met' if ok else 'MISSED'}"
                print(f"  {tr:12} {net['msg_per_s']:>12,.0f} msg/s   lost {net['lost']} {verdict}")
        if args.ping_only:
            print("all targets met" if not failures else "MISSED: " + "; ".join(failures))
            return 0 if not failures else 1
        ok_up = up_s < 1 and down_s < 1
        failures += [] if ok_up else ["topology up/down >= 1 s"]
        print(
            f"topology: up {up_s:.2f} s, down {down_s:.2f} s (target < 1 s each) {'met' if ok_up else 'MISSED'}"
        )
        clean, detail = killed_coordinator_leaves_nothing(Path(tmp) / "killed")
        failures += [] if clean else ["leftovers after kill -9"]
        print(f"kill -9 of the coordinator: {detail} {'met' if clean else 'MISSED'}")
    print("all targets met" if not failures else "MISSED: " + "; ".join(failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())

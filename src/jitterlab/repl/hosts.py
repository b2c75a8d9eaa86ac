"""``repl bench --hosts``: the replication server on one host, the client fleets on others.

Started by ``repl bench`` in place of the native tool (``python -m jitterlab.repl.hosts``), this
coordinator behaves like it: it takes the tool's arguments and ``--out DIR``, prints
``progress`` lines, and leaves ``samples.jlraw``, ``harness.json``, ``generator_lag.i64`` and
``server_ticks.i64`` in DIR, so the run is stored like any other.

Each host runs ``jitterlab-repl`` over ssh, started the way ``net bench --hosts`` starts its
agents (net/agents.py: ``ssh -o BatchMode=yes … -- TARGET 'program args'``, no local shell,
the program beside the host's agent): ``--role server`` on the first host, ``--role fleet`` with
its share of the clients on each other host. The server says ``serving PORT``, each fleet
``ready``; then every part gets ``go`` at once and starts its schedule a fixed lead later (so the
parts' windows differ by the skew of that line's delivery, about a network round trip). Each
part sends its files back on stdout; this coordinator joins them: the server's counters and
ticks, the fleets' counters summed, the observers' samples (all in the first fleet), every
fleet's generator lag, each host's UDP counters. Ctrl-C (or SIGTERM) sends ``stop`` to every
part, which stops it early and keeps what it recorded.

Bad input and an unreachable host: one line on stderr (``…: error: …``), exit code 2.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from jitterlab.core.errors import JitterlabError
from jitterlab.core.version import __version__
from jitterlab.net.agents import Launcher, spawn, where
from jitterlab.repl.snmp import delta, parse_udp

PROGRAM = "jitterlab-repl"
NAME = "jitterlab-repl-hosts"
FILES = ("samples.jlraw", "generator_lag.i64", "server_ticks.i64", "harness.json")


def plan_json(launchers: list[Launcher], server_addresses: list[str], clients: int) -> str:
    """What the coordinator needs to know of the nodes, as one argv word."""
    return json.dumps(
        {
            "nodes": [
                {"node": x.node, "ssh": x.ssh, "ssh_options": list(x.ssh_options), "agent": x.agent}
                for x in launchers
            ],
            "server_addresses": server_addresses,  # how node k (1..K) reaches node 0
            "clients": clients,
        }
    )


@dataclass
class Part:
    """One host's ``jitterlab-repl``: its process and what it sent back."""

    role: str
    launcher: Launcher
    proc: Any = None
    files: dict[str, bytes] = field(default_factory=dict)
    ended: bool = False
    stderr: str = ""
    forward_progress: bool = False

    def start(self, args: list[str]) -> None:
        program = (self.launcher.tool(PROGRAM), "--role", self.role, *args, "--out", "-")
        self.proc = spawn(replace(self.launcher, program=program))

    def _out(self) -> IO[bytes]:
        out: IO[bytes] = self.proc.stdout
        return out

    def expect(self, word: str) -> str:
        """The first line, which must start with ``word``; else one line naming the host and why."""
        line = self._out().readline().decode(errors="replace")
        if not line.startswith(word):
            try:
                err = self.proc.communicate(timeout=5)[1].decode(errors="replace").strip()
            except Exception:  # a process that will not end: say what we have
                err = ""
            last = err.splitlines()[-1] if err else line.strip() or "no answer"
            last = last.split(": error: ", 1)[-1]
            raise JitterlabError(f"{where(self.launcher)}: the replication {self.role} did not start: {last}")
        version = line.split("version=", 1)[1].strip() if "version=" in line else "unknown"
        if version != __version__:
            raise JitterlabError(
                f"{where(self.launcher)}: jitterlab-repl version {version} differs from this coordinator's "
                f"{__version__}: install the same jitterlab there"
            )
        return line.strip()

    def send(self, line: str) -> None:
        stdin: IO[bytes] = self.proc.stdin
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            stdin.write((line + "\n").encode())
            stdin.flush()

    def collect(self) -> None:
        """Progress lines (forwarded when asked), then the files, until ``end`` or EOF."""
        out = self._out()
        while True:
            line = out.readline().decode(errors="replace")
            if not line:
                break
            if line.startswith("progress "):
                if self.forward_progress:
                    sys.stdout.write(line)
                    sys.stdout.flush()
            elif line.startswith("file "):
                _, name, size = line.split()
                data = out.read(int(size))
                if name in FILES:
                    self.files[name] = data
            elif line.startswith("end"):
                self.ended = True
                break
        with contextlib.suppress(Exception):  # it has finished; closing stdin ends its ssh session
            self.proc.stdin.close()
        self.stderr = self.proc.stderr.read().decode(errors="replace").strip()
        self.proc.wait()

    def harness(self) -> dict[str, Any]:
        try:
            doc: dict[str, Any] = json.loads(self.files.get("harness.json", b"{}"))
        except ValueError:
            doc = {}
        return doc


def _udp(part: dict[str, Any]) -> dict[str, int]:
    snmp = part.get("repl", {}).get("udp_snmp", {})
    return delta(parse_udp(snmp.get("before", "")), parse_udp(snmp.get("after", "")))


SUMMED = (
    "poses_sent",
    "bytes_out",
    "send_failures",
    "datagrams_in",
    "bytes_in",
    "bad_datagrams",
    "pings_sent",
    "pongs",
    "send_cpu_ns",
    "receive_cpu_ns",
    "updates_recorded",
)


def merge(server: Part, fleets: list[Part]) -> dict[str, Any]:
    """One harness.json from the server's and the fleets': what the one-process tool writes."""
    doc = server.harness()
    repl = doc.setdefault("repl", {})
    parts = [f.harness() for f in fleets]
    fleet_blocks = [p.get("repl", {}).get("clients_fleet", {}) for p in parts]
    joined = {key: sum(int(b.get(key, 0)) for b in fleet_blocks) for key in SUMMED}
    joined["window_ns"] = max((int(b.get("window_ns", 0)) for b in fleet_blocks), default=0)
    joined["rcvbuf_bytes"] = next((b["rcvbuf_bytes"] for b in fleet_blocks if b.get("rcvbuf_bytes")), 0)
    repl["clients_fleet"] = joined
    repl["ping_rtt_ns"] = [rtt for p in parts for rtt in p.get("repl", {}).get("ping_rtt_ns", [])]
    repl["fleets"] = [
        fleet_doc | {"host": f.launcher.node, "netns": ""}
        for f, p in zip(fleets, parts, strict=True)
        for fleet_doc in p.get("repl", {}).get("fleets", [])
    ]
    threads = repl.setdefault("cpu_time", {}).setdefault("threads", {})
    for role in ("clients_send", "clients_receive"):
        times = [p.get("repl", {}).get("cpu_time", {}).get("threads", {}).get(role, {}) for p in parts]
        threads[role] = {k: sum(int(t.get(k, 0)) for t in times) for k in ("user_ns", "sys_ns")}
    # each host's own counters, summed (the coordinator's /proc/net/snmp is no host's)
    hosts_udp = [_udp(doc), *(_udp(p) for p in parts)]
    repl["udp_counters_by_host"] = {
        part.launcher.node: counters for part, counters in zip([server, *fleets], hosts_udp, strict=True)
    }
    repl["udp_counters"] = (
        {name: sum(c.get(name, 0) for c in hosts_udp) for name in hosts_udp[0]} if all(hosts_udp) else {}
    )
    doc["placements"] = [
        placement | {"role": f"{placement.get('role', '')}@{part.launcher.node}"}
        for part, h in zip([server, *fleets], [doc, *parts], strict=True)
        for placement in h.get("placements", [])
    ]
    seen: set[str] = set()
    warnings = []
    for h in (doc, *parts):
        for w in h.get("warnings", []):
            key = json.dumps(w, sort_keys=True)
            if key not in seen:
                seen.add(key)
                warnings.append(w)
    doc["warnings"] = warnings
    reasons = [h.get("partial_reason", "") for h in (doc, *parts) if h.get("status") == "partial"]
    if reasons:
        doc["status"] = "partial"
        doc["partial_reason"] = "; ".join(dict.fromkeys(r for r in reasons if r)) or "partial"
    return doc


def _fail(message: str) -> int:
    print(f"{NAME}: error: {message}", file=sys.stderr)
    return 2


def run(plan: dict[str, Any], args: list[str], out: Path) -> int:
    nodes = [
        Launcher(node=n["node"], ssh=n["ssh"], ssh_options=tuple(n["ssh_options"]), agent=n.get("agent"))
        for n in plan["nodes"]
    ]
    clients, fleets_n = int(plan["clients"]), len(nodes) - 1
    server = Part("server", nodes[0], forward_progress=True)
    fleets = [Part("fleet", launcher) for launcher in nodes[1:]]
    stopping = threading.Event()

    def stop(_signum: int, _frame: Any) -> None:
        stopping.set()
        for part in (server, *fleets):
            if part.proc is not None:
                part.send("stop")

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    started: list[Part] = []
    try:
        server.start([*args, "--address", "0.0.0.0"])
        started.append(server)
        port = int(server.expect("serving").split()[1])
        for k, fleet in enumerate(fleets):
            first = clients * k // fleets_n
            count = clients * (k + 1) // fleets_n - first
            fleet.start(
                [
                    *args,
                    *("--first-client", str(first), "--fleet-clients", str(count)),
                    *("--server-address", plan["server_addresses"][k], "--port", str(port)),
                ]
            )
            started.append(fleet)
            fleet.expect("ready")
    except JitterlabError as e:
        for part in started:
            part.send("stop")
            with contextlib.suppress(Exception):
                part.proc.kill()
        return _fail(str(e))
    if stopping.is_set():
        for part in started:
            part.send("stop")
    for part in started:
        part.send("go")
    readers = [threading.Thread(target=part.collect, daemon=True) for part in started]
    for r in readers:
        r.start()
    for r in readers:
        while r.is_alive():  # a signal handler runs between the joins
            r.join(0.2)
    missing = [p for p in started if "harness.json" not in p.files]
    if missing:
        p = missing[0]
        why = (p.stderr.splitlines() or [f"exit code {p.proc.returncode}"])[-1]
        return _fail(f"{where(p.launcher)}: the replication {p.role} sent no results: {why}")
    for name, data in (
        ("samples.jlraw", fleets[0].files.get("samples.jlraw", b"")),
        ("server_ticks.i64", server.files.get("server_ticks.i64", b"")),
        ("generator_lag.i64", b"".join(f.files.get("generator_lag.i64", b"") for f in fleets)),
    ):
        (out / name).write_bytes(data)
    tmp = out / "harness.json.tmp"
    tmp.write_text(json.dumps(merge(server, fleets)))
    tmp.rename(out / "harness.json")
    return 130 if stopping.is_set() else 0


def main(argv: list[str] | None = None) -> int:
    """``--plan JSON`` [the tool's arguments] ``--out DIR``."""
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        plan = json.loads(words[words.index("--plan") + 1])
        out = Path(words[words.index("--out") + 1])
    except (ValueError, IndexError):
        return _fail("usage: python -m jitterlab.repl.hosts --plan JSON [tool arguments] --out DIR")
    args, skip = [], False
    for word in words:
        if skip or word in ("--plan", "--out"):
            skip = not skip
            continue
        args.append(word)
    return run(plan, args, out)


if __name__ == "__main__":
    raise SystemExit(main())

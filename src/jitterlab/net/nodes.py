"""Where the agents run: the namespaces of a topology, or real hosts listed in hosts.toml.

Both give the benchmark the same things: a launcher per node, the address one node uses for
another, the router (for impairment) and the clock the samples are on. Namespaces share the
host's CLOCK_MONOTONIC, so one-way times between them are exact; separate hosts do not, so
their one-way times are marked unsynchronised unless hosts.toml names how the clocks are
synchronised and the error bound.
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import owner_name
from jitterlab.core.version import __version__
from jitterlab.net import topo as topology
from jitterlab.net.agents import Launcher


@dataclass
class Nodes:
    kind: str  # "netns" or "hosts"
    launchers: list[Launcher]
    addresses: list[list[str]]  # addresses[src][dst]
    router: str | None = None
    topo: topology.Topology | None = None
    clock_block: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=lambda: {"jitterlab-net": __version__})

    @property
    def count(self) -> int:
        return len(self.launchers)

    def launcher(self, i: int) -> Launcher:
        return self.launchers[i]

    def address(self, src: int, dst: int) -> str:
        return self.addresses[src][dst]

    def bind(self, _node: int) -> str:
        return "0.0.0.0"

    def clock(self) -> dict[str, Any]:
        return self.clock_block

    def describe(self) -> dict[str, Any]:
        if self.topo is not None:
            return {"kind": "netns", **self.topo.to_json()}
        return {"kind": "hosts", "nodes": [launcher.node for launcher in self.launchers]}


def from_topology(topo: topology.Topology) -> Nodes:
    n = len(topo.nodes)
    return Nodes(
        kind="netns",
        launchers=[Launcher(node=f"n{i}", netns=ns) for i, ns in enumerate(topo.nodes)],
        addresses=[[topo.address(s, d) if s != d else "127.0.0.1" for d in range(n)] for s in range(n)],
        router=topo.router,
        topo=topo,
        clock_block={
            "mode": "shared",
            "method": "one kernel: namespaces share CLOCK_MONOTONIC",
            "error_bound_ns": 0,
        },
    )


@contextmanager
def namespace_nodes(
    name: str | None, nodes: int, router: bool, shape: dict[str, str] | None
) -> Iterator[Nodes]:
    """An existing topology by name, or one made now and removed on every way out."""
    if name:
        topo = topology.load(name)
        if len(topo.nodes) < nodes:
            raise JitterlabError(f"topology {name} has {len(topo.nodes)} nodes; this needs {nodes}")
        yield from_topology(topo)
        return
    topo = topology.up(nodes, router=router, shape=shape)
    try:
        yield from_topology(topo)
    finally:
        topology.down(topo.name)


# what a hosts.toml value may hold: each goes into an argv word, a file name or the agents'
# line protocol (a space or a newline there would inject protocol words)
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SSH_TARGET = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._%+-]*(@[A-Za-z0-9._:\[\]%-]+)?|\[[0-9A-Fa-f:.%]+\]")
_HOST_NAME = re.compile(
    r"[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*"
)


def _check_host(path: Path, i: int, h: dict[str, Any]) -> None:
    """One line, exit 2, for a host whose name, ssh target or address is not what it claims."""
    where = f"--hosts {path}: host {i + 1}"
    if not _NODE_NAME.fullmatch(h["name"]):
        raise JitterlabError(f"{where}: name {h['name'][:40]!r} must be letters, digits, '.', '_' or '-'")
    if h["ssh"].startswith("-") or not _SSH_TARGET.fullmatch(h["ssh"]):
        raise JitterlabError(
            f"{where}: ssh {h['ssh'][:40]!r} is not an ssh target (user@host or host; ssh options go in ssh_options)"
        )
    address = h["address"]
    try:
        ipaddress.ip_address(address)
    except ValueError:
        if len(address) > 253 or not _HOST_NAME.fullmatch(address):
            raise JitterlabError(
                f"{where}: address {address[:40]!r} is neither an IP address nor a host name"
            ) from None
    agent = h.get("agent")
    if agent is not None and (not isinstance(agent, str) or not agent.startswith("/") or "\n" in agent):
        raise JitterlabError(f"{where}: agent must be an absolute path on that host")


def _foreign_file(st: os.stat_result) -> str:
    """Why a file is not the invoking user's alone ('' when it is: theirs or root's, and
    writable by no one else)."""
    if st.st_uid not in (os.geteuid(), 0):
        return f"belongs to {owner_name(st.st_uid)}"
    if st.st_mode & 0o022:
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):o})"
    return ""


def from_hosts(path: Path) -> Nodes:
    """hosts.toml: ``[[host]]`` tables with name, address, ssh (target), and optional agent
    (path there), ssh_options (list); optional top-level ``[clock]`` with mode and error_ns."""
    try:
        with open(path, "rb") as f:
            owner = os.fstat(f.fileno())  # of the file read, not of whatever is at the name later
            doc = tomllib.loads(f.read().decode())
    except FileNotFoundError:
        raise JitterlabError(f"--hosts {path}: no such file") from None
    except UnicodeDecodeError as e:
        raise JitterlabError(
            f"--hosts {path}: not UTF-8 text (byte {e.start}); TOML files are UTF-8"
        ) from None
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise JitterlabError(f"--hosts {path}: not a readable TOML file ({e})") from None
    hosts = doc.get("host")
    if not isinstance(hosts, list) or len(hosts) < 2:
        raise JitterlabError(f"--hosts {path}: needs at least two [[host]] tables (a sender and a receiver)")
    launchers, addresses = [], []
    foreign = _foreign_file(owner)
    for i, h in enumerate(hosts):
        if not isinstance(h, dict):
            raise JitterlabError(f"--hosts {path}: host {i + 1} is not a [[host]] table")
        missing = [k for k in ("name", "address", "ssh") if not isinstance(h.get(k), str)]
        if missing:
            raise JitterlabError(f"--hosts {path}: host {i + 1} lacks {', '.join(missing)}")
        _check_host(path, i, h)
        options = h.get("ssh_options", [])
        if not isinstance(options, list) or not all(isinstance(x, str) for x in options):
            raise JitterlabError(f"--hosts {path}: host {h['name']}: ssh_options must be a list of strings")
        if options and foreign:
            # ssh options run commands on this machine (ProxyCommand, LocalCommand, -F):
            # only the invoking user's own file may give them (issue 24: a second user's file)
            raise JitterlabError(
                f"--hosts {path}: host {h['name']}: ssh_options are taken only from a file of yours "
                f"that no one else can write to; this one {foreign}"
            )
        launchers.append(
            Launcher(node=h["name"], ssh=h["ssh"], ssh_options=tuple(options), agent=h.get("agent"))
        )
        addresses.append(h["address"])
    clock = doc.get("clock", {})
    if not isinstance(clock, dict) or not all(isinstance(v, str | int) for v in clock.values()):
        raise JitterlabError(f"--hosts {path}: [clock] must be a table of mode, method and error_ns")
    mode = clock.get("mode", "unsynchronised")
    clock_block = {
        "mode": mode,
        "method": clock.get(
            "method",
            "none: one-way times across hosts include the clock offset" if mode == "unsynchronised" else mode,
        ),
        "error_bound_ns": clock.get("error_ns"),
    }
    return Nodes(
        kind="hosts",
        launchers=launchers,
        addresses=[list(addresses) for _ in hosts],
        clock_block=clock_block,
    )


def intra_node(nodes: Nodes, count: int) -> Nodes:
    """Every agent on node 0, talking over its loopback: the seed's intra-node comparison."""
    first = nodes.launchers[0]
    return Nodes(
        kind=f"{nodes.kind}-intra-node",
        launchers=[first] * count,
        addresses=[["127.0.0.1"] * count for _ in range(count)],
        router=None,
        topo=nodes.topo,
        clock_block=nodes.clock_block | {"mode": "shared", "error_bound_ns": 0},
    )

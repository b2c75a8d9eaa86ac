"""Test networks made of Linux network namespaces (``jitterlab net topo``).

K node namespaces, either joined directly (one veth pair per pair of nodes) or each by one
veth pair to a router namespace that forwards between them. Addresses come from a private
range used only inside the namespaces; a range that overlaps one of the host's routes is
refused. Every topology is recorded in a state file under ``/run/jitterlab/net``, so that
``list`` finds and ``down`` removes what a killed run left behind. Deleting a namespace
deletes its veth ends and its iptables rules, so removing the namespaces removes everything.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import atomic_write_json, make_dir
from jitterlab.core.signals import held_stops

STATE_DIR = Path(os.environ.get("JITTERLAB_NET_STATE", "/run/jitterlab/net"))
PREFIX = "jl-"  # every namespace jitterlab makes starts with this
# a topology's name is a file name in STATE_DIR and the prefix of its namespaces: never a path
_NAME = re.compile(r"jl-[0-9a-z]{1,16}")
DEFAULT_RANGE = "10.213.0.0/16"
MAX_NODES = 64


@dataclass
class Topology:
    """What ``up`` made: namespaces, links and the address of each node as every other sees it."""

    name: str
    nodes: list[str]  # namespace names, node index = position
    router: str | None
    subnet: str
    links: list[dict[str, Any]] = field(default_factory=list)  # {a, b, a_addr, b_addr, a_dev, b_dev}
    shape: dict[str, str] = field(default_factory=dict)
    created_by_pid: int = 0
    created_s: float = 0.0

    def address(self, src: int, dst: int) -> str:
        """The address node ``src`` uses to reach node ``dst``."""
        for link in self.links:
            if self.router is None and {link["a"], link["b"]} == {src, dst}:
                return str(link["b_addr"] if link["b"] == dst else link["a_addr"])
            if self.router is not None and link["a"] == dst:
                return str(link["a_addr"])
        raise JitterlabError(f"topology {self.name} has no path from node {src} to node {dst}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def require_tools() -> None:
    """Root (or a user namespace) and iproute2, named with their package when missing."""
    if shutil.which("ip") is None:
        raise JitterlabError(
            "the 'ip' command is missing: install the package iproute2 (apt-get install iproute2)"
        )
    if os.geteuid() != 0:
        raise JitterlabError(
            "network namespaces need root (CAP_NET_ADMIN, CAP_SYS_ADMIN): run this command as root (sudo)"
        )


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv`` run to its end, a stop signal held until then (:func:`held_stops`): a stop
    inside ``Popen()`` left the child running unknown to this process, and
    ``subprocess.run`` interrupted by Ctrl-C kills its child without waiting for it; either
    way an ``ip netns add`` could make its namespace after the cleanup had listed the ones to
    remove (issue 24 item 5: reproduced, a namespace left with no state file)."""
    with held_stops():
        return subprocess.run(argv, capture_output=True, text=True, check=False)


def _ip(*args: str, netns: str | None = None) -> None:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    done = _run(argv)
    if done.returncode != 0:
        raise JitterlabError(f"{' '.join(argv)}: {done.stderr.strip() or 'failed'}")


def _run_in(netns: str, *argv: str) -> None:
    done = _run(["ip", "netns", "exec", netns, *argv])
    if done.returncode != 0:
        raise JitterlabError(f"{' '.join(argv)} in {netns}: {done.stderr.strip() or 'failed'}")


def host_networks() -> list[ipaddress.IPv4Network]:
    """The networks of the host's IPv4 routes (the default route excluded)."""
    done = subprocess.run(
        ["ip", "-4", "-j", "route", "show", "table", "all"], capture_output=True, text=True, check=False
    )
    networks = []
    for route in json.loads(done.stdout or "[]"):
        dst = route.get("dst", "")
        if dst and dst != "default":
            try:
                networks.append(ipaddress.ip_network(dst, strict=False))
            except ValueError:
                continue
    return [n for n in networks if isinstance(n, ipaddress.IPv4Network)]


def check_range(subnet: str) -> ipaddress.IPv4Network:
    try:
        net = ipaddress.ip_network(subnet, strict=True)
    except ValueError as e:
        raise JitterlabError(f"--subnet {subnet!r} is not a network like {DEFAULT_RANGE} ({e})") from None
    if not isinstance(net, ipaddress.IPv4Network) or not net.is_private or net.prefixlen > 16:
        raise JitterlabError(
            f"--subnet must be a private IPv4 /16 or larger, like {DEFAULT_RANGE}; got {subnet}"
        )
    for used in host_networks():
        if net.overlaps(used) and not str(used).startswith("127."):
            raise JitterlabError(
                f"--subnet {subnet} overlaps the host's route to {used}: pick another private range"
            )
    return net


def _shape(netns: str, dev: str, shape: dict[str, str]) -> None:
    """A token bucket on the device's egress (tbf works on this kernel; netem does not)."""
    if "rate" in shape:
        _ip("link", "set", dev, "txqueuelen", "1000", netns=netns)
        _run_in(
            netns,
            "tc",
            "qdisc",
            "add",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            shape["rate"],
            "burst",
            "64kb",
            "latency",
            "1s",
        )


def up(
    nodes: int, router: bool = False, shape: dict[str, str] | None = None, subnet: str = DEFAULT_RANGE
) -> Topology:
    """Make the namespaces and links; on any failure remove what was made and raise."""
    if nodes < 2:
        raise JitterlabError(f"--nodes must be at least 2 (a sender and a receiver), got {nodes}")
    if nodes > MAX_NODES:
        raise JitterlabError(f"--nodes must be at most {MAX_NODES}, got {nodes}")
    require_tools()
    net = check_range(subnet)
    if shape and "rate" in shape and shutil.which("tc") is None:
        raise JitterlabError("--shape needs tc: install the package iproute2")
    name = f"{PREFIX}{os.urandom(3).hex()}"
    topo = Topology(
        name=name,
        nodes=[f"{name}-n{i}" for i in range(nodes)],
        router=f"{name}-r" if router else None,
        subnet=str(net),
        shape=dict(shape or {}),
        created_by_pid=os.getpid(),
        created_s=time.time(),
    )
    try:
        _save(topo)  # first: a run killed halfway leaves a state file that names what to remove
        base = int(net.network_address)
        for ns in [*topo.nodes, *([topo.router] if topo.router else [])]:
            _ip("netns", "add", ns)
            _ip("link", "set", "lo", "up", netns=ns)
        if topo.router:
            _run_in(topo.router, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            for i, ns in enumerate(topo.nodes):  # node i: 10.213.(i+1).2/24, its router side .1
                block = ipaddress.IPv4Address(base + (i + 1) * 256)
                _veth(topo, (i, ns, f"v{i}", str(block + 2)), (-1, topo.router, f"r{i}", str(block + 1)), 24)
                _ip("route", "add", "default", "via", str(block + 1), netns=ns)
        else:
            pairs = [(a, b) for a in range(nodes) for b in range(a + 1, nodes)]
            for k, (a, b) in enumerate(pairs):  # one /30 per pair of nodes
                block = ipaddress.IPv4Address(base + (k + 1) * 4)
                _veth(
                    topo,
                    (a, topo.nodes[a], f"p{b}", str(block + 1)),
                    (b, topo.nodes[b], f"p{a}", str(block + 2)),
                    30,
                )
        _save(topo)
    except BaseException:
        down(topo.name)
        raise
    return topo


def _veth(topo: Topology, a: tuple[int, str, str, str], b: tuple[int, str, str, str], prefix: int) -> None:
    """A veth pair between two namespaces, each end (node, namespace, device, address)
    addressed, up and shaped, and recorded in ``topo.links`` (node -1 is the router)."""
    (a_node, a_ns, a_dev, a_addr), (b_node, b_ns, b_dev, b_addr) = a, b
    _ip("link", "add", a_dev, "netns", a_ns, "type", "veth", "peer", "name", b_dev, "netns", b_ns)
    for ns, dev, addr in ((a_ns, a_dev, a_addr), (b_ns, b_dev, b_addr)):
        _ip("addr", "add", f"{addr}/{prefix}", "dev", dev, netns=ns)
        _ip("link", "set", dev, "up", netns=ns)
        _shape(ns, dev, topo.shape)
    topo.links.append(
        {"a": a_node, "b": b_node, "a_addr": a_addr, "b_addr": b_addr, "a_dev": a_dev, "b_dev": b_dev}
    )


def check_name(name: str) -> str:
    """``name`` when it is a topology name jitterlab makes (``jl-`` and lower-case letters or
    digits); else one line naming the rule."""
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise JitterlabError(
            f"no topology named {str(name)[:60]!r}: names are '{PREFIX}' and lower-case letters or digits "
            "(see `jitterlab net topo list`)"
        )
    return name


def _state_file(name: str) -> Path:
    return STATE_DIR / f"{check_name(name)}.json"


def _save(topo: Topology) -> None:
    make_dir(STATE_DIR)
    atomic_write_json(_state_file(topo.name), topo.to_json())


def load(name: str) -> Topology:
    try:
        data = json.loads(_state_file(name).read_text())
    except FileNotFoundError:
        raise JitterlabError(f"no topology named {name} (see `jitterlab net topo list`)") from None
    except (OSError, ValueError) as e:
        raise JitterlabError(
            f"{_state_file(name)}: unreadable state file ({e}); remove it with `net topo down {name}`"
        ) from None
    try:
        topo = Topology(**data)
        valid = (
            topo.name == name
            and all(isinstance(n, str) and n.startswith(name + "-") for n in topo.nodes)
            and (topo.router is None or (isinstance(topo.router, str) and topo.router.startswith(name + "-")))
            and isinstance(topo.subnet, str)
            and isinstance(topo.shape, dict)
            and type(topo.created_by_pid) is int
            and isinstance(topo.created_s, int | float)
            and isinstance(topo.links, list)
            and all(_valid_link(link) for link in topo.links)
        )
    except TypeError:
        valid = False
    if not valid:
        raise JitterlabError(
            f"{_state_file(name)}: not a state file of topology {name}; remove it with `net topo down {name}`"
        )
    return topo


def _valid_link(link: Any) -> bool:
    """A link as ``up`` writes it: node indices (-1: the router) and their addresses."""
    return (
        isinstance(link, dict)
        and all(isinstance(link.get(k), int) and not isinstance(link.get(k), bool) for k in ("a", "b"))
        and all(isinstance(link.get(k), str) for k in ("a_addr", "b_addr"))
    )


def namespaces() -> list[str]:
    """Every namespace on the machine that jitterlab made."""
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return sorted(line.split()[0] for line in done.stdout.splitlines() if line.startswith(PREFIX))


def listing() -> list[dict[str, Any]]:
    """Known topologies and stray namespaces, with whether the process that made them lives."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for path in sorted(STATE_DIR.glob(f"{PREFIX}*.json")) if STATE_DIR.is_dir() else []:
        name = path.stem
        if _NAME.fullmatch(name) is None:  # not a file jitterlab wrote: never acted on
            continue
        try:
            topo = load(name)
        except JitterlabError:
            rows.append(
                {"name": name, "nodes": 0, "router": False, "owner_alive": False, "state": "unreadable"}
            )
            continue
        alive = _pid_alive(topo.created_by_pid)
        rows.append(
            {
                "name": name,
                "nodes": len(topo.nodes),
                "router": topo.router is not None,
                "owner_alive": alive,
                "state": "up",
            }
        )
        seen.add(name)
    strays = sorted({ns.rsplit("-", 1)[0] for ns in namespaces()} - seen)
    strays = [name for name in strays if _NAME.fullmatch(name)]
    rows += [
        {"name": name, "nodes": 0, "router": False, "owner_alive": False, "state": "leftover namespaces"}
        for name in strays
    ]
    return rows


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError, OverflowError):
        return False
    return pid > 0


def down(name: str) -> list[str]:
    """Remove a topology's namespaces (with them its veths and iptables rules) and its state
    file; also namespaces of that name with no state file. Returns what was removed."""
    check_name(name)
    removed = []
    with held_stops():  # never cut in two: what a stop leaves is what the state file names
        for ns in namespaces():
            if ns.startswith(name + "-"):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
                removed.append(ns)
        _state_file(name).unlink(missing_ok=True)
    return removed


def down_all(force: bool = False) -> tuple[list[str], list[str]]:
    """Remove every topology whose maker is gone (leftovers of killed runs): returns the
    namespaces removed and the topologies kept. A topology whose maker still runs, or whose
    maker is unknown (no readable state file: another state folder's, or damaged), may be in
    use by a measurement now: it is kept unless ``force`` (issue 24 item 13)."""
    removed: list[str] = []
    kept: list[str] = []
    for row in listing():
        if force or (row["state"] == "up" and not row["owner_alive"]):
            removed += down(row["name"])
        else:
            kept.append(row["name"])
    return removed, kept

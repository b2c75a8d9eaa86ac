"""``repl bench --hosts … --impair/--shape``: the links of hosts that are namespaces here.

Impairment and shaping act on links this machine controls: the router namespace of a
topology (``net topo up --router``) and the veth devices of its nodes. When every host of
hosts.toml is a node of one such topology (its address is that node's; each host reached over
ssh inside its namespace, as tests/conftest.py's ``sshd_in_namespace`` does; ``--topo NAME``
names that topology when several hold the same addresses), ``--impair`` runs
the impairment engine in that router, as ``repl bench --nodes/--topo`` and ``net bench`` do, and
``--shape`` puts a token bucket on each node's link for the run and removes it after. For real
remote hosts there is no router of ours on their path: refused in one line (``net bench
--hosts`` refuses ``--impair`` and ``--shape`` too).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from jitterlab.core.errors import JitterlabError
from jitterlab.net import topo as topology
from jitterlab.net.nodes import Nodes

SHAPE_BURST = "64kb"  # as net/topo.py's links made with --shape


def _holds(topo: topology.Topology, addresses: list[str]) -> bool:
    own = {link["a_addr"] for link in topo.links if link["a"] >= 0}
    own |= {link["b_addr"] for link in topo.links if link["b"] >= 0}
    return all(address in own for address in addresses)


def local_topology(nodes: Nodes, name: str | None, path: str) -> topology.Topology | None:
    """The topology on this machine whose nodes carry every host's address: ``name``'s
    (checked), else the only one that does; several (topologies share the default address
    range) are one line asking for ``--topo``."""
    wanted = [nodes.address(0, k) for k in range(nodes.count)]  # hosts.toml: one address per host
    if name:
        topo = topology.load(name)
        if not _holds(topo, wanted):
            raise JitterlabError(f"--hosts {path}: the hosts' addresses are not nodes of topology {name}")
        return topo
    found = []
    for row in topology.listing():
        if row["state"] != "up":
            continue
        try:
            topo = topology.load(row["name"])
        except JitterlabError:
            continue
        if _holds(topo, wanted):
            found.append(topo)
    if len(found) > 1:
        raise JitterlabError(
            f"--hosts {path}: the hosts' addresses are nodes of {len(found)} topologies here "
            f"({', '.join(t.name for t in found)}): name theirs with --topo"
        )
    return found[0] if found else None


def _tc(netns: str, *args: str) -> None:
    done = subprocess.run(["ip", "netns", "exec", netns, "tc", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise JitterlabError(f"tc {' '.join(args)} in {netns}: {done.stderr.strip() or 'failed'}")


def resolve(
    nodes: Nodes, impair: bool, shape: dict[str, str] | None, path: str, name: str | None = None
) -> topology.Topology:
    """The topology the hosts live in, checked for what is asked of it; one line when the
    hosts are not ours or it cannot give it."""
    topo = local_topology(nodes, name, path)
    if topo is None:
        raise JitterlabError(
            f"--impair and --shape with --hosts {path}: these hosts are not namespaces of this machine "
            "(no topology here holds their addresses), and a remote host's links are not ours to "
            "impair: use --nodes/--topo with --router"
        )
    if impair and topo.router is None:
        raise JitterlabError(
            f"--impair with --hosts {path}: topology {topo.name} of these hosts has no router to impair"
        )
    if shape and topo.shape:
        raise JitterlabError(f"--shape with --hosts {path}: topology {topo.name} is already shaped")
    if shape and shutil.which("tc") is None:
        raise JitterlabError("--shape needs tc: install the package iproute2")
    return topo


@contextmanager
def hosts_links(
    nodes: Nodes, impair: bool, shape: dict[str, str] | None, path: str, name: str | None = None
) -> Iterator[Nodes]:
    """``nodes`` with the router of the topology the hosts live in (for ``--impair``), their
    links shaped while the plan runs (``--shape``) and unshaped after, on every way out."""
    topo = resolve(nodes, impair, shape, path, name)
    devices = [
        (ns, dev)
        for link in topo.links
        for ns, dev in (
            (topo.router if link["a"] < 0 else topo.nodes[link["a"]], link["a_dev"]),
            (topo.router if link["b"] < 0 else topo.nodes[link["b"]], link["b_dev"]),
        )
        if ns
    ]
    shaped: list[tuple[str, str]] = []
    rate = (shape or {}).get("rate")
    try:
        for ns, dev in devices if rate else []:
            tbf = ("tbf", "rate", str(rate), "burst", SHAPE_BURST, "latency", "1s")
            _tc(ns, "qdisc", "add", "dev", dev, "root", *tbf)
            shaped.append((ns, dev))
        yield replace(nodes, router=topo.router)
    finally:
        for ns, dev in shaped:
            subprocess.run(
                ["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root"], capture_output=True
            )

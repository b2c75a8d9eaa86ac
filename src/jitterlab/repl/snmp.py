"""The kernel's UDP counters (``/proc/net/snmp``), read before and after a run: datagrams
dropped because a socket buffer was full show up here and nowhere else."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

SNMP = Path("/proc/net/snmp")


def udp_counters(path: Path = SNMP) -> dict[str, int]:
    """The ``Udp:`` row of ``/proc/net/snmp`` as {name: value}; {} where it cannot be read."""
    try:
        return parse_udp(path.read_text())
    except OSError:
        return {}


def udp_counters_of(namespaces: Sequence[str]) -> dict[str, int]:
    """The counters summed over network namespaces (each has its own ``/proc/net/snmp``,
    read by a process inside it); {} where one cannot be read."""
    total: dict[str, int] = {}
    for ns in namespaces:
        done = subprocess.run(
            ["ip", "netns", "exec", ns, "cat", str(SNMP)], capture_output=True, text=True, check=False
        )
        counters = parse_udp(done.stdout) if done.returncode == 0 else {}
        if not counters:
            return {}
        total = {name: total.get(name, 0) + value for name, value in counters.items()}
    return total


def parse_udp(text: str) -> dict[str, int]:
    """The ``Udp:`` rows of a ``/proc/net/snmp`` text as {name: value}; {} without them."""
    lines = [line.split() for line in text.splitlines() if line.startswith("Udp:")]
    if len(lines) < 2:
        return {}
    names, values = lines[0][1:], lines[1][1:]
    return {name: int(value) for name, value in zip(names, values, strict=False)}


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """What each counter rose by (counters missing on either side are left out)."""
    return {name: after[name] - before[name] for name in before if name in after}

"""The kernel's UDP counters (``/proc/net/snmp``), read before and after a run: datagrams
dropped because a socket buffer was full show up here and nowhere else."""

from __future__ import annotations

from pathlib import Path

SNMP = Path("/proc/net/snmp")


def udp_counters(path: Path = SNMP) -> dict[str, int]:
    """The ``Udp:`` row of ``/proc/net/snmp`` as {name: value}; {} where it cannot be read."""
    try:
        lines = [line.split() for line in path.read_text().splitlines() if line.startswith("Udp:")]
    except OSError:
        return {}
    if len(lines) < 2:
        return {}
    names, values = lines[0][1:], lines[1][1:]
    return {name: int(value) for name, value in zip(names, values, strict=False)}


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """What each counter rose by (counters missing on either side are left out)."""
    return {name: after[name] - before[name] for name in before if name in after}

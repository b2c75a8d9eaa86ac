"""Run a command and measure it as a whole: wall time and the peak memory of its process tree.

``ru_maxrss`` of a process (or ``/usr/bin/time -v``) is the peak of one process; a command
that starts helpers (the report's workers, the native harness, a JVM, ``ip netns exec``)
uses the sum of its tree. This samples ``/proc`` every ``interval`` seconds and keeps the
peak of the sum of the resident sizes (RSS) of the command and all its descendants; memory
shared between processes of the tree is counted once per process, as ``ps`` and ``top``
would (an upper bound of what the tree needs).

Usage as a script: ``python benchmarks/treemem.py -- CMD ARGS…`` prints seconds and the peak.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Measured:
    """One run of a command: exit code, output, wall seconds and peak tree RSS in bytes."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_tree_rss_bytes: int
    peak_tree_pss_bytes: int = 0  # only when asked for (pss=True): reading smaps costs more
    peak_processes: int = 0  # the most processes of the tree seen at once
    longest_process_cpu_s: float = 0.0  # CPU seconds of the busiest process (as last sampled)


def _children() -> dict[int, list[int]]:
    """Parent pid → child pids, from /proc/PID/stat of every process now alive."""
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:  # the process ended while we looked
            continue
        # the command name is in parentheses and may hold spaces: the ppid follows the last ')'
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _tree(root: int) -> list[int]:
    """``root`` and all its descendants now (one scan of /proc)."""
    tree = _children()
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(tree.get(pid, ()))
    return pids


def _rss(pid: int) -> int:
    with contextlib.suppress(OSError, IndexError, ValueError):
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    return 0


def _pss(pid: int) -> int:
    with contextlib.suppress(OSError, ValueError, StopIteration):
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        return int(next(line for line in text.splitlines() if line.startswith("Pss:")).split()[1]) * 1024
    return 0


def _cpu(pid: int) -> float | None:
    with contextlib.suppress(OSError, IndexError, ValueError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    return None


def tree_rss_bytes(root: int) -> int:
    """Sum of the resident sizes of ``root`` and all its descendants now."""
    return sum(_rss(pid) for pid in _tree(root))


def tree_pss_bytes(root: int) -> int:
    """Sum of the proportional set sizes (PSS: each shared page divided among the processes
    mapping it, /proc/PID/smaps_rollup) of ``root`` and all its descendants now."""
    return sum(_pss(pid) for pid in _tree(root))


TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root: int) -> dict[int, float]:
    """CPU seconds (user + system) each process of ``root``'s tree has used so far."""
    return {pid: c for pid in _tree(root) if (c := _cpu(pid)) is not None}


def run_measured(
    cmd: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    interval: float = 0.02,
    pss: bool = False,
) -> Measured:
    """Run ``cmd`` to its end, capturing its output, and measure its tree's peak RSS (and,
    with ``pss``, its peak PSS: the memory the tree costs the machine, shared pages counted
    once, the most processes it ran at once and the CPU seconds of its busiest process, as
    last sampled: up to ``interval`` short)."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    peak = peak_pss = processes = 0
    cpu: dict[int, float] = {}
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, peak_pss, processes
        while not done.is_set():
            pids = _tree(proc.pid)  # one scan of /proc per sample: it competes with the command
            peak = max(peak, sum(_rss(pid) for pid in pids))
            if pss:
                peak_pss = max(peak_pss, sum(_pss(pid) for pid in pids))
                processes = max(processes, len(pids))
                cpu.update((pid, c) for pid in pids if (c := _cpu(pid)) is not None)
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        stdout, stderr = proc.communicate()
    finally:
        done.set()
        sampler.join()
    longest = max(cpu.values(), default=0.0)
    return Measured(
        proc.returncode, stdout, stderr, time.monotonic() - started, peak, peak_pss, processes, longest
    )


def median_range(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, smallest, largest) of the repeats."""
    return statistics.median(values), min(values), max(values)


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python benchmarks/treemem.py -- CMD ARGS…", file=sys.stderr)
        return 2
    m = run_measured(args)
    sys.stdout.write(m.stdout)
    sys.stderr.write(m.stderr)
    print(f"{m.seconds:.2f} s, peak tree RSS {m.peak_tree_rss_bytes / 1e6:.0f} MB", file=sys.stderr)
    return m.returncode


if __name__ == "__main__":
    raise SystemExit(main())

"""A stop signal is never lost (issue 24): Python runs a signal's handler in whatever Python
code runs next, and an exception raised in a finalizer or an at-fork hook is swallowed. A
`net bench` sent SIGTERM while it started its agents (``subprocess`` with a ``preexec_fn``
runs ``logging``'s at-fork hook) measured on to the end and exited 0."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

PROGRAM = """
import os, signal, subprocess, sys, time
from jitterlab.core.signals import Interrupted, stop_on_signals

stop_on_signals()


def stop_now():
    os.kill(os.getpid(), signal.SIGTERM)  # the handler runs in the next Python code: below
    for _ in range(10_000):
        pass


class Dropped:
    def __del__(self):
        stop_now()


if sys.argv[1] == "finalizer":
    trigger = lambda: Dropped()
else:  # an at-fork hook, as logging's around a subprocess start with a preexec_fn
    os.register_at_fork(after_in_parent=stop_now)
    trigger = lambda: subprocess.run(["true"], preexec_fn=lambda: None, check=True)
try:
    trigger()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        time.sleep(0.001)
    print("went on")
except Interrupted as e:
    print("stopped by", e)
"""


@pytest.mark.parametrize("where", ["finalizer", "at-fork"])
def test_a_stop_signal_whose_handler_runs_where_exceptions_are_swallowed_still_stops(where: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, where], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.strip() == "stopped by SIGTERM", (done.stdout, done.stderr)
    assert "Exception ignored" not in done.stderr, done.stderr


REAPED = """
import os, signal, sys, threading, time
from pathlib import Path
from jitterlab.core.signals import stop_on_signals
from jitterlab.net.topo import _run

signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C, as a terminal's CLI has it
stop_on_signals()
threading.Timer(0.5, os.kill, (os.getpid(), int(sys.argv[1]))).start()
try:
    started = time.monotonic()
    _run(["sleep", "2"])
    print("went on")
except KeyboardInterrupt:
    assert time.monotonic() - started >= 1.9, "raised before the command ended"
    mine = [p for p in Path("/proc").iterdir() if p.name.isdigit() and p.name != str(os.getpid())]
    children = []
    for p in mine:
        try:
            fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            children.append((p.name, fields[0]))
    print("children", children)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_during_a_topology_command_waits_for_that_command_to_end(signum: int) -> None:
    """Issue 24 item 5: a stop inside ``Popen()`` left the child running unknown to the
    caller, and ``subprocess.run`` interrupted by Ctrl-C (a ``KeyboardInterrupt`` itself;
    SIGTERM's subclass is waited for) kills its child without waiting for it: an ``ip netns
    add`` could then make its namespace after the cleanup had listed the namespaces to remove
    (reproduced under load). A topology command now runs to its end, the stop raised after
    it, the child reaped (not even a zombie)."""
    done = subprocess.run(
        [sys.executable, "-c", REAPED, str(int(signum))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "children []", (done.stdout, done.stderr)


HELD = """
import os, signal, sys, threading, time
from jitterlab.core.signals import held_stops, stop_on_signals

signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C, as a terminal's CLI has it
stop_on_signals()  # installs its handler for SIGINT too (Ctrl-C's KeyboardInterrupt)
signum = int(sys.argv[1])
steps = []
try:
    with held_stops():
        os.kill(os.getpid(), signum)
        for _ in range(100_000):  # the handler runs here, and the stop waits
            pass
        steps.append("block ended")
        if sys.argv[2] == "twice":
            os.kill(os.getpid(), signum)
            for _ in range(100_000):
                pass
            steps.append("second stop held")
    steps.append("after the block")
except KeyboardInterrupt as e:
    steps.append(f"stopped {type(e).__name__}")
print(", ".join(steps))
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize(
    ("times", "expected"),
    [("once", "block ended, stopped {}"), ("twice", "block ended, stopped {}")],
)
def test_a_stop_in_a_held_block_is_raised_when_the_block_ends_and_a_second_at_once(
    signum: int, times: str, expected: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", HELD, str(int(signum)), times],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    name = "KeyboardInterrupt" if signum == signal.SIGINT else "Interrupted"
    assert done.stdout.strip() == expected.format(name), (done.stdout, done.stderr)

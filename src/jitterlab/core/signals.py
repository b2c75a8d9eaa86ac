"""SIGTERM and SIGHUP handled like Ctrl-C: what ``timeout``, systemd and CI cancellation
send must keep every recorded sample, exactly as an interrupt from the terminal does.

:func:`stop_on_signals` turns each into :class:`Interrupted` (a ``KeyboardInterrupt``, so
every ``except KeyboardInterrupt`` path applies) and remembers which signal arrived, so a
child can be sent the same one.

A stop is never lost: Python runs a signal's handler in whatever Python code the main
thread runs next, and when that is a finalizer (``__del__``), a weakref callback or an
at-fork hook (``logging`` registers one, run around every ``subprocess`` start with a
``preexec_fn``), the exception it raises is swallowed ("Exception ignored in …") and the
command went on as if nothing had arrived (issue 24: a SIGTERM about 0.1 s after `net bench`
made its namespaces, while it started its agents, let the run finish complete, exit 0).
:func:`stop_on_signals` installs a ``sys.unraisablehook`` that delivers such a stop again a
moment later, from outside that code.

:func:`noted_stops` is for a loop with threads that share a lock (``monitor serve``): there a
stop is only noted, and the loop reads it between its steps; an exception raised wherever
the main thread happened to be could leave such a lock held for ever.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A stop signal other than SIGINT arrived."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_received: list[int] = []
_held = 0  # held_stops() blocks open: a stop waits for the outermost to end
_pending: list[int] = []  # stops that arrived meanwhile
_noting = 0  # noted_stops() blocks open: a stop is noted for the block to ask about
_noted: list[int] = []  # the stop noted meanwhile


def _stop(signum: int) -> KeyboardInterrupt:
    """What a stop raises: Ctrl-C's own KeyboardInterrupt, or :class:`Interrupted`."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Interrupted(signum)


def _raise(signum: int, _frame: FrameType | None) -> None:
    global _late
    _received.append(signum)
    if _in_hook:  # the hook below is running: raised here, the stop would be swallowed again
        _late = signum
        return
    if _noting and not _noted:  # noted_stops(): the block asks for it where it can stop
        _noted.append(signum)
        return
    if _held and not _pending:  # a second stop while held is not held: a way out of a hang
        _pending.append(signum)
        return
    _pending.clear()
    raise _stop(signum)


@contextmanager
def held_stops() -> Iterator[None]:
    """A stop that arrives while the block runs is raised when it ends (the outermost block,
    when nested): what must not be cut in two, such as removing a topology's namespaces and
    its state file, or starting a child process (a stop inside ``Popen()`` leaves the child
    running, not even known to the caller: issue 24 item 5, a namespace made after the
    cleanup had listed them). A second stop meanwhile is raised at once (the way out of a
    block that hangs). Handlers installed by :func:`stop_on_signals` only; the block ends
    with its own exception when it has one (the stop is then delivered again)."""
    global _held
    _held += 1
    try:
        yield
    finally:
        _held -= 1
        if not _held and _pending:
            signum = _pending[-1]
            _pending.clear()
            error = sys.exc_info()[1]
            if error is None:
                raise _stop(signum)
            if not isinstance(error, KeyboardInterrupt):
                _deliver_again(signum)


@contextmanager
def noted_stops() -> Iterator[Callable[[], int | None]]:
    """A stop that arrives while the block runs is only noted, never raised: the block asks
    the function it is given (the signal, None before one came) at the one point of its loop
    where it can stop. For a block whose threads share a lock: a ``KeyboardInterrupt`` raised
    in the main thread just after ``Condition.__enter__`` took the lock (the handler runs at
    the next bytecode boundary, before ``with`` can release it) leaves the lock held for ever,
    and the thread waiting for it with it (``monitor serve``: its drain thread, which the
    server then joined without end). A second stop is raised at once (the way out of a block
    that hangs). SIGINT's default handler gives way to this module's for the block. Outside
    the main thread it changes nothing (no stop is raised there; the main thread's stays its
    own) and its function always answers None."""
    global _noting
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    restore = None
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        restore = signal.signal(signal.SIGINT, _raise)
    _noting += 1
    try:
        yield lambda: _noted[0] if _noted else None
    finally:
        _noting -= 1
        if not _noting:
            _noted.clear()  # the block stopped for it: not raised again
        if restore is not None:
            signal.signal(signal.SIGINT, restore)


_REDELIVER_S = 0.01  # long enough for the main thread to have left the code that swallowed it
_in_hook = False
_late: int | None = None  # a stop whose handler ran while the hook ran


def _unraisable(unraisable: Any) -> None:
    """A stop swallowed where exceptions cannot propagate: the same signal again, shortly
    and from another thread, so that its handler runs in the command's own code; any other
    unraisable exception goes to the hook that was there before. Nothing here waits in
    Python code (a thread's ``start()`` does: the stop sent again could land in it)."""
    global _in_hook, _late
    error = unraisable.exc_value
    if not isinstance(error, KeyboardInterrupt):
        _previous_hook(unraisable)
        return
    _in_hook = True
    _late = None
    _deliver_again(error.signum if isinstance(error, Interrupted) else signal.SIGINT)
    if _late is not None:
        _deliver_again(_late)
    _in_hook = False


def _send_later(signum: int) -> None:
    time.sleep(_REDELIVER_S)
    os.kill(os.getpid(), signum)


def _deliver_again(signum: int) -> None:
    """``signum`` sent to this process again in a moment, from a new thread (started
    without waiting for it: ``_thread``, not ``threading``)."""
    _thread.start_new_thread(_send_later, (signum,))


_previous_hook = sys.unraisablehook


def stop_on_signals() -> None:
    """Install the handlers (main thread only; called once by the CLI)."""
    global _previous_hook
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when ignored (a background job)
        signal.signal(signal.SIGINT, _raise)  # Ctrl-C raises KeyboardInterrupt as before, held_stops too
    if sys.unraisablehook is not _unraisable:
        _previous_hook = sys.unraisablehook
        sys.unraisablehook = _unraisable


def last_signal() -> int:
    """The stop signal received most recently (SIGINT when none of ours arrived)."""
    return _received[-1] if _received else signal.SIGINT

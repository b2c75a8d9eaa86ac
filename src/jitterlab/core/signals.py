"""SIGTERM and SIGHUP handled like Ctrl-C: what ``timeout``, systemd and CI cancellation
send must keep every recorded sample, exactly as an interrupt from the terminal does.

:func:`stop_on_signals` turns each into :class:`Interrupted` (a ``KeyboardInterrupt``, so
every ``except KeyboardInterrupt`` path applies) and remembers which signal arrived, so a
child can be sent the same one.
"""

from __future__ import annotations

import signal
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A stop signal other than SIGINT arrived."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_received: list[int] = []


def _raise(signum: int, _frame: FrameType | None) -> None:
    _received.append(signum)
    raise Interrupted(signum)


def stop_on_signals() -> None:
    """Install the handlers (main thread only; called once by the CLI)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise)


def last_signal() -> int:
    """The stop signal received most recently (SIGINT when none of ours arrived)."""
    return _received[-1] if _received else signal.SIGINT

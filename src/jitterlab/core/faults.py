"""Named fault-injection points for the kill-window tests (issue 42 items 8–9).

A test sets ``JITTERLAB_KILL_AT=NAME`` in a real jitterlab process's environment; when that
process reaches :func:`kill_point` ``NAME`` it sends itself SIGKILL: a real kill -9 of the
real process at a moment chosen exactly, never by timing luck. Unset (always, outside
tests), a point costs one dictionary look-up.

Points: ``samples-written`` (the samples file is complete and the raw file removed, the run
not yet published) and ``committing`` (the first row group of the samples file written, the
raw file and harness.json still in staging), ``publishing`` (run.json written in staging and
the harness's files removed, the folder not yet renamed into the store) and ``published``
(renamed into the store, its staging lock not yet released); ``series-staged`` (a pipeline's
series each described in its staging folder, the source dropped, none published).
"""

from __future__ import annotations

import os
import signal

KILL_AT = "JITTERLAB_KILL_AT"
POINTS = ("samples-written", "committing", "publishing", "published", "series-staged")


def kill_point(name: str) -> None:
    """SIGKILL this process here when ``$JITTERLAB_KILL_AT`` names this point."""
    if os.environ.get(KILL_AT) == name:
        os.kill(os.getpid(), signal.SIGKILL)

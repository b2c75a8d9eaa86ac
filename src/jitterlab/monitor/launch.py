"""Starting ``monitor serve`` from a study script (or a test, or a benchmark) and reading
back the run it stored: a server in its own process, so a crash of the study cannot take
the recording with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from jitterlab.core.errors import JitterlabError


def start_serve(
    channel: str, store: Path, listen: str, *options: str, stdout: int | None = None
) -> subprocess.Popen[str]:
    """``jitterlab monitor serve`` started and draining (returns once it says so);
    ``stdout=subprocess.PIPE`` keeps what it prints (``--json``) for ``communicate``."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jitterlab",
            "monitor",
            "serve",
            "--channel",
            channel,
            "--store",
            str(store),
            "--listen",
            listen,
            *options,
        ],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("serving channel"):
            return proc
    raise JitterlabError(f"monitor serve did not start (exit {proc.wait()})")


def wait_stored(proc: subprocess.Popen[str], timeout: float = 600) -> str:
    """Wait for the server to end; the id of the run it stored (a partial one when a signal
    stopped it before its --duration: exit code 130)."""
    run_id = wait_stored_or_none(proc, timeout)
    if run_id is None:
        raise JitterlabError("monitor serve stored no run: no writer came")
    return run_id


def wait_stored_or_none(proc: subprocess.Popen[str], timeout: float = 600) -> str | None:
    """:func:`wait_stored`, with None for a server that stored nothing because no writer
    ever came (it says so and exits 1: server.NO_WRITER)."""
    _, err = proc.communicate(timeout=timeout)
    if proc.returncode == 1 and "no writer recorded on channel" in err:
        return None
    if proc.returncode not in (0, 130):
        raise JitterlabError(f"monitor serve failed (exit {proc.returncode}): {err.strip()}")
    for line in err.splitlines():
        if line.startswith("stored "):
            return line.split()[1].rstrip(":")
    raise JitterlabError(f"monitor serve stored no run: {err.strip()}")

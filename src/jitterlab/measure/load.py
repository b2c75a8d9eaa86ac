"""Load conditions: stress-ng running beside a measurement, started and stopped with it.

``--load cpu|memory|io|mixed[:WORKERS]`` (workers default to the number of CPUs). The
stressors run in their own process group, which is terminated (then killed, if need be)
when the measurement ends, so no stray stress-ng is left behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from jitterlab.core.errors import JitterlabError

KINDS = ("cpu", "memory", "io", "mixed")


@dataclass(frozen=True)
class LoadSpec:
    kind: str
    workers: int

    def stress_ng_args(self) -> list[str]:
        w = str(self.workers)
        stressors = {
            "cpu": ["--cpu", w],
            "memory": ["--vm", w, "--vm-bytes", "256M"],
            "io": ["--hdd", w, "--hdd-bytes", "64M"],
            "mixed": ["--cpu", w, "--vm", w, "--vm-bytes", "128M", "--hdd", w, "--hdd-bytes", "32M"],
        }[self.kind]
        return ["stress-ng", *stressors, "--timeout", "0", "--quiet"]


def parse_load(text: str | None) -> LoadSpec | None:
    """``cpu``, ``memory:2``, ... or None for no load. Raises JitterlabError on bad input."""
    if not text or text == "none":
        return None
    kind, _, workers = text.partition(":")
    if kind not in KINDS:
        raise JitterlabError(f"--load: '{kind}' is not one of {', '.join(KINDS)} (optionally :WORKERS)")
    try:
        count = int(workers) if workers else (os.cpu_count() or 1)
    except ValueError:
        raise JitterlabError(f"--load: '{workers}' is not a number of workers") from None
    if not 1 <= count <= 1024:
        raise JitterlabError("--load: workers must be between 1 and 1024")
    return LoadSpec(kind, count)


@contextmanager
def running_load(spec: LoadSpec | None, workdir: str | None = None) -> Iterator[dict[str, Any] | None]:
    """Run stress-ng for the duration of the block; yields the metadata block describing it."""
    if spec is None:
        yield None
        return
    if shutil.which("stress-ng") is None:
        raise JitterlabError(
            "--load needs stress-ng (Debian package stress-ng: sudo apt-get install stress-ng)"
        )
    argv = spec.stress_ng_args()
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, cwd=workdir
    )
    info: dict[str, Any] = {"kind": spec.kind, "workers": spec.workers, "command": argv, "pid": proc.pid}
    time.sleep(0.5)  # let the stressors start before the measurement does
    if proc.poll() is not None:
        err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        raise JitterlabError(
            f"stress-ng exited at once ({proc.returncode}): {err.splitlines()[-1] if err else ''}"
        )
    try:
        yield info
    finally:
        info["stopped_cleanly"] = stop_group(proc)


def stop_group(proc: subprocess.Popen[bytes]) -> bool:
    """SIGTERM the process group, SIGKILL it after 5 s. True when SIGTERM sufficed."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    try:
        proc.wait(timeout=5)
        clean = True
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        clean = False
    # stress-ng's workers are in the same group; make sure none outlives its parent
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        clean = False
    return clean

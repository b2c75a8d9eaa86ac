"""The native harness's technique registry, as the harness itself reports it (``--list``)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from functools import lru_cache

from jitterlab.core.programs import native_program

CAF_SCHEDULERS = ("stealing", "sharing", "detached")  # the caf technique's --caf-scheduler


@dataclass(frozen=True)
class TechniqueAvailability:
    name: str
    available: bool
    kind: str  # threads (a Channel), actors (they drive the run), floor (measured on its own: c2c)
    description: str


@lru_cache(maxsize=1)
def native_techniques() -> tuple[TechniqueAvailability, ...]:
    """The techniques the native harness offers, as it reports them (``--list``)."""
    out = subprocess.run(
        [str(native_program("jitterlab-bench")), "--list"], capture_output=True, text=True, check=True
    )
    rows = []
    for line in out.stdout.splitlines():
        name, available, kind, description = line.split("\t", 3)
        rows.append(TechniqueAvailability(name, available == "yes", kind, description))
    return tuple(rows)


def technique_kind(name: str) -> str:
    """The kind of a native technique (``threads`` for names the harness does not list)."""
    return next((t.kind for t in native_techniques() if t.name == name), "threads")

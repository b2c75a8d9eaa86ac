"""The native harness's technique registry, as the harness itself reports it (``--list``)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from functools import lru_cache

from jitterlab.core.programs import native_program


@dataclass(frozen=True)
class TechniqueAvailability:
    name: str
    available: bool
    description: str


@lru_cache(maxsize=1)
def native_techniques() -> tuple[TechniqueAvailability, ...]:
    """The techniques the native harness offers, as it reports them (``--list``)."""
    out = subprocess.run(
        [str(native_program("jitterlab-bench")), "--list"], capture_output=True, text=True, check=True
    )
    rows = []
    for line in out.stdout.splitlines():
        name, available, description = line.split("\t", 2)
        rows.append(TechniqueAvailability(name, available == "yes", description))
    return tuple(rows)

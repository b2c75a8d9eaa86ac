"""Where the native programs built by ``pip install`` live, and what they offer."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from jitterlab.errors import JitterlabError


def native_program(name: str) -> Path:
    """Path of a native program: ``$JITTERLAB_NATIVE_DIR``, the package's ``bin/``, or PATH."""
    candidates = []
    if env := os.environ.get("JITTERLAB_NATIVE_DIR"):
        candidates.append(Path(env) / name)
    candidates.append(Path(__file__).resolve().parent / "bin" / name)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    raise JitterlabError(
        f"native program {name} not found; reinstall jitterlab (pip install .) so the C++ core is built"
    )


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

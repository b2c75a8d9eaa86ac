"""Where the native programs built by ``pip install`` live (program lookup)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from jitterlab.core.errors import JitterlabError

# The installed package's folder: pip puts the native programs (bin/), the injector's
# library (lib/), the JVM harness sources (jvm/) and _build_info.json beside the Python code.
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def _candidates(name: str, folder: str) -> list[Path]:
    """Where a part of the C++ core may be: ``$JITTERLAB_NATIVE_DIR``, then the package's ``folder``."""
    env = os.environ.get("JITTERLAB_NATIVE_DIR")
    return [*([Path(env) / name] if env else []), PACKAGE_ROOT / folder / name]


def native_program(name: str) -> Path:
    """Path of a native program: ``$JITTERLAB_NATIVE_DIR``, the package's ``bin/``, or PATH."""
    for candidate in _candidates(name, "bin"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    raise JitterlabError(
        f"native program {name} not found; reinstall jitterlab (pip install .) so the C++ core is built"
    )


def native_library(name: str) -> Path:
    """Path of a shared library of the C++ core: ``$JITTERLAB_NATIVE_DIR`` or the package's ``lib/``."""
    for candidate in _candidates(name, "lib"):
        if candidate.is_file():
            return candidate
    raise JitterlabError(f"{name} not found; reinstall jitterlab (pip install .) so the C++ core is built")

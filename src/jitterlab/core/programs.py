"""Where the native programs built by ``pip install`` live (program lookup)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from jitterlab.core.errors import JitterlabError

# The installed package's folder: pip puts the native programs (bin/), the injector's
# library (lib/), the JVM harness sources (jvm/) and _build_info.json beside the Python code.
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def native_program(name: str) -> Path:
    """Path of a native program: ``$JITTERLAB_NATIVE_DIR``, the package's ``bin/``, or PATH."""
    candidates = []
    if env := os.environ.get("JITTERLAB_NATIVE_DIR"):
        candidates.append(Path(env) / name)
    candidates.append(PACKAGE_ROOT / "bin" / name)
    for candidate in candidates:
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
    candidates = []
    if env := os.environ.get("JITTERLAB_NATIVE_DIR"):
        candidates.append(Path(env) / name)
    candidates.append(PACKAGE_ROOT / "lib" / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise JitterlabError(f"{name} not found; reinstall jitterlab (pip install .) so the C++ core is built")

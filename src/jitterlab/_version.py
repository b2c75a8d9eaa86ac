"""Version and build facts of the installed package."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

try:
    __version__ = metadata.version("jitterlab")
except metadata.PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"


def build_info() -> dict[str, Any]:
    """What CMake recorded at build time (git commit, compiler, whether CAF was built)."""
    path = Path(__file__).with_name("_build_info.json")
    try:
        info: dict[str, Any] = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        info = {}
    if not info.get("git_commit"):
        from jitterlab.environment import git_commit

        info["git_commit"] = git_commit(Path(__file__).parent)
    return info

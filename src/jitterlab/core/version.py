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
    path = Path(__file__).resolve().parents[1] / "_build_info.json"
    try:
        info: dict[str, Any] = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        info = {}
    if not info.get("git_commit"):
        info["git_commit"] = git_commit(Path(__file__).resolve().parents[1])
    return info


def git_commit(directory: Path) -> str | None:
    """The commit of a git checkout (with ``-dirty`` when it has changes), else None."""
    import subprocess  # here: every command imports this module, few ask git (start-up)

    try:
        commit = subprocess.run(
            ["git", "-C", str(directory), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(directory), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "")

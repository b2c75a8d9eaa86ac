"""Version and build facts of the installed package."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _version() -> str:
    """The version CMake wrote into ``_build_info.json`` at build time (from pyproject.toml).

    ``importlib.metadata`` answers the same but costs about 40 ms of imports (email, zipfile)
    that every command, ``--version`` first, would pay (issue 28 item 3); it stays the
    fallback for a build without the file.
    """
    try:
        version = json.loads((Path(__file__).resolve().parents[1] / "_build_info.json").read_text()).get(
            "version"
        )
    except (OSError, ValueError):
        version = None
    if isinstance(version, str) and version and not version.startswith("@"):
        return version
    from importlib import metadata

    try:
        return metadata.version("jitterlab")
    except metadata.PackageNotFoundError:  # running from a source tree without install
        return "0.0.0+unknown"


__version__ = _version()


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

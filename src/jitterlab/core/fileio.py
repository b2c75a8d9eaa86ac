"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from jitterlab.core.errors import JitterlabError


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def atomic_write_json(path: Path, document: Any) -> None:
    atomic_write_bytes(path, (json.dumps(document, indent=2, sort_keys=False) + "\n").encode())


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def check_writable_file(path: Path, flag: str) -> None:
    """Fail now, not after minutes of measuring, when ``path`` could not be written: its
    folder must exist and be writable, and the path must not be a folder."""
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise JitterlabError(f"{flag} {path}: is a folder")
    if not folder.is_dir():
        raise JitterlabError(f"{flag} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise JitterlabError(f"{flag} {path}: not writable")

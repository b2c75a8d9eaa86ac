"""The jitterlab of this checkout, for benchmarks that measure it rather than the installed copy.

``pip install .`` (scripts/setup.sh) puts the C++ core (``bin/``, ``lib/``) beside the
*installed* package only; a checkout's ``src/jitterlab`` has none. A benchmark that puts the
checkout's ``src`` first on the path must then find the core through
``$JITTERLAB_NATIVE_DIR`` (jitterlab/core/programs.py): a temporary folder of links to the
installed package's programs and libraries.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

TREE = Path(__file__).resolve().parents[1]
SRC = TREE / "src"


def native_dir_of_installed() -> str | None:
    """A folder of links to the installed jitterlab's native programs and libraries, or None
    when this checkout's package has its own (a developer's links) or nothing is installed."""
    if (SRC / "jitterlab" / "lib").exists():
        return None
    spec = importlib.util.find_spec("jitterlab")  # before SRC is on the path: the installed one
    if spec is None or spec.origin is None:
        return None
    installed = Path(spec.origin).resolve().parent
    if installed == (SRC / "jitterlab").resolve():
        return None
    folder = Path(tempfile.mkdtemp(prefix="jitterlab-native-"))
    atexit.register(shutil.rmtree, folder, True)
    for part in ("bin", "lib"):
        for f in (installed / part).glob("*") if (installed / part).is_dir() else []:
            (folder / f.name).symlink_to(f)
    return str(folder)


def environment() -> dict[str, str]:
    """The variables that make a child ``python -m jitterlab`` run this checkout's code with a
    C++ core: PYTHONPATH with ``src`` first and, when needed, ``JITTERLAB_NATIVE_DIR``."""
    env = {"PYTHONPATH": os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])])}
    native = native_dir_of_installed()
    if native is not None:
        env["JITTERLAB_NATIVE_DIR"] = native
    return env

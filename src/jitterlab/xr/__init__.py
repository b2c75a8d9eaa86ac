"""The OpenXR API layer ``XR_APILAYER_JITTERLAB_latency`` (docs/xr.md): where it is installed,
the environment that enables it, its configuration file, and ``xr run`` (the application
started with the layer and a ``monitor serve`` for each of its channels).

The layer reads the configuration itself (native/xr/xr_config.hpp), a subset of TOML; this
module checks a file against the same subset and against what it names (model files,
channel names) before an application is started, so a bad file is one line and exit 2 here
rather than a pass-through inside the application.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from jitterlab.core.errors import JitterlabError
from jitterlab.core.programs import PACKAGE_ROOT

LAYER_NAME = "XR_APILAYER_JITTERLAB_latency"
LAYER_MANIFEST = f"{LAYER_NAME}.json"
TEST_RUNTIME_MANIFEST = "jitterlab_xr_test_runtime.json"
FRAME_SUFFIXES = (".frame-interval", ".frame-time", ".pose-age")

# The lines the layer's reader accepts (xr_config.hpp): comments, [table], key = "string" or integer.
_LINE = re.compile(
    r'^\s*(#.*|\[[a-z]+\]\s*(#.*)?|[a-z_]+\s*=\s*("([^"\\]|\\["\\])*"|[0-9_]{1,19})\s*(#.*)?)?\s*$'
)
_KEYS: dict[str, type | dict[str, type]] = {
    "seed": int,
    "head": {"model": str, "channel": str},
    "frames": {"channel_prefix": str},
}


def layer_dir() -> Path:
    """The folder holding the layer's manifest and library (for ``XR_API_LAYER_PATH``)."""
    folder = (
        PACKAGE_ROOT / "lib" / "openxr"
    )  # outside the jitterlab.xr package: a .so there reads as a module
    if not (folder / LAYER_MANIFEST).is_file():
        raise JitterlabError(
            "the OpenXR layer is not installed (jitterlab was built without openxr.h: "
            "install libopenxr-dev and reinstall jitterlab)"
        )
    return folder


@dataclass(frozen=True)
class XrConfig:
    """A checked layer configuration: the delayed poses' models and the monitor channels."""

    path: Path
    seed: int
    head_model: Path | None
    head_channel: str
    frame_prefix: str | None

    @property
    def channels(self) -> list[str]:
        """Every channel the layer writes, the head's first."""
        out = [self.head_channel] if self.head_model is not None else []
        if self.frame_prefix:
            out += [self.frame_prefix + s for s in FRAME_SUFFIXES]
        return out


def read_config(path: Path) -> XrConfig:
    """Read and check ``path`` as the layer will; one line naming the problem otherwise."""
    import tomllib

    from jitterlab.monitor.recorder import check_channel
    from jitterlab.simulate.model import load_model

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise JitterlabError(f"{path}: cannot read the config ({e})") from e
    for number, line in enumerate(text.splitlines(), 1):
        if not _LINE.match(line):
            raise JitterlabError(
                f'{path}:{number}: the layer reads only [table] and key = "string" / integer lines'
            )
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise JitterlabError(f"{path}: not TOML ({e})") from e
    for key, value in doc.items():
        want = _KEYS.get(key)
        if want is None:
            raise JitterlabError(
                f"{path}: unknown {'table' if isinstance(value, dict) else 'key'} '{key}' "
                "(poses: [head]; frame timing: [frames])"
            )
        if isinstance(want, dict):
            if not isinstance(value, dict):
                raise JitterlabError(f"{path}: '{key}' must be a table")
            for sub, v in value.items():
                if sub not in want or not isinstance(v, want[sub]):
                    raise JitterlabError(f"{path}: unknown key '{key}.{sub}' (or a value of the wrong type)")
        elif not isinstance(value, want) or isinstance(value, bool):
            raise JitterlabError(f"{path}: '{key}' must be an integer")
    head = doc.get("head")
    model: Path | None = None
    channel = "xr.head"
    if head is not None:
        if "model" not in head:
            raise JitterlabError(f'{path}: [head] needs model = "FILE"')
        model = Path(head["model"])
        if not model.is_absolute():
            model = path.parent / model
        load_model(model)  # a missing or damaged model: one line naming the file and the field
        channel = check_channel(head.get("channel", channel))
    prefix = doc.get("frames", {}).get("channel_prefix")
    if prefix is not None:
        check_channel(prefix + FRAME_SUFFIXES[0])
    if model is None and prefix is None:
        raise JitterlabError(f"{path}: names no pose ([head]) and no frame timing ([frames]): nothing to do")
    return XrConfig(path.resolve(), int(doc.get("seed", 0)), model, channel, prefix)


def environment(config: Path | None) -> dict[str, str]:
    """The variables that enable the layer (prepended to what the environment already has)."""
    env = {
        "XR_API_LAYER_PATH": os.pathsep.join(
            p for p in (str(layer_dir()), os.environ.get("XR_API_LAYER_PATH", "")) if p
        ),
        "XR_ENABLE_API_LAYERS": os.pathsep.join(
            p for p in (LAYER_NAME, os.environ.get("XR_ENABLE_API_LAYERS", "")) if p
        ),
    }
    if config is not None:
        env["JITTERLAB_XR_CONFIG"] = str(config.resolve())
    return env


def _ports(listen: str, count: int) -> list[str]:
    from jitterlab.monitor.metrics import parse_listen

    host, port = parse_listen(listen)
    if port + count - 1 > 65535:
        raise JitterlabError(f"--listen {listen}: needs {count} ports from {port}")
    return [f"{host}:{port + i}" for i in range(count)]


def run_app(
    config: XrConfig, argv: Sequence[str], store: Path, listen: str, min_seconds: float = 0.5
) -> tuple[int, list[tuple[str, str]]]:
    """Start a ``monitor serve`` per channel, run ``argv`` with the layer enabled, stop the
    servers when it exits; returns its exit code and (channel, run id) of each stored run.
    An application that exits within ``min_seconds`` or before the layer recorded anything
    stores nothing: its runs are removed and the error names its exit code."""
    from jitterlab.monitor.launch import start_serve, wait_stored_or_none
    from jitterlab.store.runs import ResultsStore

    if not argv:
        raise JitterlabError(
            "xr run needs the application after --: jitterlab xr run --config xr.toml -- APP ARGS"
        )
    env = {**os.environ, **environment(config.path)}
    servers: list[tuple[str, subprocess.Popen[str]]] = []
    try:
        for channel, address in zip(config.channels, _ports(listen, len(config.channels)), strict=True):
            servers.append((channel, start_serve(channel, store, address, "--json", stdout=subprocess.PIPE)))
        started = time.monotonic()
        try:
            code = subprocess.call(list(argv), env=env)
        except OSError as e:
            raise JitterlabError(f"cannot start {argv[0]}: {e.strerror or e}") from e
        elapsed = time.monotonic() - started
    finally:
        for _, proc in servers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
    ended = [(channel, wait_stored_or_none(proc)) for channel, proc in servers]
    stored = [(channel, run_id) for channel, run_id in ended if run_id is not None]
    runs = {r.id: r for r in ResultsStore(store).runs()}
    empty = not stored or all(r in runs and len(runs[r].latency_ns) == 0 for _, r in stored)
    if elapsed < min_seconds or empty:
        for _, run_id in stored:
            if run_id in runs:
                import shutil

                shutil.rmtree(runs[run_id].path, ignore_errors=True)
        raise JitterlabError(
            f"{argv[0]} exited after {elapsed:.2f} s with code {code} before the layer recorded "
            "a frame; nothing stored"
        )
    return code, stored

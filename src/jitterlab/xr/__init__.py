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
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from jitterlab.core.errors import JitterlabError
from jitterlab.core.programs import PACKAGE_ROOT

LAYER_NAME = "XR_APILAYER_JITTERLAB_latency"
LAYER_MANIFEST = f"{LAYER_NAME}.json"
TEST_RUNTIME_MANIFEST = "jitterlab_xr_test_runtime.json"
FRAME_SUFFIXES = (".frame-interval", ".frame-time", ".pose-age")

# The lines the layer's reader accepts (xr_config.hpp): comments, [table], key = "string" or integer.
_LINE = re.compile(
    r'^\s*(#.*|\[[a-z]+(\.[A-Za-z0-9_-]+)?\]\s*(#.*)?|[a-z_]+\s*=\s*("([^"\\]|\\["\\])*"|[0-9_]{1,19})\s*(#.*)?)?\s*$'
)
_TABLE = re.compile(r"^\s*\[([^\]]*)\]")
_POSE_KEYS: dict[str, type] = {"model": str, "channel": str, "seed": int}
_KEYS: dict[str, type | dict[str, type]] = {
    "seed": int,
    "head": _POSE_KEYS,
    "every": _POSE_KEYS,
    "frames": {"channel_prefix": str},
}
_TABLES = "poses: [head], [pose.NAME], [every]; frame timing: [frames]"
# An OpenXR path as the layer accepts it (xr_config.hpp Config::path_ok).
_XR_PATH = re.compile(r"^(/[a-z0-9_.-]+)+$")
_POSE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


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
class XrPose:
    """One delayed pose: ``head``, ``every``, or NAME of ``[pose.NAME]`` (with its subaction
    ``path``), its model, its channel and the seed of its schedule."""

    name: str
    path: str | None
    model: Path
    channel: str
    seed: int


@dataclass(frozen=True)
class XrConfig:
    """A checked layer configuration: the delayed poses' models and the monitor channels."""

    path: Path
    seed: int
    poses: tuple[XrPose, ...]
    frame_prefix: str | None

    @property
    def pose_channels(self) -> list[str]:
        """The channels of the delivered delays, one per pose, in file order."""
        return [p.channel for p in self.poses]

    @property
    def channels(self) -> list[str]:
        """Every channel the layer writes: the poses' first, then the frame timing's."""
        out = self.pose_channels
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
    tables = dict(doc.pop("pose", {}))  # [pose.NAME]
    if not all(isinstance(v, dict) for v in tables.values()):
        raise JitterlabError(f"{path}: 'pose' takes tables [pose.NAME] only")
    for key, value in doc.items():
        want = _KEYS.get(key)
        if want is None:
            raise JitterlabError(
                f"{path}: unknown {'table' if isinstance(value, dict) else 'key'} '{key}' ({_TABLES})"
            )
        if isinstance(want, dict):
            if not isinstance(value, dict):
                raise JitterlabError(f"{path}: '{key}' must be a table")
            _check_keys(path, key, value, want)
        elif not isinstance(value, want) or isinstance(value, bool):
            raise JitterlabError(f"{path}: '{key}' must be an integer")
    seed = int(doc.get("seed", 0))
    # the poses in file order: a pose's seed defaults to the file's plus its position
    order = [m.group(1).strip() for m in map(_TABLE.match, text.splitlines()) if m]
    order = [t for t in order if t in ("head", "every") or t.startswith("pose.")]
    poses: list[XrPose] = []
    for position, table in enumerate(order):
        name = table.removeprefix("pose.")
        body = doc[table] if table in ("head", "every") else tables[name]
        if table.startswith("pose."):
            if not _POSE_NAME.match(name) or name in ("head", "every"):
                raise JitterlabError(f"{path}: [pose.NAME] needs a NAME of letters, digits, '_' and '-'")
            _check_keys(path, table, body, {**_POSE_KEYS, "path": str})
            sub = body.get("path", "")
            if not _XR_PATH.match(sub) or len(sub) >= 256:
                raise JitterlabError(
                    f'{path}: [{table}] needs path = "/user/..." (a subaction path, e.g. /user/hand/left)'
                )
            if any(p.path == sub for p in poses):
                raise JitterlabError(f"{path}: path '{sub}' is named by two tables")
        if "model" not in body:
            raise JitterlabError(f'{path}: [{table}] needs model = "FILE"')
        model = Path(body["model"])
        if not model.is_absolute():
            model = path.parent / model
        load_model(model)  # a missing or damaged model: one line naming the file and the field
        channel = check_channel(body.get("channel", f"xr.{name}"))
        poses.append(XrPose(name, body.get("path"), model, channel, int(body.get("seed", seed + position))))
    prefix = doc.get("frames", {}).get("channel_prefix")
    if prefix is not None:
        check_channel(prefix + FRAME_SUFFIXES[0])
    if not poses and prefix is None:
        raise JitterlabError(
            f"{path}: names no pose ([head], [pose.NAME], [every]) and no frame timing ([frames]): nothing to do"
        )
    config = XrConfig(path.resolve(), seed, tuple(poses), prefix)
    seen = set()
    for channel in config.channels:
        if channel in seen:
            raise JitterlabError(f"{path}: channel '{channel}' is named twice")
        seen.add(channel)
    return config


def _check_keys(path: Path, table: str, body: dict[str, object], want: dict[str, type]) -> None:
    for sub, v in body.items():
        if sub not in want or not isinstance(v, want[sub]) or isinstance(v, bool):
            raise JitterlabError(f"{path}: unknown key '{table}.{sub}' (or a value of the wrong type)")


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


class _Forked:
    """``monitor serve`` in a forked child of this process, for a user who may not execute
    this interpreter (it lives in another user's folder: a Python of root's, used by a study
    account). The parts of :class:`subprocess.Popen` that ``run_app`` uses."""

    def __init__(self, args: Sequence[str]) -> None:
        read, write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:  # the child: main() of `jitterlab monitor serve`, stderr into the pipe
            code = 1
            try:
                os.close(read)
                os.dup2(write, 2)
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                import importlib

                # what `python -m jitterlab ARGS` (monitor.launch.start_serve) runs, without
                # the exec: the command line's entry point, named at run time as a process is
                code = importlib.import_module("jitterlab.cli.main").main(list(args))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            except BaseException:  # said on the pipe: the parent's error names it
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        os.close(write)
        self.stderr = os.fdopen(read, "r", encoding="utf-8", errors="replace")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        err = self.stderr.read()
        self.stderr.close()
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return "", err


def _start_server(channel: str, store: Path, address: str, *options: str) -> subprocess.Popen[str]:
    """``monitor serve`` of ``channel``, started and draining: a process of this interpreter,
    or a forked child when this user may not execute it."""
    from jitterlab.monitor.launch import start_serve

    if os.access(sys.executable, os.X_OK):
        return start_serve(channel, store, address, *options, stdout=subprocess.PIPE)
    args = ["monitor", "serve", "--channel", channel, "--store", str(store), "--listen", address, *options]
    proc = _Forked(args)
    said = []
    for line in proc.stderr:
        if line.startswith("serving channel"):
            return cast("subprocess.Popen[str]", proc)  # poll, send_signal, communicate, returncode
        said.append(line.strip())
    proc.communicate()
    raise JitterlabError(f"monitor serve did not start (exit {proc.returncode}): {' '.join(said)}")


def _hints(channels: Sequence[str]) -> dict[str, str]:
    """The hint of each channel's ring now (where the layer leaves its note)."""
    from jitterlab.monitor.recorder import Reader

    out = {}
    for channel in channels:
        try:
            reader = Reader(channel, batch=1)
        except JitterlabError:
            out[channel] = ""
            continue
        out[channel] = reader.hint()
        reader.close()
    return out


def run_app(
    config: XrConfig,
    argv: Sequence[str],
    store: Path,
    listen: str,
    min_seconds: float = 0.5,
    baseline: str | None = None,
    trial: str | None = None,
    warn: Callable[[str], None] = lambda _: None,
) -> tuple[int, list[tuple[str, str]]]:
    """Start a ``monitor serve`` per channel, run ``argv`` with the layer enabled, stop the
    servers when it exits; returns its exit code and (channel, run id) of each stored run.
    ``baseline`` (a run) screens the trials of the poses' channels live, as ``monitor serve
    --baseline`` does; each session of the application is a trial tagged ``trial`` (default
    session-N). An application that exits within ``min_seconds`` or before the layer
    recorded anything stores nothing: its runs are removed and the error names its exit code,
    or what the layer said on the monitor (its note: a config or model it could not read).
    A note with runs stored goes to ``warn``."""
    from jitterlab.monitor.launch import wait_stored_or_none
    from jitterlab.monitor.recorder import writer_note
    from jitterlab.store.runs import ResultsStore, load_run

    if not argv:
        raise JitterlabError(
            "xr run needs the application after --: jitterlab xr run --config xr.toml -- APP ARGS"
        )
    if baseline is not None:
        if not config.poses:
            raise JitterlabError("--baseline screens the poses' delivered delay: the config names no pose")
        baseline = load_run(baseline, ResultsStore(store)).id  # an unknown run: one line, nothing started
    env = {**os.environ, **environment(config.path)}
    if trial is not None:
        from jitterlab.monitor.recorder import TAG_MAX

        if not trial or len(trial.encode()) > TAG_MAX:
            raise JitterlabError(f"--trial '{trial}': a tag of 1 to {TAG_MAX} bytes")
        env["JITTERLAB_XR_TRIAL"] = trial
    servers: list[tuple[str, subprocess.Popen[str]]] = []
    try:
        for channel, address in zip(config.channels, _ports(listen, len(config.channels)), strict=True):
            screen = ("--baseline", baseline) if baseline and channel in config.pose_channels else ()
            servers.append((channel, _start_server(channel, store, address, "--json", *screen)))
        before = _hints(config.channels)
        started = time.monotonic()
        try:
            code = subprocess.call(list(argv), env=env)
        except OSError as e:
            raise JitterlabError(f"cannot start {argv[0]}: {e.strerror or e}") from e
        elapsed = time.monotonic() - started
        after = _hints(config.channels)
    finally:
        for _, proc in servers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
    ended = [(channel, wait_stored_or_none(proc)) for channel, proc in servers]
    stored = [(channel, run_id) for channel, run_id in ended if run_id is not None]
    runs = {r.id: r for r in ResultsStore(store).runs()}
    empty = not stored or all(r in runs and len(runs[r].latency_ns) == 0 for _, r in stored)
    notes = [n for c in config.channels if (n := writer_note(before[c], after[c]))]
    if elapsed < min_seconds or empty:
        for _, run_id in stored:
            if run_id in runs:
                import shutil

                shutil.rmtree(runs[run_id].path, ignore_errors=True)
        if notes:
            raise JitterlabError(f"{notes[0]}; {argv[0]} exited with code {code}; nothing stored")
        raise JitterlabError(
            f"{argv[0]} exited after {elapsed:.2f} s with code {code} before the layer recorded "
            "a frame; nothing stored"
        )
    if notes:
        warn(notes[0])
    return code, stored

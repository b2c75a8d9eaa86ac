"""Shared fixtures: a private results store and helpers that run the real CLI."""

from __future__ import annotations

import ast
import os
import pwd
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from jitterlab.cli import main
from jitterlab.store import ResultsStore, Run
from jitterlab.store.rawfile import RECORD_DTYPE, RawSamples


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "results"


@dataclass(frozen=True)
class OtherUser:
    """A second, unprivileged local user (the hostile or careless neighbour of issue 24)."""

    name: str
    uid: int
    gid: int

    def python(self, code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run ``code`` in a Python process with this user's uid and gid only.

        The interpreter lives under /root (mode 0700 here), so the process starts as root,
        imports what it needs and then gives up every privilege for good (setgroups, setresgid,
        setresuid) before ``code`` runs: from then on the kernel treats it as this user."""
        prelude = (
            "import os, pwd, errno, stat, ctypes, pathlib\n"
            "import jitterlab.core.fileio, jitterlab.monitor.recorder as recorder\n"
            "recorder.library()\n"
            f"os.setgroups([]); os.setresgid({self.gid}, {self.gid}, {self.gid}); "
            f"os.setresuid({self.uid}, {self.uid}, {self.uid})\n"
            "assert os.geteuid() != 0 and os.getegid() != 0\n"
        )
        return subprocess.run(
            [sys.executable, "-c", prelude + code],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd="/",
        )

    def jitterlab(self, *args: str, home: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``jitterlab ARGS`` as this user, from ``home`` (also its HOME).

        Like :meth:`python`, the interpreter cannot be read by this user once it has given
        up root, so every module of jitterlab and of the libraries it loads lazily is
        imported first; everything the command does after that (its files, its processes,
        the native programs it starts) happens with this user's uid and gid only."""
        code = (
            "import importlib, os, pkgutil, sys\n"
            "import jitterlab\n"
            "for m in pkgutil.walk_packages(jitterlab.__path__, 'jitterlab.'):\n"
            "    if not m.name.endswith('__main__'):\n"
            "        importlib.import_module(m.name)\n"
            "for name in ('numpy', 'pyarrow', 'pyarrow.parquet', 'pyarrow.compute', 'pandas',\n"
            "             'jsonschema', 'scipy.stats', 'matplotlib', 'matplotlib.font_manager', 'concurrent.futures.process',\n"
            "             'multiprocessing.synchronize', 'multiprocessing.popen_fork',\n"
            "             'multiprocessing.queues', 'multiprocessing.connection', 'encodings.idna'):\n"
            "    importlib.import_module(name)\n"
            f"os.setgroups([]); os.setresgid({self.gid}, {self.gid}, {self.gid}); "
            f"os.setresuid({self.uid}, {self.uid}, {self.uid})\n"
            "assert os.geteuid() != 0 and os.getegid() != 0\n"
            "from jitterlab.cli.main import main\n"
            f"sys.exit(main({list(args)!r}))\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("JITTERLAB_")}
        env |= {
            "HOME": str(home),
            "USER": self.name,
            "LOGNAME": self.name,
            # matplotlib's font cache, built here (as root) and read while the command is
            # still root: a user's first build can take over 5 s on a loaded machine, when
            # matplotlib logs "building the font cache" to stderr, a second line in tests
            # that check for one
            "MPLCONFIGDIR": _font_cache_dir(),
        }
        return subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=home,
            env=env,
        )


def _font_cache_dir() -> str:
    """The folder of this (root) process's matplotlib font cache, built once."""
    import matplotlib
    from matplotlib import font_manager  # noqa: F401  (builds the cache if there is none)

    return matplotlib.get_cachedir()


@pytest.fixture
def other_user() -> Iterator[OtherUser]:
    """A temporary unprivileged user, created for the test and always removed after it."""
    if os.geteuid() != 0:
        pytest.skip("creating a second user needs root (the suite runs as root in CI)")
    name = f"jlt{secrets.token_hex(4)}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    try:
        entry = pwd.getpwnam(name)
        yield OtherUser(name, entry.pw_uid, entry.pw_gid)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``python -m jitterlab ARGS`` as a real process."""
    return subprocess.run(
        [sys.executable, "-m", "jitterlab", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    try:
        code = main(args)
    except SystemExit as e:  # argparse errors
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str) -> None:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got: {err!r}"
    assert "Traceback" not in err
    assert "error" in lines[0]


def module_nodes(
    root: Path, leave_out: Callable[[str], bool] = lambda relative: False
) -> Iterator[tuple[str, ast.AST]]:
    """Every node of every module below ``root`` (by path; a module ``leave_out`` names is
    not read), with the module's path from ``root`` (``describe/report.py``): what the
    checks on the source walk."""
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if not leave_out(relative):
            for node in ast.walk(ast.parse(path.read_text())):
                yield relative, node


def make_run(
    store: Path,
    latency: np.ndarray,
    t_send: np.ndarray | None = None,
    technique: str = "synthetic",
    pairs: int = 1,
) -> Run:
    """Store a synthetic run (real store code path, no harness) and return it."""
    n = latency.size
    records = np.zeros(n, dtype=RECORD_DTYPE)
    records["pair"] = np.arange(n) % pairs
    records["seq"] = np.arange(n) // pairs
    records["t_send_ns"] = t_send if t_send is not None else 1_000_000_000 + np.arange(n) * 10_000
    records["t_recv_ns"] = records["t_send_ns"] + latency
    s = ResultsStore(store)
    meta = {
        "schema_version": 1,
        "kind": "run",
        "id": s.new_run_id(technique, f"p{pairs}"),
        "created_utc": "2026-01-01T00:00:00.000+00:00",
        "status": "complete",
        "partial_reason": "",
        "config": {
            "runtime": "synthetic",
            "technique": technique,
            "pairs": pairs,
            "policy": "other",
            "samples_per_pair": n // pairs,
        },
        "timing": {"started_realtime_ns": 1_700_000_000_000_000_000},
    }
    return s.commit(s.staging_dir(meta["id"]), RawSamples(records, False, False, ""), meta)


def latency_clusters(seed: int, n: int = 50_000) -> np.ndarray:
    """A main cluster near 10 µs, a cluster near 30 µs and rare spikes near 1 ms."""
    rng = np.random.default_rng(seed)
    main = rng.normal(10_000, 500, n)
    second = rng.normal(30_000, 1_000, n // 50)
    spikes = rng.normal(1_000_000, 20_000, n // 2000)
    x = np.concatenate([main, second, spikes]).astype(np.int64)
    rng.shuffle(x)
    return x


SCHEMAS = Path(__file__).resolve().parents[1] / "docs" / "schemas"


def assert_matches_schema(document: object, name: str) -> None:
    """``document`` (a command's parsed --json output) is valid against
    docs/schemas/NAME.schema.json, whose references to the other schemas there
    (common.schema.json) resolve locally."""
    import json

    import jsonschema
    from referencing import Registry, Resource

    loaded = {p.name: json.loads(p.read_text()) for p in SCHEMAS.glob("*.schema.json")}
    for contents in loaded.values():
        jsonschema.Draft202012Validator.check_schema(contents)
    registry: Registry = Registry().with_resources(
        (contents["$id"], Resource.from_contents(contents)) for contents in loaded.values()
    )
    schema = loaded[f"{name}.schema.json"]
    jsonschema.Draft202012Validator(schema, registry=registry).validate(document)


def heavy_tail(seed: int, n: int = 1_000_000) -> np.ndarray:
    """A log-normal body near 22 µs, 2 % clusters 50-200 µs above it, 0.1 % spikes to 20 ms."""
    rng = np.random.default_rng(seed)
    x = rng.lognormal(10, 0.3, n).astype(np.int64)
    cluster = rng.random(n) < 0.02
    x[cluster] += rng.integers(50_000, 200_000, int(cluster.sum()))
    spike = rng.random(n) < 0.001
    x[spike] += rng.integers(1_000_000, 20_000_000, int(spike.sum()))
    return x


def spiky(seed: int, n: int, far_spikes: bool = False) -> np.ndarray:
    """A log-normal body near 13 µs, 3 % clusters 20-80 µs above it, 0.05 % spikes to 10 ms;
    ``far_spikes``: five more, 20 to 320 ms, that Walsh's test tells apart."""
    rng = np.random.default_rng(seed)
    x = rng.lognormal(9.5, 0.2, n).astype(np.int64)
    cluster = rng.random(n) < 0.03
    x[cluster] += rng.integers(20_000, 80_000, int(cluster.sum()))
    spike = rng.random(n) < 0.0005
    x[spike] += rng.integers(500_000, 10_000_000, int(spike.sum()))
    if far_spikes and n > 1000:
        x[rng.choice(n, 5, replace=False)] = 20_000_000 * 2 ** np.arange(5)
    return x


def sshd_in_namespace(tmp: Path, netns: str) -> subprocess.Popen[bytes]:
    """A real sshd in ``netns`` that lets root in with the key in ``tmp/authorized_keys``
    only (host key ``tmp/hostkey``): the tests' stand-in for another machine. Returns once it
    accepts connections; it logs to ``tmp/sshd-NETNS.log`` (:func:`sshd_logs`).

    Each daemon has a config file of its own, written whole before it starts: the fixtures
    start one per namespace, and one file rewritten for the next daemon (truncated, then
    written) could be read empty by the one before, which then ran on sshd's defaults (root
    only with /root/.ssh/authorized_keys: "Permission denied"). A fixed sleep after starting
    was not a wait for it either: on a loaded machine ssh could come first."""
    config = tmp / f"sshd_config-{netns}"
    draft = config.with_name(config.name + ".tmp")
    draft.write_text(
        f"HostKey {tmp / 'hostkey'}\nAuthorizedKeysFile {tmp / 'authorized_keys'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nStrictModes no\nUsePAM no\n"
        "PidFile none\nPort 22\nLogLevel VERBOSE\n"
    )
    draft.replace(config)
    log = tmp / f"sshd-{netns}.log"
    Path("/run/sshd").mkdir(exist_ok=True)
    daemon = subprocess.Popen(
        ["ip", "netns", "exec", netns, "/usr/sbin/sshd", "-D", "-E", str(log), "-f", str(config)],
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:  # listening: a connection from inside its namespace is accepted
        probe = ["ip", "netns", "exec", netns, "nc", "-z", "-w", "1", "127.0.0.1", "22"]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return daemon
        if daemon.poll() is not None or time.monotonic() > deadline:
            daemon.kill()
            daemon.wait()
            raise RuntimeError(f"sshd in {netns} did not start: {sshd_logs(tmp)}")
        time.sleep(0.05)


def sshd_logs(tmp: Path) -> str:
    """What the test daemons in ``tmp`` logged (why a server refused, in a failed assertion)."""
    return "".join(
        f"\n--- {log.name}\n{log.read_text(errors='replace')[-2000:]}"
        for log in sorted(tmp.glob("sshd-*.log"))
    )

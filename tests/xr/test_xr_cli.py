"""``jitterlab xr env`` and ``xr run``: the installed OpenXR layer with the headless test
runtime and the test application (native/xr) through the real Khronos loader; the delivered
delay lands in the store as a ``monitor serve`` run, frame for frame what the application saw."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from conftest import OtherUser, assert_one_line_error, run_cli
from jitterlab.core.programs import PACKAGE_ROOT, native_program
from jitterlab.simulate.model import load_model, simulate_delays
from jitterlab.store import ResultsStore

RUNTIME = PACKAGE_ROOT / "lib" / "openxr" / "runtime" / "jitterlab_xr_test_runtime.json"
pytestmark = pytest.mark.skipif(not RUNTIME.is_file(), reason="built without openxr.h (libopenxr-dev)")

MODEL = {
    "kind": "jitterlab.model",
    "schema_version": 1,
    "base": {"kind": "quantiles", "quantiles_ns": [10_000_000 + i * 20_000_000 / 63 for i in range(64)]},
    "categories": [],
}


def free_port_base(count: int) -> str:
    """A loopback port with ``count`` free ports from it (checked now; the test uses them at once)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count > 65535:
            continue
        try:
            socks = []
            for i in range(count):
                t = socket.socket()
                socks.append(t)
                t.bind(("127.0.0.1", base + i))
            return f"127.0.0.1:{base}"
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
    raise AssertionError("no free ports")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "model.json").write_text(json.dumps(MODEL))
    channel = f"xr-test-{os.getpid()}"
    path = tmp_path / "xr.toml"
    path.write_text(f'seed = 5\n[head]\nmodel = "model.json"\nchannel = "{channel}"\n')
    yield path
    subprocess.run(
        [sys.executable, "-m", "jitterlab", "monitor", "unlink", "--channel", channel], capture_output=True
    )


def test_env_names_the_installed_layer_and_the_config(config: Path) -> None:
    out = run_cli("xr", "env", "--config", str(config))
    assert out.returncode == 0, out.stderr
    env = dict(line.removeprefix("export ").split("=", 1) for line in out.stdout.splitlines())
    assert Path(env["XR_API_LAYER_PATH"].split(os.pathsep)[0], "XR_APILAYER_JITTERLAB_latency.json").is_file()
    assert env["XR_ENABLE_API_LAYERS"].split(os.pathsep)[0] == "XR_APILAYER_JITTERLAB_latency"
    assert env["JITTERLAB_XR_CONFIG"] == str(config.resolve())
    assert "XR_APILAYER_JITTERLAB_latency" in run_cli("sdk").stdout


def test_run_stores_the_delivered_delay_the_application_saw(
    config: Path, store: Path, tmp_path: Path
) -> None:
    app = native_program("jitterlab-xr-testapp")
    os.environ["XR_RUNTIME_JSON"] = str(RUNTIME)
    os.environ["JL_XR_TEST_PERIOD_NS"] = "5000000"
    try:
        out = run_cli(
            "xr",
            "run",
            "--config",
            str(config),
            "--store",
            str(store),
            "--listen",
            free_port_base(1),
            "--",
            str(app),
            "--frames",
            "400",
        )
    finally:
        del os.environ["XR_RUNTIME_JSON"], os.environ["JL_XR_TEST_PERIOD_NS"]
    assert out.returncode == 0, out.stderr
    # The application's CSV went to the same stdout, then one line per stored run.
    lines = out.stdout.splitlines()
    rows = [line.split(",") for line in lines[1:] if line and line[0].isdigit()]
    channel, run_id = lines[-1].split("\t")
    assert channel.startswith("xr-test-")
    assert len(rows) == 400
    run = next(r for r in ResultsStore(store).runs() if r.id == run_id)
    recorded = run.latency_ns.astype(np.float64)
    seen = np.array([float(r[3]) for r in rows])
    assert len(recorded) == 400
    np.testing.assert_allclose(recorded, seen, atol=20_000)  # frame for frame (float32 poses)
    np.testing.assert_allclose(seen, [float(r[1]) for r in rows], atol=20_000)  # eyes and head agree
    # After start-up (history shorter than d), the delivered delays follow the model (KS).
    display = np.array([float(r[0]) for r in rows])
    steady = recorded[display - recorded > display[0]]
    reference = simulate_delays(load_model(config.parent / "model.json"), np.arange(20_000) * 5e6, seed=1)
    ks = stats.ks_2samp(steady, reference)
    assert ks.pvalue > 0.001, ks


def test_bad_config_is_one_line_and_exit_2(tmp_path: Path, store: Path) -> None:
    (tmp_path / "damaged.json").write_text('{"kind": "jitterlab.mo')
    cases = {
        '[hands]\nmodel = "m.json"\n': "unknown table 'hands'",
        '[pose.left]\nmodel = "m.json"\n': "[pose.left] needs path",
        '[pose.x]\npath = "/user/hand/"\nmodel = "m.json"\n': "[pose.x] needs path",
        '[pose.a.b]\npath = "/user/hand/left"\nmodel = "m.json"\n': "the layer reads only",
        '[head]\nmodel = "missing.json"\n': "missing.json",
        '[head]\nmodel = "damaged.json"\n': "damaged.json",
        '[head]\nmodel = "damaged.json"\nchannel = "a/b"\n': "damaged.json",
        '[frames]\nchannel_prefix = "no good"\n': "channel name",
        "seed = 1.5\n": "the layer reads only",
    }
    for text, why in cases.items():
        path = tmp_path / "xr.toml"
        path.write_text(text)
        out = run_cli("xr", "run", "--config", str(path), "--store", str(store), "--", "true")
        assert out.returncode == 2, (text, out.stderr)
        assert_one_line_error(out.stderr)
        assert why in out.stderr, (text, out.stderr)
    assert not store.exists() or not ResultsStore(store).runs()


def test_an_application_that_exits_at_once_stores_nothing(config: Path, store: Path) -> None:
    out = run_cli(
        "xr",
        "run",
        "--config",
        str(config),
        "--store",
        str(store),
        "--listen",
        free_port_base(1),
        "--",
        "true",
    )
    assert out.returncode == 2
    assert_one_line_error(out.stderr.replace("warning[no-baseline]", "").strip())
    assert "nothing stored" in out.stderr
    assert not ResultsStore(store).runs()


def xr_run(
    config: Path, store: Path, *options: str, app: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``jitterlab xr run`` of the test application (or ``app``) on the test runtime (5 ms frames)."""
    os.environ["XR_RUNTIME_JSON"] = str(RUNTIME)
    os.environ["JL_XR_TEST_PERIOD_NS"] = "5000000"
    try:
        return run_cli(
            "xr",
            "run",
            "--config",
            str(config),
            "--store",
            str(store),
            "--listen",
            free_port_base(4),
            *options,
            "--",
            *(app or [str(native_program("jitterlab-xr-testapp")), "--frames", "300"]),
        )
    finally:
        del os.environ["XR_RUNTIME_JSON"], os.environ["JL_XR_TEST_PERIOD_NS"]


def test_each_hand_becomes_its_own_run_frame_for_frame(tmp_path: Path, store: Path) -> None:
    """Issue 40 item 1: the hands' action spaces (by subaction path) are delayed each by its
    own model and d, recorded on its own channel, stored as its own run."""
    (tmp_path / "model.json").write_text(json.dumps(MODEL))
    slow = dict(MODEL, base={"kind": "quantiles", "quantiles_ns": [40e6 + i * 20e6 / 63 for i in range(64)]})
    (tmp_path / "slow.json").write_text(json.dumps(slow))
    ch = f"xr-hands-{os.getpid()}"
    config = tmp_path / "xr.toml"
    config.write_text(
        f'seed = 5\n[head]\nmodel = "model.json"\nchannel = "{ch}.head"\n'
        f'[pose.left]\npath = "/user/hand/left"\nmodel = "model.json"\nchannel = "{ch}.left"\n'
        f'[pose.right]\npath = "/user/hand/right"\nmodel = "slow.json"\nchannel = "{ch}.right"\n'
    )
    try:
        out = xr_run(config, store)
    finally:
        for suffix in ("head", "left", "right"):
            run_cli("monitor", "unlink", "--channel", f"{ch}.{suffix}")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    rows = [line.split(",") for line in lines if line and line[0].isdigit()]
    assert len(rows) == 300
    stored = dict(line.split("\t") for line in lines if "\t" in line)
    assert set(stored) == {f"{ch}.head", f"{ch}.left", f"{ch}.right"}
    runs = {r.id: r for r in ResultsStore(store).runs()}
    for channel, column in ((f"{ch}.head", 3), (f"{ch}.left", 7), (f"{ch}.right", 8)):
        recorded = runs[stored[channel]].latency_ns.astype(np.float64)
        np.testing.assert_allclose(recorded, [float(r[column]) for r in rows], atol=20_000, err_msg=channel)
    right = runs[stored[f"{ch}.right"]].latency_ns
    display = np.array([float(r[0]) for r in rows])
    assert np.all(right[display - right > display[0]] >= 40e6), "the right hand follows its own model"
    assert runs[stored[f"{ch}.right"]].meta["monitor"]["trials"][0]["tag"] == "session-1"


def test_a_model_the_layer_cannot_read_is_said_through_the_monitor(config: Path, store: Path) -> None:
    """Issue 40 item 3: the model is damaged after xr run checked it (as a file changed behind
    a study's back): the layer passes through and leaves its line as the channel's note;
    xr run says it (exit 2), nothing is stored."""
    app = native_program("jitterlab-xr-testapp")
    model = config.parent / "model.json"
    script = f'printf garbage > "{model}"; exec "{app}" --frames 100'
    out = xr_run(config, store, app=["sh", "-c", script])
    assert out.returncode == 2, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert "jitterlab xr layer (pid" in last and "not JSON" in last and "nothing stored" in last, out.stderr
    assert not ResultsStore(store).runs()


def test_monitor_serve_says_the_layer_note(config: Path, store: Path) -> None:
    """Started by hand (xr env, then the application), monitor serve reports the layer's note
    in its one line when the layer passed every call through."""
    from jitterlab.monitor.launch import start_serve
    from jitterlab.xr import environment

    channel = f"xr-test-{os.getpid()}"
    (config.parent / "model.json").write_text('{"kind": "jitterlab.mo')
    server = start_serve(channel, store, free_port_base(1))
    env = {**os.environ, **environment(config), "XR_RUNTIME_JSON": str(RUNTIME)}
    env["JL_XR_TEST_PERIOD_NS"] = "5000000"
    app = subprocess.run(
        [str(native_program("jitterlab-xr-testapp")), "--frames", "20"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert app.returncode == 0, app.stderr
    assert "passing every call through" in app.stderr
    server.send_signal(signal.SIGTERM)
    _, err = server.communicate(timeout=60)
    assert server.returncode == 1, err
    assert f"no writer recorded on channel '{channel}'" in err, err
    assert "the writer said: jitterlab xr layer (pid" in err and "not JSON" in err, err
    assert not ResultsStore(store).runs()


@pytest.mark.slow
def test_a_study_measure_model_xr_run_screened_report_and_paper(tmp_path: Path, store: Path) -> None:
    """Issue 40 "done when", end to end with real parts: a small measured run (``bench``) →
    ``model build`` → ``xr run --baseline`` of the unchanged test application with that model
    (its session a trial screened live) → ``monitor trials`` → ``report`` and ``paper`` of the
    delivered delay beside the measured run the model came from."""

    def cli(*args: str) -> str:
        out = run_cli(*args, "--store", str(store))
        assert out.returncode == 0, (args, out.stderr)
        return out.stdout

    cli(
        "bench", "--technique", "mutex", "--samples", "20000", "--warmup-samples", "100", "--name", "measured"
    )
    model = tmp_path / "model.json"
    cli("model", "build", "measured", "-o", str(model))
    channel = f"xr-study-{os.getpid()}"
    config = tmp_path / "xr.toml"
    config.write_text(f'seed = 3\n[head]\nmodel = "model.json"\nchannel = "{channel}"\n')
    try:
        out = xr_run(config, store, "--baseline", "measured", "--trial", "cond-A/p01")
    finally:
        run_cli("monitor", "unlink", "--channel", channel)
    assert out.returncode == 0, out.stderr
    channel_, run_id = out.stdout.splitlines()[-1].split("\t")
    assert channel_ == channel
    run = next(r for r in ResultsStore(store).runs() if r.id == run_id)
    measured = next(r for r in ResultsStore(store).runs() if r.meta.get("name") == "measured")
    assert run.meta["monitor"]["baseline"] == measured.id, "screened live against the measured run"
    assert len(run.latency_ns) == 300

    trials = json.loads(cli("monitor", "trials", run_id, "--json"))
    text = json.dumps(trials)
    assert "cond-A/p01" in text, text
    assert cli("monitor", "trials", run_id).count("cond-A/p01") == 1

    report = tmp_path / "report.html"
    cli("report", measured.id, run_id, "-o", str(report))
    html = report.read_text()
    assert run_id in html and measured.id in html
    paper = tmp_path / "paper"
    cli("paper", measured.id, run_id, "-o", str(paper))
    written = "".join(
        p.read_text(errors="replace")
        for p in paper.rglob("*")
        if p.suffix in (".md", ".tex", ".csv", ".json")
    )
    assert run_id in written or channel in written, sorted(p.name for p in paper.rglob("*"))


def test_a_note_an_earlier_session_left_is_no_baseline_and_stays_unsaid(store: Path) -> None:
    """A layer's note stays in the ring after its session: a later monitor serve neither takes
    it for a baseline run nor reports it as this session's."""
    from jitterlab.monitor.launch import start_serve
    from jitterlab.monitor.recorder import Monitor, unlink

    channel = f"xr-stale-{os.getpid()}"
    try:
        Monitor(channel, baseline="note: jitterlab xr layer (pid 1): an earlier session").close()
        server = start_serve(channel, store, free_port_base(1))
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=60)
    finally:
        unlink(channel)
    assert server.returncode == 1, err
    assert "no writer recorded" in err and "the writer said" not in err, err


def _owned_by(uid: int, *folders: Path) -> set[Path]:
    """Every file and folder of ``uid`` below ``folders`` (others' tests come and go there)."""
    out = set()
    for folder in folders:
        for where, dirs, files in os.walk(folder):
            for name in [*dirs, *files]:
                try:
                    if os.lstat(Path(where, name)).st_uid == uid:
                        out.add(Path(where, name))
                except FileNotFoundError:
                    continue
    return out


def test_xr_run_as_an_unprivileged_user_into_their_own_store(other_user: OtherUser) -> None:
    """Issue 40 item 6: a study account (a real second user, no privileges) runs ``xr run``
    into its own store; the layer writes nothing but its ring (the user's, mode 0600)."""
    home = Path(tempfile.mkdtemp(prefix="jl-xr-user-"))
    channel = f"xr-user-{os.getpid()}"
    try:
        (home / "model.json").write_text(json.dumps(MODEL))
        (home / "xr.toml").write_text(f'seed = 5\n[head]\nmodel = "model.json"\nchannel = "{channel}"\n')
        os.chmod(home, 0o755)
        os.chown(home, other_user.uid, other_user.gid)
        shared = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))
        before = _owned_by(other_user.uid, *shared)
        os.environ["XR_RUNTIME_JSON"] = str(RUNTIME)
        os.environ["JL_XR_TEST_PERIOD_NS"] = "5000000"
        try:
            done = other_user.jitterlab(
                "xr",
                "run",
                "--config",
                str(home / "xr.toml"),
                "--store",
                str(home / "results"),
                "--listen",
                free_port_base(1),
                "--",
                str(native_program("jitterlab-xr-testapp")),
                "--frames",
                "200",
                home=home,
            )
        finally:
            del os.environ["XR_RUNTIME_JSON"], os.environ["JL_XR_TEST_PERIOD_NS"]
        assert done.returncode == 0, done.stderr
        _, run_id = done.stdout.splitlines()[-1].split("\t")
        (run,) = ResultsStore(home / "results").runs()
        assert run.id == run_id and len(run.latency_ns) == 200
        assert run.path.stat().st_uid == other_user.uid
        # Outside its store and its home (the matplotlib cache), the user wrote only the ring.
        ring = Path(f"/dev/shm/jitterlab-monitor-{channel}")
        new = {p for p in _owned_by(other_user.uid, *shared) - before if not p.is_relative_to(home)}
        assert new == {ring}, new
        assert ring.stat().st_uid == other_user.uid and stat.S_IMODE(ring.stat().st_mode) == 0o600
        written = {p.relative_to(home).parts[0] for p in _owned_by(other_user.uid, home)}
        assert written <= {"results", ".mpl"}, written
    finally:
        subprocess.run(
            [sys.executable, "-m", "jitterlab", "monitor", "unlink", "--channel", channel], check=False
        )
        shutil.rmtree(home, ignore_errors=True)

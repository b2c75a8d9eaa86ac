"""``jitterlab xr env`` and ``xr run``: the installed OpenXR layer with the headless test
runtime and the test application (native/xr) through the real Khronos loader; the delivered
delay lands in the store as a ``monitor serve`` run, frame for frame what the application saw."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from conftest import assert_one_line_error, run_cli
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

"""The injection engine (through jitterlab.Injector), the proxy on loopback, and validation.

Timing assertions are one-sided lower bounds the proxy must never break (an item never
leaves before its time); nothing here depends on how fast the machine is.
"""

from __future__ import annotations

import json
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from conftest import assert_matches_schema, assert_one_line_error, run_cli
from jitterlab import Injector
from jitterlab.core.errors import JitterlabError
from jitterlab.simulate.model import load_model, model_to_json, parametric_model, simulate_delays
from jitterlab.simulate.proxy import free_udp_port, proxy_argv, running_proxy
from jitterlab.simulate.validation import Validation, judge

MS = 1_000_000


def write_model(
    path: Path,
    base_ns: list[float],
    duration_ns: list[float] | None = None,
    gaps_ns: list[float] | None = None,
) -> Path:
    categories = []
    if duration_ns is not None and gaps_ns is not None:
        categories.append(
            {
                "category": 1,
                "rate_hz": 1.0,
                "duration_quantiles_ns": duration_ns,
                "interarrival_quantiles_ns": gaps_ns,
            }
        )
    doc = {
        "schema_version": 1,
        "kind": "jitterlab.model",
        "base": {"kind": "quantiles", "quantiles_ns": base_ns},
        "categories": categories,
    }
    path.write_text(json.dumps(doc))
    return path


def test_engine_matches_the_reference_exactly_on_a_deterministic_model(tmp_path: Path) -> None:
    path = write_model(tmp_path / "m.json", [1 * MS], [5 * MS], [10 * MS])
    arrivals = np.arange(200) * MS
    reference = simulate_delays(load_model(path), arrivals)
    with Injector(path) as inj:
        got = np.array([inj.push(i, int(t)) - int(t) for i, t in enumerate(arrivals)])  # type: ignore[operator]
    np.testing.assert_array_equal(got, reference)
    assert list(got[9:16] // MS) == [1, 6, 5, 4, 3, 2, 1]  # the spike holds back the items behind it


def test_engine_draws_follow_the_reference_distribution(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    model = parametric_model(normal=(2 * MS, 0.5 * MS), spikes=[(20 * MS, 2.0)])
    path.write_text(json.dumps(model_to_json(model)))
    arrivals = np.arange(50_000) * MS
    reference = simulate_delays(load_model(path), arrivals, seed=11)
    with Injector(path, seed=5, capacity=100_000) as inj:
        got = np.array([inj.push(None, int(t)) - int(t) for t in arrivals])  # type: ignore[operator]
    assert stats.ks_2samp(got, reference).statistic < 0.02


def test_pop_due_releases_only_what_is_due_in_order_and_reorder_overtakes(tmp_path: Path) -> None:
    path = write_model(tmp_path / "m.json", [1 * MS], [5 * MS], [10 * MS])
    with Injector(path) as inj:
        for i in range(13):
            inj.push(i, i * MS)
        assert inj.next_due() == 1 * MS
        assert list(inj.pop_due(9 * MS)) == [0, 1, 2, 3, 4, 5, 6, 7, 8]
        assert list(inj.pop_due(15 * MS)) == [9]  # item 10 (due at 16 ms) holds back 11 and 12
        assert list(inj.pop_due(16 * MS)) == [10, 11, 12]
    with Injector(path, reorder=True) as inj:
        for i in range(13):
            inj.push(i, i * MS)
        assert list(inj.pop_due(100 * MS)) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 10]


def test_a_full_injector_drops_and_counts(tmp_path: Path) -> None:
    path = write_model(tmp_path / "m.json", [1 * MS])
    with Injector(path, capacity=10) as inj:
        accepted = [inj.push(i, i) for i in range(100)]
        assert len(inj) == 10 and inj.dropped == 90
        assert accepted[10:] == [None] * 90


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        (
            '{"kind": "jitterlab.model", "schema_version": 1, "base": {"kind": "quantiles", "quantiles_ns": [3, 1]}}',
            "not monotone",
        ),
    ],
)
def test_bad_model_files_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(JitterlabError, match=message):
        Injector(path)
    result = run_cli("inject", "--model", str(path), "--listen", "9", "--forward", "127.0.0.1:9")
    assert result.returncode == 2
    assert_one_line_error(result.stderr)


@pytest.mark.parametrize(
    ("listen", "forward"),
    [
        ("nonsense", "127.0.0.1:9"),
        ("127.0.0.1:70000", "127.0.0.1:9"),
        ("0", "no-such-host.invalid:9"),
        ("0", "9"),
    ],
)
def test_bad_addresses_are_one_line_errors(tmp_path: Path, listen: str, forward: str) -> None:
    path = write_model(tmp_path / "m.json", [1 * MS])
    result = run_cli("inject", "--model", str(path), "--listen", listen, "--forward", forward, timeout=60)
    assert result.returncode == 2, result.stderr
    assert_one_line_error(result.stderr)


def udp_receiver() -> tuple[socket.socket, int]:
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(5)
    return rx, rx.getsockname()[1]


def test_udp_proxy_delays_every_datagram_at_least_the_model_and_keeps_order(tmp_path: Path) -> None:
    path = write_model(tmp_path / "m.json", [3 * MS])
    rx, port = udp_receiver()
    listen = free_udp_port()
    with running_proxy(proxy_argv(path, f"127.0.0.1:{listen}", f"127.0.0.1:{port}")) as proxy:
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        delays, payloads = [], []
        for i in range(50):
            sent = time.monotonic_ns()
            tx.sendto(struct.pack("<q", i) + b"x" * i, ("127.0.0.1", listen))
            data = rx.recv(65536)
            delays.append(time.monotonic_ns() - sent)
            payloads.append(data)
        stats_doc = proxy.stop()
    assert payloads == [struct.pack("<q", i) + b"x" * i for i in range(50)]
    assert min(delays) >= 3 * MS
    assert stats_doc["forwarded"] == 50 and stats_doc["delay_ns"]["count"] == 50
    assert stats_doc["delay_ns"]["p50"] >= 3 * MS * 0.98  # histogram bucket precision


def test_tcp_proxy_delays_the_stream_and_passes_replies_back(tmp_path: Path) -> None:
    path = write_model(tmp_path / "m.json", [5 * MS])
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def echo() -> None:
        conn, _ = server.accept()
        while data := conn.recv(65536):
            conn.sendall(data.upper())
        conn.close()

    threading.Thread(target=echo, daemon=True).start()
    listen = free_udp_port()
    argv = proxy_argv(path, f"127.0.0.1:{listen}", f"127.0.0.1:{server.getsockname()[1]}", tcp=True)
    with running_proxy(argv) as proxy:
        client = socket.create_connection(("127.0.0.1", listen), timeout=5)
        sent = time.monotonic_ns()
        client.sendall(b"hello jitter")
        reply = client.recv(100)
        elapsed = time.monotonic_ns() - sent
        client.close()
        stats_doc = proxy.stop()
    assert reply == b"HELLO JITTER"
    assert elapsed >= 5 * MS
    assert stats_doc["connections"] == 1 and stats_doc["replies"] >= 1


def test_overload_drops_and_counts_instead_of_growing(tmp_path: Path) -> None:
    path = write_model(tmp_path / "m.json", [60_000 * MS])  # nothing leaves during the test
    _rx, port = udp_receiver()  # bound, so the forward address exists
    listen = free_udp_port()
    argv = proxy_argv(path, f"127.0.0.1:{listen}", f"127.0.0.1:{port}", extra=["--queue-limit", "100"])
    with running_proxy(argv) as proxy:
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for i in range(1000):  # loopback delivers into the proxy's socket before sendto returns
            tx.sendto(struct.pack("<q", i), ("127.0.0.1", listen))
        stats_doc = proxy.stop()
    assert stats_doc["received"] == 1000
    assert stats_doc["dropped_queue_full"] == 900
    assert stats_doc["discarded_at_exit"] == 100
    assert stats_doc["forwarded"] == 0


def test_inject_validate_stores_runs_and_compares_with_the_model(tmp_path: Path, store: Path) -> None:
    path = write_model(tmp_path / "m.json", [1 * MS, 2 * MS])
    report = tmp_path / "validate.html"
    result = run_cli(
        "inject",
        "validate",
        "--model",
        str(path),
        "--samples",
        "300",
        "--rate",
        "2000",
        "--store",
        str(store),
        "--json",
        "--report",
        str(report),
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert_matches_schema(doc, "inject-validate")
    assert doc["context"]["measured_here"] is True
    assert set(doc["runs"]) == {"direct", "pass-through", "model"}
    assert set(doc["injected_runs"]) == {"pass-through", "model"}
    assert 0.0 <= doc["ks_injected"] <= 1.0
    assert doc["proxy"]["model"]["forwarded"] == 300
    assert isinstance(doc["verdict"]["reproduced"], bool) and doc["verdict"]["reason"].startswith("KS ")
    shown = run_cli("show", doc["injected_runs"]["model"], "--json", "--store", str(store))
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["summary_ns"]["min"] >= 1 * MS
    assert "Injection validation" in report.read_text()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_jitterlab_inject_stops_the_proxy_and_frees_its_port(tmp_path: Path, signum: int) -> None:
    port = free_udp_port()
    stats = tmp_path / "stats.json"
    argv = [sys.executable, "-m", "jitterlab", "inject", "--zero", "--listen", str(port)]
    argv += ["--forward", "127.0.0.1:9", "--stats-json", str(stats)]
    # its own session, no terminal: as a script or a supervisor would start it
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("listening")
        proc.send_signal(signum)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (0, 130), proc.stderr.read() if proc.stderr else ""
    assert stats.exists()  # the summary was written on the way out
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", port))  # the port is free again


def _validation(injected: np.ndarray, reference: np.ndarray, passthrough_ns: float) -> Validation:
    rng = np.random.default_rng(3)
    direct = rng.normal(20_000, 1_000, 2_000)
    return Validation(
        injected,
        reference,
        injected,
        reference,
        direct + passthrough_ns,
        direct,
        float(stats.ks_2samp(injected, reference).statistic),
        0.0,
        {"p50": float(np.median(injected) - np.median(reference))},
    )


def test_the_validation_verdict_says_why_a_model_was_not_reproduced() -> None:
    rng = np.random.default_rng(5)
    model = rng.normal(2 * MS, 0.1 * MS, 4_000)
    same = judge(_validation(model + rng.normal(0, 1_000, model.size), model, 60_000), busy_poll=False)
    assert same.reproduced and "floor 60.0 µs" in same.reason
    late = judge(_validation(model + 0.5 * MS, model, 60_000), busy_poll=False)
    assert not late.reproduced and "differ from the model" in late.reason
    # a 30 µs model through a proxy whose own floor is 60 µs: a sleeping proxy cannot do it
    tiny = rng.normal(30_000, 2_000, 4_000)
    fast = judge(_validation(tiny + 60_000, tiny, 60_000), busy_poll=False)
    assert not fast.reproduced and "--busy-poll" in fast.reason
    assert "--busy-poll" not in judge(_validation(tiny + 60_000, tiny, 60_000), busy_poll=True).reason

"""``--cluster`` at a service that is not a Dask scheduler (issue 42 item 14): an HTTP server
(which waits for a request), one sending random bytes, one closing at once — the connection
and the handshake time out, one line says what answered, exit 2, quickly."""

from __future__ import annotations

import http.server
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_one_line_error, make_run, run_main
from jitterlab.cluster import engine as module
from jitterlab.core.errors import JitterlabError


@pytest.fixture
def fast_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "PROBE_S", 1.0)


def _serve(reply: Callable[[socket.socket], None]) -> Iterator[str]:
    """A loopback TCP server answering each connection with ``reply``; yields its address."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                reply(conn)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        server.close()


def _random_bytes(conn: socket.socket) -> None:
    conn.sendall(random.Random(7).randbytes(4096))
    time.sleep(0.5)


def _silent(conn: socket.socket) -> None:  # an HTTP server waits for the request
    time.sleep(2.0)


def _closes(conn: socket.socket) -> None:
    pass


def _http_status(conn: socket.socket) -> None:  # a server that speaks first, in HTTP
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture
def http_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def run_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    store = tmp_path_factory.mktemp("probe") / "store"
    return store, make_run(store, np.full(1000, 5_000, np.int64)).id


def _refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    began = time.monotonic()
    code, out, err = run_main(args, capsys)
    assert code == 2, err
    assert_one_line_error(err)
    assert out == ""
    assert time.monotonic() - began < 15, "the probe must time out, not hang"
    return err


def test_an_http_server_is_named_within_the_time_out(http_server, run_store, fast_probe, capsys) -> None:
    store, run = run_store
    err = _refused(["describe", run, "--cluster", http_server, "--store", str(store)], capsys)
    assert "not a Dask scheduler" in err and "said nothing in 1 s" in err, err


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (_random_bytes, "bytes that are not a Dask handshake"),
        (_silent, "said nothing"),
        (_closes, "closed the connection"),
        (_http_status, "an HTTP server answered ('HTTP/1.1 400 Bad Request')"),
    ],
)
def test_a_service_that_is_not_a_scheduler_is_one_line_saying_what_answered(
    reply, said: str, run_store, fast_probe, capsys
) -> None:
    store, run = run_store
    for address in _serve(reply):
        for argv in (["describe", run], ["show", run]):
            err = _refused([*argv, "--cluster", address, "--store", str(store)], capsys)
            assert "not a Dask scheduler" in err and said in err, err
    assert sorted(p.name for p in store.iterdir() if not p.name.startswith(".")) == [run]


def test_a_dask_scheduler_passes_the_probe() -> None:
    distributed = pytest.importorskip(
        "distributed", reason="the cluster extra (scripts/setup.sh installs it)"
    )
    with distributed.LocalCluster(
        n_workers=0, dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}
    ) as empty:
        module._probe(empty.scheduler_address)  # no error: its handshake was recognised


@pytest.mark.parametrize("spec", ["tcp://127.0.0.1:0", "tcp://127.0.0.1:99999", "tcp://:80", "tcp://[::1"])
def test_an_address_without_a_port_is_refused_before_connecting(spec: str) -> None:
    with pytest.raises(JitterlabError, match="--cluster"):
        module._probe(spec)

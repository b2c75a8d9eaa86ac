"""A stop signal ends `monitor serve` and stores the run, wherever the serving thread is when
it arrives (the CI of c703b06: a server that never exited after SIGINT). The stop used to be
a KeyboardInterrupt raised at the next bytecode boundary: just after ``Condition.__enter__``
took the drain thread's lock, before ``with`` could release it, so the lock stayed held, the
drain thread waited for it for ever and the server's join with that thread never returned."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from jitterlab.core import signals
from jitterlab.core.errors import JitterlabError
from jitterlab.core.signals import noted_stops
from jitterlab.monitor import live, recorder
from jitterlab.monitor import server as server_module
from jitterlab.monitor.server import Server
from jitterlab.monitor.state import LiveState
from jitterlab.store.runs import ResultsStore

# run as its own process (a real signal, a real server, and a hang must not hang pytest): the
# stop is tripped while the main thread waits for the drainer's lock inside ``take``
STOP_INSIDE_TAKE = textwrap.dedent(
    """
    import faulthandler, json, signal, sys, threading, time
    from pathlib import Path

    from jitterlab import Monitor
    from jitterlab.core.signals import stop_on_signals
    from jitterlab.monitor.server import Server, serve_loop
    from jitterlab.store.runs import ResultsStore

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the stacks, should it hang
    channel, store, duration = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]) or None
    stop_on_signals()  # as the CLI does
    server = Server(channel, ResultsStore(store), None, None)
    main = threading.main_thread().ident

    def in_take_enter() -> bool:  # the main thread waits in Condition.__enter__, called by take
        frame = sys._current_frames().get(main)
        return (
            frame is not None and frame.f_code.co_name == "__enter__"
            and frame.f_back is not None and frame.f_back.f_code.co_name == "take"
        )

    def started(srv: Server) -> None:
        with Monitor(channel) as m:
            for v in range(1000):
                m.record(10_000 + v)
        held = threading.Event()

        def hold() -> None:
            with srv.drainer.cond:
                held.set()
                deadline = time.monotonic() + 30
                while not in_take_enter() and time.monotonic() < deadline:
                    time.sleep(0.01)
                print("main waits in take:", in_take_enter(), file=sys.stderr, flush=True)
                # tripped in this thread: the main thread's wait is not interrupted, and its
                # handler runs the moment that thread has the lock
                signal.pthread_kill(threading.get_ident(), signal.SIGINT)
                time.sleep(0.05)

        threading.Thread(target=hold, daemon=True).start()
        held.wait()

    run = serve_loop(server, duration, on_started=started)
    assert run is not None
    print(json.dumps({
        "status": run.meta["status"],
        "stopped_by": run.meta["monitor"]["stopped_by"],
        "rows": run.meta["samples"]["rows"],
    }))
    """
)


@pytest.mark.parametrize("duration", [0.0, 60.0])
def test_a_stop_while_take_waits_for_the_lock_stores_the_run(
    tmp_path: Path, store: Path, duration: float
) -> None:
    channel = f"pytest-stop-{os.getpid()}-{time.monotonic_ns() % 10**9}"
    script = tmp_path / "stop_inside_take.py"
    script.write_text(STOP_INSIDE_TAKE)
    proc = subprocess.Popen(
        [sys.executable, str(script), channel, str(store), str(duration)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=60)  # the old code never ended
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)  # every thread's stack to stderr
        time.sleep(1)
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the server did not end after its stop:\n{err}")
    finally:
        recorder.unlink(channel)
    assert proc.returncode == 0, err
    assert "main waits in take: True" in err  # the stop came where it hung
    stored = json.loads(out.splitlines()[-1])
    # every drained sample stored; partial when the stop came before --duration
    assert stored == {
        "status": "partial" if duration else "complete",
        "stopped_by": "SIGINT",
        "rows": 1000,
    }


def test_noted_stops_notes_the_first_stop_and_raises_the_second() -> None:
    before = signal.getsignal(signal.SIGINT)  # Python's, or the CLI's once a test ran main()
    with noted_stops() as stopped:
        assert stopped() is None
        signal.raise_signal(signal.SIGINT)  # no KeyboardInterrupt here
        assert stopped() == signal.SIGINT
        with pytest.raises(KeyboardInterrupt):  # a second stop: the way out of a hang
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before  # given back
    with noted_stops() as stopped:  # what the block handled is not noted for the next
        assert stopped() is None


def test_noted_stops_in_another_thread_leaves_the_main_threads_stops_alone() -> None:
    inside, leave = threading.Event(), threading.Event()
    answers: list[int | None] = []

    def block() -> None:
        with noted_stops() as stopped:
            inside.set()
            leave.wait(10)
            answers.append(stopped())

    # the handler the CLI installs (stop_on_signals), which is the one that notes stops
    previous = signal.signal(signal.SIGINT, signals._raise)
    thread = threading.Thread(target=block)
    thread.start()
    try:
        assert inside.wait(10)
        with pytest.raises(KeyboardInterrupt):  # the main thread's stop: raised as ever
            signal.raise_signal(signal.SIGINT)
    finally:
        leave.set()
        thread.join(10)
        signal.signal(signal.SIGINT, previous)
    assert answers == [None]


def test_a_drain_thread_that_cannot_end_is_said_not_waited_for(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The join with the drain thread is bounded: one that cannot end (here its lock is held
    by another thread, as the main thread held it before) makes the server say so, with the
    staged run left for `recover`, instead of waiting for ever."""
    channel = f"pytest-stop-{os.getpid()}-{time.monotonic_ns() % 10**9}"
    server = Server(channel, ResultsStore(store), None, None)
    try:
        server.start()
        drainer = server.drainer
        assert drainer is not None
        monkeypatch.setattr(server_module, "DRAIN_STOP_S", 0.5)
        with drainer.cond:
            time.sleep(0.3)  # the drain thread now waits for its lock
            began = time.monotonic()
            assert not drainer.stop(0.2)
            with pytest.raises(JitterlabError, match=r"did not end within 0.5 s.*jitterlab recover"):
                server.stop_draining()
            assert time.monotonic() - began < 5
        assert drainer.stop(5)  # given its lock, it ends
    finally:
        server.reader.close()
        recorder.unlink(channel)


def test_an_http_server_that_cannot_stop_is_said_not_waited_for(capsys: pytest.CaptureFixture[str]) -> None:
    """The live endpoint's shutdown is bounded the same way (a serving thread that never
    looks at the shutdown request stands for a stuck one)."""
    release = threading.Event()

    class Stuck(live._Server):
        def serve_forever(self, poll_interval: float = 0.5) -> None:
            release.wait(30)

    publisher = live.Publisher(LiveState("stuck", None), {})
    endpoint = live.Endpoint(Stuck(("127.0.0.1", 0), live.BaseHTTPRequestHandler), publisher)
    began = time.monotonic()
    endpoint.shutdown(timeout=0.3)
    assert time.monotonic() - began < 5
    assert "did not stop within 0.3 s" in capsys.readouterr().err
    release.set()
    endpoint.thread.join(5)

"""Injection accuracy: one latency model reproduced side by side by four injectors.

Contenders, each a separate process between the same sender and receiver on loopback:

(a) jitterlab's proxy (``jitterlab-inject proxy``, the native availability queue), as it
    runs by default (sleeping until input or a due item) and with ``--busy-poll``;
(b) the seeds' Listing 1 (thesis ch. 6 §3.2.2) written plainly in Python: receive, draw
    the work time (base, plus a spike when one is due), ``time.sleep`` it, forward;
(c) Shopify toxiproxy's ``latency`` toxic over TCP, set to the model's mean and standard
    deviation (whole milliseconds: the toxic's unit), installed with ``go install``;
(d) a frame-quantised ring buffer as VR latency studies use: items wait in a ring that
    a 90 Hz render loop reads, so each leaves at the first frame tick after it is due.

Every contender's *injected delay* is compared with the model's reference simulation
(``jitterlab.model.simulate_delays``) at the contender's own arrival times. (a), (b) and
(d) record, per datagram, the kernel's receive time (SO_TIMESTAMPNS) and the moment they
send it on, so their own wake-up is part of the delay they add. toxiproxy records
nothing: its injected delay is its end-to-end delay less the median end-to-end delay of
the same proxy without the toxic. Throughput is datagrams (or 24-byte TCP messages) per
second through a pass-through configuration, the sender sending as fast as it can.

Prints, per contender: KS distance to the model, |error| of the p50 and p99 delay, and
throughput; then jitterlab's ratios to the best other. Targets: jitterlab KS ≤ 0.02 and
the best of the four; ≥ 100 k datagrams/s through the proxy.

Usage: python benchmarks/injection_accuracy.py [--run RUN | --technique futex]
           [--count 10000] [--rate 1000] [--throughput-count 300000]
(The model is built from RUN, or from a fresh ``jitterlab bench`` run of --technique.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from jitterlab.core.programs import native_program
from jitterlab.simulate.model import (
    LatencyModel,
    ReferenceSchedule,
    build_model,
    load_model,
    model_to_json,
    simulate_delays,
)
from jitterlab.simulate.proxy import free_udp_port, proxy_argv, running_proxy
from jitterlab.store import ResultsStore, load_run
from jitterlab.store.rawfile import read_raw_samples

FRAME_HZ = 90.0
TOXIPROXY_VERSION = "v2.12.0"
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
TCP_MESSAGE = struct.Struct("<qq")  # seq, t_send_ns


# ------------------------------------------------------------------ Python contenders (subprocesses)


def _kernel_arrival(ancdata: list[tuple[int, int, bytes]], offset: int) -> int:
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec * 1_000_000_000 + nsec - offset
    return time.monotonic_ns()


class _Forwarder:
    """A UDP socket pair with kernel receive times and a record of (arrival, release)."""

    def __init__(self, listen: int, forward: int) -> None:
        self.rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.rx.bind(("127.0.0.1", listen))
        self.tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.tx.connect(("127.0.0.1", forward))
        self.offset = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.monotonic_ns()
        self.arrivals: list[int] = []
        self.releases: list[int] = []
        self.stop = False
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        print("listening", flush=True)

    def _on_signal(self, *_: Any) -> None:
        self.stop = True

    def receive(self, timeout: float | None) -> tuple[bytes, int] | None:
        self.rx.settimeout(timeout)
        try:
            data, anc, _, _ = self.rx.recvmsg(65536, 64)
        except (TimeoutError, BlockingIOError, InterruptedError):
            return None
        return data, _kernel_arrival(anc, self.offset)

    def send(self, data: bytes, arrival: int) -> None:
        self.releases.append(time.monotonic_ns())
        self.arrivals.append(arrival)
        self.tx.send(data)

    def save(self, record: Path) -> None:
        np.save(record, np.array([self.arrivals, self.releases], dtype=np.int64))


def serve_listing1(listen: int, forward: int, model: LatencyModel | None, seed: int, record: Path) -> None:
    """Listing 1 of the thesis, plainly: the receive loop itself sleeps for each work time."""
    f = _Forwarder(listen, forward)
    rng = np.random.default_rng(seed)
    next_spike = (
        [time.monotonic_ns() + float(c.interarrival.draw(rng)) for c in model.categories] if model else []
    )
    while not f.stop:
        got = f.receive(0.2)
        if got is None:
            continue
        data, arrival = got
        if model is not None:
            now = time.monotonic_ns()
            worktime = model.base_delay(now, rng)
            for k, c in enumerate(model.categories):
                if now + worktime > next_spike[k]:
                    worktime += float(c.duration.draw(rng))
                    next_spike[k] = now + float(c.interarrival.draw(rng))
            time.sleep(worktime / 1e9)
        f.send(data, arrival)
    f.save(record)


def serve_frame_ring(listen: int, forward: int, model: LatencyModel | None, seed: int, record: Path) -> None:
    """A ring read by a 90 Hz render loop: an item leaves at the first frame after it is due."""
    f = _Forwarder(listen, forward)
    schedule = ReferenceSchedule(model, seed) if model is not None else None
    ring: list[tuple[float, int, bytes]] = []
    frame_ns = 1e9 / FRAME_HZ
    next_frame = time.monotonic_ns() + frame_ns
    while not f.stop:
        timeout = max(0.0, (next_frame - time.monotonic_ns()) / 1e9)
        got = f.receive(timeout) if model is not None else f.receive(0.2)
        if got is not None:
            data, arrival = got
            if schedule is None:
                f.send(data, arrival)  # pass-through: no ring
                continue
            ring.append((schedule.available_at(arrival), arrival, data))
        if schedule is not None and time.monotonic_ns() >= next_frame:
            now = time.monotonic_ns()
            due = [item for item in ring if item[0] <= now]
            ring = [item for item in ring if item[0] > now]
            for _, arrival, data in due:
                f.send(data, arrival)
            next_frame += frame_ns
    f.save(record)


# ------------------------------------------------------------------ measuring


def probe(target: int, receive: int, count: int, rate: int) -> np.ndarray:
    """The native probe: records (t_send, t_recv) of every datagram that came back."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [str(native_program("jitterlab-inject")), "probe", "--target", f"127.0.0.1:{target}"]
        cmd += ["--receive", str(receive), "--samples", str(count), "--rate", str(rate), "--out", out]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return read_raw_samples(Path(out) / "samples.jlraw").records


def throughput(records: np.ndarray) -> float:
    span = float(records["t_recv_ns"].max() - records["t_send_ns"].min()) / 1e9
    return records.size / span if span > 0 else 0.0


def python_contender(
    kind: str, model_path: Path | None, count: int, rate: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Run a Python contender between the probe's ends; returns (injected delays, probe records)."""
    listen, receive = free_udp_port(), free_udp_port()
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "record.npy"
        cmd = [sys.executable, __file__, "--serve", kind, "--listen", str(listen), "--forward", str(receive)]
        cmd += ["--seed", str(seed), "--record", str(record)]
        if model_path is not None:
            cmd += ["--model", str(model_path)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        proc.stdout.readline()
        try:
            records = probe(listen, receive, count, rate)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
        arrivals, releases = np.load(record)
    return (releases - arrivals).astype(np.float64), records


def jitterlab_contender(
    model_path: Path | None, count: int, rate: int, seed: int, busy_poll: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    listen, receive = free_udp_port(), free_udp_port()
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "injected.jlraw"
        extra = ["--busy-poll"] if busy_poll else []
        argv = proxy_argv(model_path, f"127.0.0.1:{listen}", f"127.0.0.1:{receive}", seed=seed, extra=extra)
        with running_proxy([*argv, "--record", str(record)]):
            records = probe(listen, receive, count, rate)
        injected = read_raw_samples(record).records
    return (injected["t_recv_ns"] - injected["t_send_ns"]).astype(np.float64), records


# ------------------------------------------------------------------ toxiproxy (TCP)


def toxiproxy_server() -> str | None:
    found = shutil.which("toxiproxy-server") or shutil.which("server", path=str(Path.home() / "go" / "bin"))
    if found:
        return found
    print(f"installing toxiproxy {TOXIPROXY_VERSION} with go install …", file=sys.stderr)
    try:
        subprocess.run(
            ["go", "install", f"github.com/Shopify/toxiproxy/v2/cmd/server@{TOXIPROXY_VERSION}"],
            check=True,
            capture_output=True,
            timeout=600,
        )
    except (OSError, subprocess.SubprocessError) as e:
        print(f"toxiproxy unavailable ({e}); its row is left out", file=sys.stderr)
        return None
    return shutil.which("server", path=str(Path.home() / "go" / "bin"))


def _api(port: int, path: str, body: dict[str, Any]) -> None:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    urllib.request.urlopen(req, timeout=5).read()


def tcp_probe(target: int, server: socket.socket, count: int, rate: int) -> np.ndarray:
    """Send 16-byte (seq, t_send) messages at ``rate`` (0: flat out) over TCP; returns end-to-end delays."""
    received: list[int] = []

    def read_all() -> None:
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buffer = b""
        while len(received) < count:
            chunk = conn.recv(65536)
            if not chunk:
                break
            now = time.monotonic_ns()
            buffer += chunk
            usable = len(buffer) - len(buffer) % TCP_MESSAGE.size
            for _, t_send in TCP_MESSAGE.iter_unpack(buffer[:usable]):
                received.append(now - t_send)
            buffer = buffer[usable:]
        conn.close()

    reader = threading.Thread(target=read_all)
    reader.start()
    client = socket.create_connection(("127.0.0.1", target))
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    start = time.monotonic_ns()
    for seq in range(count):
        if rate:
            while time.monotonic_ns() < start + seq * 1e9 / rate:
                time.sleep(0.0002)
        client.sendall(TCP_MESSAGE.pack(seq, time.monotonic_ns()))
    reader.join(timeout=60)
    client.close()
    return np.array(received, dtype=np.float64)


def toxiproxy_contender(
    binary: str, model: LatencyModel, count: int, rate: int, throughput_count: int
) -> tuple[np.ndarray, float, dict[str, int]]:
    api, listen = free_udp_port(), free_udp_port()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    upstream = server.getsockname()[1]
    proc = subprocess.Popen(
        [binary, "-host", "127.0.0.1", "-port", str(api)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{api}/version", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        _api(
            api,
            "/proxies",
            {"name": "jl", "listen": f"127.0.0.1:{listen}", "upstream": f"127.0.0.1:{upstream}"},
        )
        floor = tcp_probe(listen, server, count, rate)
        blast = time.monotonic_ns()
        sent = tcp_probe(listen, server, throughput_count, 0)
        rate_out = sent.size / ((time.monotonic_ns() - blast) / 1e9)
        drawn = simulate_delays(model, np.arange(100_000) * 1e6, seed=7)
        toxic = {"latency": round(drawn.mean() / 1e6), "jitter": round(drawn.std() / 1e6)}
        _api(api, "/proxies/jl/toxics", {"name": "lat", "type": "latency", "attributes": toxic})
        delayed = tcp_probe(listen, server, count, rate)
    finally:
        proc.terminate()
        proc.wait()
        server.close()
    return delayed - float(np.median(floor)), rate_out, toxic


# ------------------------------------------------------------------ main


def model_for(args: argparse.Namespace, workdir: Path) -> tuple[Path, LatencyModel, str]:
    store = ResultsStore(workdir / "store") if args.run is None else ResultsStore()
    if args.run is None:
        env = os.environ | {"JITTERLAB_STORE": str(store.root)}
        cmd = ["jitterlab", "bench", "--technique", args.technique, "--pairs", "1", "--samples", "100000"]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        run = store.runs()[-1]
    else:
        run = load_run(args.run, store)
    model = build_model(run)
    path = workdir / "model.json"
    path.write_text(json.dumps(model_to_json(model)))
    return path, load_model(path), f"{run.id} ({run.label})"


def score(injected: np.ndarray, reference: np.ndarray) -> tuple[float, float, float]:
    ks = float(stats.ks_2samp(injected, reference).statistic)
    e50 = abs(float(np.percentile(injected, 50) - np.percentile(reference, 50)))
    e99 = abs(float(np.percentile(injected, 99) - np.percentile(reference, 99)))
    return ks, e50, e99


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", help="build the model from this stored run")
    parser.add_argument("--technique", default="futex", help="else from a fresh bench run of this technique")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=1_000)
    parser.add_argument("--throughput-count", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    from jitterlab.core.units import format_ns

    with tempfile.TemporaryDirectory(prefix="jitterlab-bench-inject-") as tmp:
        model_path, model, source = model_for(args, Path(tmp))
        print(f"model from run {source}: {len(model.categories)} spike categories", file=sys.stderr)
        rows: dict[str, dict[str, Any]] = {}

        def add(
            name: str, injected: np.ndarray, arrivals: np.ndarray | None, rate_out: float, note: str = ""
        ) -> None:
            reference = (
                simulate_delays(model, np.sort(arrivals), seed=args.seed + 1)
                if arrivals is not None
                else simulate_delays(model, np.arange(injected.size) * 1e9 / args.rate, seed=args.seed + 1)
            )
            ks, e50, e99 = score(injected, reference)
            rows[name] = {
                "ks": ks,
                "p50_error_ns": e50,
                "p99_error_ns": e99,
                "throughput_per_s": rate_out,
                "note": note,
            }
            print(
                f"  {name}: KS {ks:.4f}, |p50 error| {format_ns(e50)}, |p99 error| {format_ns(e99)}",
                file=sys.stderr,
            )

        print("(a) jitterlab proxy …", file=sys.stderr)
        injected, records = jitterlab_contender(model_path, args.count, args.rate, args.seed)
        _, blast = jitterlab_contender(None, args.throughput_count, 0, args.seed)
        add("jitterlab proxy", injected, records["t_send_ns"], throughput(blast))
        print("(a') jitterlab proxy --busy-poll …", file=sys.stderr)
        injected, records = jitterlab_contender(model_path, args.count, args.rate, args.seed, busy_poll=True)
        add("jitterlab proxy --busy-poll", injected, records["t_send_ns"], float("nan"), "throughput as (a)")
        for kind, name in (
            ("listing1", "Listing 1 (Python)"),
            ("frame-ring", f"frame ring ({FRAME_HZ:g} Hz)"),
        ):
            print(f"{name} …", file=sys.stderr)
            injected, records = python_contender(kind, model_path, args.count, args.rate, args.seed)
            _, blast = python_contender(kind, None, min(args.throughput_count, 100_000), 0, args.seed)
            add(name, injected, records["t_send_ns"], throughput(blast))
        binary = toxiproxy_server()
        if binary:
            print("toxiproxy (TCP) …", file=sys.stderr)
            delayed, rate_out, toxic = toxiproxy_contender(
                binary, model, args.count, args.rate, args.throughput_count
            )
            add(
                "toxiproxy latency toxic",
                delayed,
                None,
                rate_out,
                f"latency {toxic['latency']} ms ± {toxic['jitter']} ms",
            )

    print(f"\nmodel: built from run {source}; {args.count:,} items at {args.rate:,} Hz per contender")
    print(f"{'contender':<26}{'KS':>8}{'|p50 err|':>12}{'|p99 err|':>12}{'throughput/s':>15}  note")
    for name, r in rows.items():
        print(
            f"{name:<26}{r['ks']:>8.4f}{format_ns(r['p50_error_ns']):>12}{format_ns(r['p99_error_ns']):>12}"
            f"{r['throughput_per_s']:>15,.0f}  {r['note']}"
        )
    ours_ks = min(r["ks"] for n, r in rows.items() if n.startswith("jitterlab"))
    ours_throughput = rows["jitterlab proxy"]["throughput_per_s"]
    others = [r["ks"] for n, r in rows.items() if not n.startswith("jitterlab")]
    best_other = min(others) if others else float("nan")
    print(
        f"\njitterlab's best KS {ours_ks:.4f} (target ≤ 0.02: {'met' if ours_ks <= 0.02 else 'NOT met'}); "
        f"best other KS {best_other:.4f} → ratio {ours_ks / best_other:.2f} (lower is better); "
        f"throughput {ours_throughput:,.0f}/s (target ≥ 100,000: {'met' if ours_throughput >= 100_000 else 'NOT met'})"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"model_source": source, "rows": rows}, indent=2))


def serve_main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", choices=("listing1", "frame-ring"))
    parser.add_argument("--listen", type=int)
    parser.add_argument("--forward", type=int)
    parser.add_argument("--model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record")
    a = parser.parse_args()
    model = load_model(Path(a.model)) if a.model else None
    serve = serve_listing1 if a.serve == "listing1" else serve_frame_ring
    serve(a.listen, a.forward, model, a.seed, Path(a.record))


if __name__ == "__main__":
    serve_main() if "--serve" in sys.argv else main()

"""Live page keep-up: `monitor serve` with writers at 1 M samples/s and pages open (issue 41 item 2).

For 0, 1 and 10 open pages (event-stream readers in a separate process, reading /events
exactly as the page's EventSource does), one `monitor serve` each while the C load writer
(``jitterlab-monitor-load``) records at --rate for --seconds:

- samples stored and dropped (target: 0 dropped);
- update lag of every event a page received: the reader's CLOCK_MONOTONIC at receipt minus
  the newest sample's receive time in that event (same machine, same clock): sample → page
  (target: p99 and max ≤ 1 s while the writer runs);
- the server's CPU time (utime + stime from /proc) over the writer's run, per million
  samples stored (what the load of the machine changes least), and the ratio of 10 pages to
  1 page and to none (target: 10 pages ≤ 1.10 × 1 page).

The writer's latencies are 1 ms with a normal jitter (``--jitter-ns``, default 20 µs): a
batch's values are then nearly all distinct, as a real channel's are (a constant latency
would make the server's per-batch sort look free).

The machine's load average is printed beside the figures: on a shared machine they are
figures of that load, not of a quiet one. Drops are timed (the ring's drop counter read every
50 ms from the benchmark): the seconds after the writer started in which the ring dropped.

It measures the jitterlab of the checkout it belongs to (its src/ goes first on the path, for
the servers it starts too) and prints which one and its commit: run from a checkout, a plain
``python benchmarks/monitor_live.py`` would otherwise measure whatever jitterlab the virtual
environment has installed (an older one measured 0.98 CPU-s per million samples on a quiet
machine, its idle loop polling every 0.5 ms).

Usage: python benchmarks/monitor_live.py [--seconds 10] [--rate 1000000] [--jitter-ns 20000] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TREE = Path(__file__).resolve().parents[1]
if (TREE / "src" / "jitterlab").is_dir():  # this checkout's jitterlab, here and in the servers
    from checkout import environment  # the installed C++ core found from the checkout's src

    os.environ.update(environment())
    sys.path.insert(0, str(TREE / "src"))

import jitterlab  # noqa: E402
from jitterlab.core.programs import native_program  # noqa: E402
from jitterlab.monitor import recorder  # noqa: E402
from jitterlab.monitor.launch import start_serve, wait_stored  # noqa: E402

READER = r"""
import http.client, json, sys, threading, time
port, pages = int(sys.argv[1]), int(sys.argv[2])
lags, events, lock = [], [0], threading.Lock()
def page():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/events")
    r = c.getresponse()
    for line in r:
        if line.startswith(b"data: "):
            now = time.monotonic_ns()
            snap = json.loads(line[6:])
            with lock:
                events[0] += 1
                if snap["last_sample_ns"] is not None and snap["writers"] and snap["writers"][0]["idle_s"] < 0.5:
                    lags.append((now - snap["last_sample_ns"]) / 1e9)
threads = [threading.Thread(target=page, daemon=True) for _ in range(pages)]
for t in threads: t.start()
sys.stdin.read()  # until told to stop
lags.sort()
p = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))] if lags else None
print(json.dumps({"events": events[0], "lag_p50_s": p(0.5), "lag_p99_s": p(0.99), "lag_max_s": lags[-1] if lags else None}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured() -> str:
    """Which jitterlab is measured: its path and the commit of its checkout (of the build,
    for an installed copy)."""
    where = Path(jitterlab.__file__).parent
    tracked = subprocess.run(
        ["git", "-C", str(where), "ls-files", "--error-unmatch", "__init__.py"], capture_output=True
    )
    if tracked.returncode == 0:
        head = subprocess.run(
            ["git", "-C", str(where), "describe", "--always", "--dirty"], capture_output=True, text=True
        )
        return f"{where} at {head.stdout.strip()}"
    build = where / "_build_info.json"
    commit = json.loads(build.read_text()).get("git_commit", "?")[:7] if build.is_file() else "?"
    return f"{where}: not a git checkout's (an installed copy?); its _build_info.json says built at {commit}"


class DropWatch:
    """The ring's drop counter, read every 50 ms while the writer runs: when drops happened."""

    def __init__(self, channel: str) -> None:
        self.ring = recorder.Monitor(channel)  # a handle only: it records nothing
        self.start = time.monotonic()
        self.seen = self.ring.dropped
        self.times: list[tuple[float, int]] = []  # (seconds after start, drops since the last read)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(0.05):
            now = self.ring.dropped
            if now > self.seen:
                self.times.append((time.monotonic() - self.start, now - self.seen))
                self.seen = now

    def stop(self) -> str:
        self.done.set()
        self.thread.join()
        self.ring.close()
        if not self.times:
            return ""
        spans: list[list[float]] = []  # [first, last, drops]: reads less than 0.5 s apart join
        for t, n in self.times:
            if spans and t - spans[-1][1] < 0.5:
                spans[-1][1], spans[-1][2] = t, spans[-1][2] + n
            else:
                spans.append([t, t, n])
        return "; ".join(f"{int(n):,} at {a:.2f}-{b:.2f} s" for a, b, n in spans)


def one(store: Path, pages: int, rate: int, seconds: float, jitter_ns: int) -> dict[str, object]:
    channel = f"bench-live-{os.getpid()}-{pages}"
    port = free_port()
    proc = start_serve(channel, store, f"127.0.0.1:{port}", "--duration", f"{seconds + 4}s")
    reader = None
    try:
        if pages:
            reader = subprocess.Popen(
                [sys.executable, "-c", READER, str(port), str(pages)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            time.sleep(0.5)
        cpu0 = cpu_s(proc.pid)
        watch = DropWatch(channel)
        load = subprocess.run(
            [str(native_program("jitterlab-monitor-load")), "--channel", channel, "--rate", str(rate),
             "--samples", str(int(rate * seconds)), "--jitter-ns", str(jitter_ns)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        time.sleep(0.5)
        cpu1 = cpu_s(proc.pid)
        drops_at = watch.stop()
        lag: dict[str, object] = {}
        if reader is not None:
            out, _ = reader.communicate("", timeout=60)
            lag = json.loads(out)
        run_id = wait_stored(proc)
        meta = json.loads((store / run_id / "run.json").read_text())
        return {
            "pages": pages,
            "writer": json.loads(load.stdout),
            "stored": meta["samples"]["rows"],
            "dropped": meta["monitor"]["ring_dropped"],
            "server_cpu_s": cpu1 - cpu0,
            "drops_at": drops_at,
            "load": os.getloadavg()[0],
            **lag,
        }
    finally:
        if reader is not None and reader.poll() is None:
            reader.kill()
        if proc.poll() is None:
            proc.kill()
        recorder.unlink(channel)


def per_m(row: dict[str, object]) -> float:
    """The server's CPU seconds per million samples stored."""
    return float(row["server_cpu_s"]) / max(int(row["stored"]), 1) * 1e6  # type: ignore[arg-type, call-overload]


def spread(values: list[float], digits: int) -> str:
    """Median and range of ``values``."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def screenshot(path: Path, rate: int, seconds: float) -> None:
    """The page under load, as docs/monitor.md shows it: the load writer at ``rate`` plus a
    study writer with a clean trial and one with an 80 ms spike, in headless Chromium."""
    import numpy as np
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from jitterlab import Monitor

    channel = f"bench-live-shot-{os.getpid()}"
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s"
        rng = np.random.default_rng(41)
        baseline = np.concatenate([rng.normal(10_000, 500, 20_000), rng.normal(30_000, 1_000, 400)])
        rng.shuffle(baseline)
        proc = start_serve(channel, store, f"127.0.0.1:{free_port()}", "--duration", "3s")
        with Monitor(channel) as m:  # a baseline session first
            for v in baseline.astype(np.int64).tolist():
                m.record(v)
        reference = wait_stored(proc)
        port = free_port()
        proc = start_serve(
            channel, store, f"127.0.0.1:{port}", "--duration", f"{seconds + 10}s", "--baseline", reference
        )
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     "--disable-background-networking", "--disable-dev-shm-usage",
                     f"--user-data-dir={Path(tmp) / 'profile'}", "--window-size=1400,1250"):  # fmt: skip
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            driver.get(f"http://127.0.0.1:{port}/")
            load = subprocess.Popen(
                [str(native_program("jitterlab-monitor-load")), "--channel", channel, "--rate", str(rate),
                 "--samples", str(int(rate * seconds))],
                stdout=subprocess.DEVNULL,
            )  # fmt: skip
            with Monitor(channel) as m:
                for tag, spike in (("cond-A/p07", False), ("cond-B/p07", True)):
                    with m.trial(tag):
                        for k in range(2000):
                            m.record(int(rng.normal(10_000, 500)))
                            if spike and k == 1500:
                                m.record(80_000_000)
                            if spike and k == 1900:  # the alert is up while the trial runs
                                time.sleep(0.8)
                                driver.save_screenshot(str(path))
                            if k % 100 == 0:
                                time.sleep(seconds / 80)
                    if not spike:
                        time.sleep(1)
            load.wait()
        finally:
            driver.quit()
            proc.terminate()
            proc.wait()
            recorder.unlink(channel)
    print(f"wrote {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each writer run (issue: 60)")
    parser.add_argument("--rate", type=int, default=1_000_000, help="samples per second")
    parser.add_argument(
        "--jitter-ns", type=int, default=20_000, help="normal jitter SD of the writer's latencies"
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs of the three settings, one after another"
    )
    parser.add_argument("--screenshot", type=Path, help="instead: a screenshot of the page under load (PNG)")
    args = parser.parse_args()
    if args.screenshot:
        screenshot(args.screenshot, args.rate, args.seconds)
        return 0
    print(f"measuring jitterlab {measured()}", flush=True)
    everything: list[list[dict[str, object]]] = []
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            rows = [
                one(Path(tmp) / "s", pages, args.rate, args.seconds, args.jitter_ns) for pages in (0, 1, 10)
            ]
        everything.append(rows)
        print(
            f"repeat {repeat + 1}: load average {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} CPUs; "
            f"{args.rate:,} samples/s for {args.seconds:g} s, jitter {args.jitter_ns} ns"
        )
        for r in rows:
            lag = (
                f", lag p50 {r['lag_p50_s']:.3f} s p99 {r['lag_p99_s']:.3f} s max {r['lag_max_s']:.3f} s "
                f"({r['events']} events)"
                if r.get("lag_max_s") is not None
                else ""
            )
            drops = f"; drops at (s after the writer started) {r['drops_at']}" if r["drops_at"] else ""
            print(
                f"{r['pages']:>2} pages: {int(r['stored']):,} stored, {r['dropped']:,} dropped, server CPU "  # type: ignore[call-overload]
                f"{r['server_cpu_s']:.2f} s ({per_m(r):.3f} s per M){lag}; load {r['load']:.1f}{drops}"
            )
        base, one_page, ten = (float(r["server_cpu_s"]) for r in rows)  # type: ignore[arg-type]
        print(
            f"server CPU, 10 pages / 1 page: {ten / one_page:.3f}x; 10 pages / none: {ten / base:.3f}x "
            "(target ≤ 1.10x)",
            flush=True,
        )
    if args.repeats > 1:
        print(f"over {args.repeats} repeats (median, range in brackets):")
        for k, pages in enumerate((0, 1, 10)):
            rows = [rep[k] for rep in everything]
            lag = ""
            if pages:
                p50 = [float(r["lag_p50_s"]) for r in rows]  # type: ignore[arg-type]
                p99 = [float(r["lag_p99_s"]) for r in rows]  # type: ignore[arg-type]
                top = max(float(r["lag_max_s"]) for r in rows)  # type: ignore[arg-type]
                lag = f", lag p50 {spread(p50, 3)} s, p99 {spread(p99, 3)} s, max {top:.3f} s"
            dropped = sum(int(r["dropped"]) for r in rows)  # type: ignore[call-overload]
            print(
                f"{pages:>2} pages: {dropped:,} dropped in all, CPU per M {spread([per_m(r) for r in rows], 3)} s"
                f"{lag}"
            )
        cpu = [[float(r["server_cpu_s"]) for r in rep] for rep in everything]  # type: ignore[arg-type]
        print(
            f"10 pages / 1 page {spread([c[2] / c[1] for c in cpu], 3)}x, 10 pages / none "
            f"{spread([c[2] / c[0] for c in cpu], 3)}x; load "
            f"{spread([float(r['load']) for rep in everything for r in rep], 1)}"  # type: ignore[arg-type]
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

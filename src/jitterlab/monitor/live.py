"""The HTTP side of ``monitor serve``: the live page, its event stream and ``/metrics``.

One small threaded HTTP server, read-only (GET and HEAD; anything else is 405):

- ``/`` and ``/live.js``: the page and its script (package files, no CDN, no external font);
- ``/events``: Server-Sent Events, one JSON snapshot of the channel (:func:`snapshot`) at
  most every :data:`PUBLISH_S` while samples arrive (and once a second when idle);
- ``/metrics``: Prometheus text or OpenMetrics as the Accept header asks, or the delimited
  protobuf exposition with the latency as a native histogram (promproto).

The drain loop never waits for a client: a single publisher thread builds each snapshot
once (holding the state's lock only to copy counters) and every stream sends the newest
one; a slow client falls behind alone (its socket write times out, one log line, it is
dropped), a disconnect is one log line, more than :data:`MAX_STREAMS` streams are refused
with 503, and a malformed request gets its 400 and one log line.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.palette import category_colour
from jitterlab.monitor import promproto
from jitterlab.monitor.state import TIMELINE_BIN_NS, LiveState, TrialState
from jitterlab.stats.quantile_ci import CONFIDENCE, quantile_intervals
from jitterlab.stats.screening import Verdict
from jitterlab.store.hdr.histogram import Histogram

PUBLISH_S = 0.2  # a sample reaches the page within this plus the drain and the network
IDLE_PUBLISH_S = 1.0
MAX_STREAMS = 32
WRITE_TIMEOUT_S = 5.0
SHUTDOWN_S = 10.0  # serve_forever sees a shutdown within 0.5 s: one not seen after this is stuck
PAGE_PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)
TIMELINE_SENT_BINS = 600  # 5 minutes of 0.5 s bins

PAGE_FILES = {
    "/": ("live.html", "text/html; charset=utf-8"),
    "/index.html": ("live.html", "text/html; charset=utf-8"),
    "/live.js": ("live.js", "text/javascript; charset=utf-8"),
}
# the page may also show other loopback servers' channels side by side (?with=HOST:PORT)
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self' http://127.0.0.1:* http://localhost:*; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)


def log_line(line: str) -> None:
    """One line on the server's stderr (after the progress line, if one is shown)."""
    prefix = "\r\033[K" if sys.stderr.isatty() else ""
    sys.stderr.write(f"{prefix}monitor serve: {line}\n")
    sys.stderr.flush()


def page_percentiles(histogram: Histogram, confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """The page's percentiles with their intervals: ``stats/quantile_ci``'s, the one
    interval of the project (what ``describe`` gives), over the order statistics of the
    server's HdrHistogram of every sample (3 significant digits: a rank's value is its
    bucket's highest equivalent value, as HdrHistogram reads a percentile). Type-7 values,
    the resolution rule (a level without 10 samples beyond it gets no value, only "≥ low")
    and the binomial interval of a histogram's counts (``binomial-counts``): the live page
    keeps no per-time-block counts, so it never applies the block method; ``describe`` of
    the stored run tests the dependence and widens the interval where spikes cluster
    (docs/monitor.md, "The live page's intervals")."""
    n = histogram.total
    cumulative = np.cumsum(histogram.counts)

    def order_statistics(ranks: list[int]) -> dict[int, float]:
        index = np.searchsorted(cumulative, np.asarray(ranks, np.int64) + 1, side="left")
        return {
            r: float(histogram.highest_equivalent(histogram.value_from_index(int(i))))
            for r, i in zip(ranks, index.tolist(), strict=True)
        }

    return [
        {
            "p": q.level,
            "value_ns": q.value,
            "low_ns": q.ci_low,
            "high_ns": q.ci_high,
            "resolved": q.resolved,
            "method": q.method,
        }
        for q in quantile_intervals(n, PAGE_PERCENTILES, order_statistics, None, confidence)
    ]


def _verdict_row(trial: TrialState, verdict: Verdict | None, is_open: bool) -> dict[str, Any]:
    return {
        "index": trial.index,
        "tag": trial.tag,
        "writer": trial.writer_name,
        "open": is_open,
        "samples": trial.samples,
        "max_ns": max(trial.max_ns, 0.0) if trial.samples else None,
        "outlier_share": verdict.share if verdict else None,
        "contaminated": verdict.contaminated if verdict else None,
        "reason": verdict.reason if verdict else "",
    }


class Publisher:
    """Builds the page's snapshot once per tick for every open stream."""

    def __init__(self, state: LiveState, info: dict[str, Any]) -> None:
        self.state = state
        self.info = info
        self.cond = threading.Condition()
        self.payload = b""
        self.serial = 0
        self.streams = 0
        self.stopped = False
        self._seen_version = -1
        self._closed: dict[int, dict[str, Any]] = {}  # verdicts of ended trials, computed once
        self.thread = threading.Thread(target=self._run, name="live-publisher", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        last = 0.0
        while not self.stopped:
            time.sleep(PUBLISH_S)
            with self.cond:
                if not self.streams:
                    continue
            if self.state.version == self._seen_version and time.monotonic() - last < IDLE_PUBLISH_S:
                continue
            try:
                data = json.dumps(self.snapshot(), separators=(",", ":"), allow_nan=False).encode()
            except Exception as e:  # never let the page take the server down; say it once a tick
                log_line(f"live page snapshot failed: {type(e).__name__}: {e}")
                continue
            last = time.monotonic()
            with self.cond:
                self.payload, self.serial = data, self.serial + 1
                self.cond.notify_all()

    def snapshot(self) -> dict[str, Any]:
        """The channel now (see live.js for how it is drawn)."""
        s = self.state
        with s.lock:  # copy what the drain loop changes; compute outside the lock
            self._seen_version = s.version
            now_ns = time.monotonic_ns()
            counts = {
                "drained": s.samples,
                "stored": s.stored,
                "dropped": s.ring_dropped,
                "recorded": s.samples + s.ring_dropped,
                "backlog_skipped": s.backlog_skipped,
            }
            categories = s.category_counts.tolist()
            writers = {w: list(v) for w, v in s.writers.items()}
            keys = sorted(s.timeline)[-TIMELINE_SENT_BINS:]
            timeline = [[k, *s.timeline[k]] for k in keys]
            histogram = s.histogram.copy() if s.histogram is not None and s.histogram.total else None
            trials = [
                (t, t.end_seq is None, t.samples, tuple(int(c) for c in t.counts), t.max_ns) for t in s.trials
            ]
            latency_sum_s = s.latency_sum_s
        rows = []
        alert = None
        for trial, is_open, samples, counts_k, max_ns in trials:
            cached = self._closed.get(trial.index)
            if cached is not None:
                rows.append(cached)
                continue
            verdict = None
            if s.baseline is not None and samples:
                from jitterlab.stats.screening import screen_counts

                verdict = screen_counts(counts_k, max_ns, s.baseline, s.alpha)
            row = _verdict_row(trial, verdict, is_open)
            row["samples"] = samples
            rows.append(row)
            if not is_open:
                self._closed[trial.index] = row
            elif verdict is not None and verdict.contaminated:
                alert = {
                    "trial": trial.tag,
                    "writer": trial.writer_name,
                    "index": trial.index,
                    "reason": verdict.reason,
                }
        percentiles = page_percentiles(histogram) if histogram is not None else []
        thresholds = list(s.baseline.thresholds) if s.baseline is not None else []
        bounds = [0.0, *thresholds]
        return {
            **self.info,
            "t_server_ns": now_ns,
            "sent_unix_ms": time.time() * 1000.0,
            "counts": counts,
            "latency_mean_ns": latency_sum_s * 1e9 / counts["drained"] if counts["drained"] else None,
            "writers": [
                {
                    "name": f"{w >> 32}.{w & 0xFFFF_FFFF}",
                    "samples": v[0],
                    "last_ns": v[1],
                    "idle_s": (now_ns - v[1]) / 1e9,
                }
                for w, v in sorted(writers.items())
            ],
            "last_sample_ns": max((v[1] for v in writers.values()), default=None),
            "percentiles": percentiles,
            "confidence": CONFIDENCE,
            "categories": (
                [
                    {
                        "k": k,
                        "above_ns": bounds[k] if k else None,
                        "count": int(c),
                        "colour": category_colour(k),
                    }
                    for k, c in enumerate(categories)
                ]
                if s.baseline is not None
                else []
            ),
            "top_cut_ns": s.baseline.top_cut if s.baseline is not None else None,
            "baseline_outlier_share": s.baseline.outlier_share if s.baseline is not None else None,
            "timeline": {"bin_ns": TIMELINE_BIN_NS, "bins": [_bin_row(r) for r in timeline]},
            "trials": rows,
            "alert": alert,
        }

    def stop(self) -> None:
        self.stopped = True
        with self.cond:
            self.cond.notify_all()


def _bin_row(row: list[float]) -> list[float | int]:
    """[bin start ns, count, min ns, max ns, mean ns, outliers]."""
    k, count, lo, hi, total, outliers = row
    return [int(k) * TIMELINE_BIN_NS, int(count), lo, hi, total / count if count else 0.0, int(outliers)]


def _loopback_origin(origin: str) -> bool:
    parts = urlsplit(origin)
    if parts.scheme != "http" or not parts.hostname:
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    """Whether a listen host is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(a[4][0]).is_loopback for a in socket.getaddrinfo(host, None))
        except (OSError, ValueError):
            return False


def make_handler(
    publisher: Publisher, metrics_text: Callable[[str], tuple[bytes, str]], metrics_proto: Callable[[], bytes]
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "jitterlab-monitor"
        sys_version = ""
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # no access log: one line only for what went wrong (log_error)

        def log_error(self, format: str, *args: Any) -> None:
            log_line(f"{self.client_address[0]}: " + (format % args).replace("\n", " ")[:200])

        def _send(self, status: int, body: bytes, content_type: str, head: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            if content_type.startswith("text/html"):
                self.send_header("Content-Security-Policy", CSP)
                self.send_header("Referrer-Policy", "no-referrer")
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self._get(head=True)

        def do_GET(self) -> None:
            self._get(head=False)

        def _refuse(self) -> None:
            self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
            self.send_header("Allow", "GET, HEAD")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

        def _get(self, head: bool) -> None:
            path = urlsplit(self.path).path
            try:
                if path == "/metrics":
                    accept = self.headers.get("Accept", "")
                    if promproto.wants_protobuf(accept):
                        self._send(200, metrics_proto(), promproto.CONTENT_TYPE, head)
                    else:
                        body, content_type = metrics_text(accept)
                        self._send(200, body, content_type, head)
                elif path in PAGE_FILES:
                    name, content_type = PAGE_FILES[path]
                    body = resources.files("jitterlab.monitor").joinpath(f"page/{name}").read_bytes()
                    self._send(200, body, content_type, head)
                elif path == "/events":
                    self._events(head)
                else:
                    self._send(404, b"not found\n", "text/plain; charset=utf-8", head)
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                log_line(f"{self.client_address[0]}: client went away during {path}")
                self.close_connection = True

        def _events(self, head: bool) -> None:
            origin = self.headers.get("Origin")
            with publisher.cond:
                full = publisher.streams >= MAX_STREAMS
                if not full and not head:
                    publisher.streams += 1
            if full:
                log_line(f"{self.client_address[0]}: refused an event stream: {MAX_STREAMS} are open")
                self._send(503, b"too many live pages open\n", "text/plain; charset=utf-8", head)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            if origin and _loopback_origin(origin):  # another loopback server's page shows this channel too
                self.send_header("Access-Control-Allow-Origin", origin)
            self.end_headers()
            if head:
                return
            self.close_connection = True
            self.connection.settimeout(WRITE_TIMEOUT_S)
            try:
                self.wfile.write(b"retry: 1000\n\n")
                self.wfile.flush()
                serial = -1

                def fresh_or_stopped(seen: int) -> Callable[[], bool]:
                    return lambda: publisher.serial != seen or publisher.stopped

                while not publisher.stopped:
                    with publisher.cond:
                        publisher.cond.wait_for(fresh_or_stopped(serial), timeout=15.0)
                        payload, fresh = publisher.payload, publisher.serial != serial
                        serial = publisher.serial
                    if publisher.stopped:
                        break
                    # a comment keeps an idle stream open through proxies and notices a gone client
                    self.wfile.write(b"data: " + payload + b"\n\n" if fresh and payload else b": idle\n\n")
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                log_line(f"{self.client_address[0]}: a live page disconnected")
            except TimeoutError:
                log_line(
                    f"{self.client_address[0]}: a live page read too slowly ({WRITE_TIMEOUT_S:g} s); dropped"
                )
            finally:
                with publisher.cond:
                    publisher.streams -= 1

    return Handler


class Endpoint:
    """The running HTTP server (``shutdown`` stops it and its streams)."""

    def __init__(self, httpd: ThreadingHTTPServer, publisher: Publisher) -> None:
        self.httpd = httpd
        self.publisher = publisher
        self.thread = threading.Thread(target=httpd.serve_forever, name="live-http", daemon=True)
        self.thread.start()

    def shutdown(self, timeout: float = SHUTDOWN_S) -> None:
        """Stop the streams and the server; one that has not stopped within ``timeout``
        seconds is said and left to end with the process (never waited for without end)."""
        self.publisher.stop()
        stopper = threading.Thread(target=self.httpd.shutdown, name="live-http-stop", daemon=True)
        stopper.start()
        stopper.join(timeout)
        if stopper.is_alive():
            log_line(
                f"the live page's HTTP server did not stop within {timeout:g} s; it ends with the process"
            )
        self.httpd.server_close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def handle_error(self, request: Any, client_address: Any) -> None:
        _, e, _ = sys.exc_info()
        log_line(f"{client_address[0]}: request failed: {type(e).__name__}: {e}")


def start_endpoint(
    state: LiveState,
    host: str,
    port: int,
    info: dict[str, Any],
    metrics_text: Callable[[str], tuple[bytes, str]],
    metrics_proto: Callable[[], bytes],
) -> Endpoint:
    publisher = Publisher(state, info)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server_class = type("_Server6", (_Server,), {"address_family": family})
    try:
        httpd = server_class((host, port), make_handler(publisher, metrics_text, metrics_proto))
    except OSError as e:
        publisher.stop()
        raise JitterlabError(f"--listen {host}:{port}: {e.strerror or e}") from e
    return Endpoint(httpd, publisher)

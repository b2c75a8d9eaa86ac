"""Issue 41: the live page of `monitor serve` (in a real headless Chromium), native
histograms scraped by a real Prometheus, the OTLP export decoded with the OpenTelemetry
definitions, bad HTTP clients, and a session no writer came to."""

from __future__ import annotations

import http.client
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import assert_matches_schema, latency_clusters, make_run, run_cli, run_main
from jitterlab import Monitor, load_run
from jitterlab.monitor import promproto, recorder
from jitterlab.monitor.launch import start_serve, wait_stored
from jitterlab.monitor.server import BUCKETS_S

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
PROTO_ACCEPT = (
    "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,"
    "text/plain;version=0.0.4;q=0.3"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def channel() -> Iterator[str]:
    name = f"pytest-live-{os.getpid()}-{time.monotonic_ns() % 10**9}"
    yield name
    recorder.unlink(name)
    Path(f"/dev/shm/jitterlab-monitor-{name}.serve.lock").unlink(missing_ok=True)


def get(url: str, accept: str = "", method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def metric_lines(text: str, name: str) -> dict[str, float]:
    """{labels: value} of one metric in the text exposition."""
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            key, value = line.rsplit(" ", 1)
            out[key[len(name) :]] = float(value)
    return out


def first_event(port: int, ready: Callable[[dict[str, Any]], bool], timeout: float = 20) -> dict[str, Any]:
    """The first snapshot of the page's event stream for which ``ready`` holds."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    connection.request("GET", "/events")
    response = connection.getresponse()
    deadline = time.monotonic() + timeout
    try:
        for line in response:
            assert time.monotonic() < deadline, "no snapshot came that was ready"
            if line.startswith(b"data: ") and ready(snapshot := json.loads(line[6:])):
                return snapshot
    finally:
        connection.close()
    raise AssertionError("the event stream ended")


# --- item 2: the page's intervals are describe's ----------------------------------------


def test_the_page_gives_the_percentiles_and_intervals_describe_gives(
    store: Path, channel: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page's percentiles come from stats/quantile_ci (type 7, the resolution rule, the
    binomial interval) over the server's HdrHistogram: equal to describe's for the stored
    run within the histogram's 3 significant digits; an unresolved level has no value there
    either, only its lower bound."""
    latency = np.random.default_rng(41).normal(10_000, 500, 3_000).astype(np.int64)
    port = free_port()
    proc = start_serve(channel, store, f"127.0.0.1:{port}", "--duration", "60s")
    try:
        # spans at a fixed spacing, not record() at whatever moment a loaded machine lets the
        # loop run: describe cuts the run in time blocks, and its dependence test (at 5 %) on
        # blocks that the load made uneven chose "block" now and then (1 run of 13 in a loop at load 6)
        t_end = time.monotonic_ns() + 10_000 * np.arange(1, latency.size + 1)
        with Monitor(channel) as m:
            for start, end in zip((t_end - latency).tolist(), t_end.tolist(), strict=True):
                m.span(start, end)
        page = first_event(port, lambda snap: snap["counts"]["drained"] == latency.size)
    finally:
        proc.send_signal(signal.SIGINT)
    run = load_run(wait_stored(proc, timeout=60), store)
    code, out, err = run_main(["describe", run.id, "--json", "--store", str(store)], capsys)
    assert code == 0, err
    described = {q["level"]: q for q in json.loads(out)["percentiles"]}
    assert [p["p"] for p in page["percentiles"]] == [50.0, 90.0, 99.0, 99.9, 99.99]
    for p in page["percentiles"]:
        d = described[p["p"]]
        assert d["method"] == "binomial"  # independent samples: describe's test keeps binomial
        assert p["method"] == "binomial-counts" and p["resolved"] == d["resolved"], (p, d)
        for ours, theirs in (
            (p["value_ns"], d["value"]),
            (p["low_ns"], d["ci_low"]),
            (p["high_ns"], d["ci_high"]),
        ):
            assert (ours is None) == (theirs is None), (p, d)
            if ours is not None:
                assert ours == pytest.approx(theirs, rel=1e-3), (p, d)
    assert not page["percentiles"][-1]["resolved"]  # p99.99 of 3,000 samples: "≥ low" only


# --- item 5: no writer, no run ---------------------------------------------------------


def test_a_session_no_writer_came_to_stores_no_run(store: Path, channel: str) -> None:
    """Issue 41 item 5: it stored a "complete" run of 0 samples; now nothing is stored, the
    staging folder is removed, --json says why and the exit code is 1."""
    done = run_cli(
        "monitor", "serve", "--channel", channel, "--duration", "1s", "--store", str(store),
        "--listen", f"127.0.0.1:{free_port()}", "--json",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert_matches_schema(document, "monitor-serve")
    assert document["runs"] == [] and "no writer recorded" in document["reason"]
    assert not [x for x in done.stderr.splitlines() if x.startswith("stored ")]
    assert "no writer recorded" in done.stderr
    leftovers = [p for p in store.rglob("*") if p.is_dir() and not p.name.startswith(".")]
    assert not store.exists() or leftovers == [], leftovers
    assert run_cli("recover", "--store", str(store)).returncode == 0  # nothing left to recover


# --- item 3: native histograms ------------------------------------------------------------


def test_native_histogram_schema_and_spans() -> None:
    assert [promproto.schema_for(e) for e in (0.01, 0.005, 0.0027, 1e-6, 1.0)] == [7, 8, 8, 8, 0]
    assert promproto.schema_error(7) < 0.01 < promproto.schema_error(6)
    # a value exactly on a boundary base^i belongs to bucket i ((base^(i-1), base^i])
    for schema in (0, 3, 7, 8):
        i = np.arange(-200, 200)
        bound = np.exp2(i / 2.0**schema)
        assert (promproto.bucket_indices(bound, schema) == i).all()
        assert (promproto.bucket_indices(bound * (1 + 1e-9), schema) == i + 1).all()
    spans, deltas = promproto.spans_and_deltas(np.array([-3, -2, 0, 5, 6]), np.array([4, 1, 2, 7, 7]))
    assert spans == [(-3, 4), (4, 2)] and deltas == [4, -3, -1, 2, 5, 0]  # -1 bridged with a 0


def _prometheus(tmp_path: Path, target_port: int) -> tuple[subprocess.Popen[bytes], int]:
    binary = shutil.which("prometheus")
    assert binary, "Debian's prometheus is needed (scripts/setup.sh installs it)"
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: jitterlab\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
    )
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--enable-feature=native-histograms",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, port


def _query(port: int, expr: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?query={urllib.request.quote(expr)}"
    with urllib.request.urlopen(url, timeout=5) as response:
        return list(json.load(response)["data"]["result"])


def test_prometheus_scrapes_the_native_histogram_and_its_p99_is_within_the_schema_bound(
    tmp_path: Path, store: Path, channel: str
) -> None:
    """Issue 41 item 3: a real Prometheus (native histograms on) scrapes the protobuf
    exposition; histogram_quantile(0.99) over it is within the schema's bound of the stored
    run's exact p99; the text format keeps the classic buckets; HEAD answers."""
    from jitterlab.stats.summary import percentiles

    latencies = np.random.default_rng(41).lognormal(math.log(2e6), 0.5, 20_000).astype(np.int64)
    port = free_port()
    prometheus, prom_port = _prometheus(tmp_path, port)
    try:
        proc = start_serve(channel, store, f"127.0.0.1:{port}", "--duration", "40s", "--percentiles", "50,99")
        with Monitor(channel) as m:
            for k, v in enumerate(latencies.tolist()):
                assert m.record(v)
                if k % 2000 == 0:
                    time.sleep(0.005)
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 60
        while True:  # every sample drained
            _, _, body = get(url)
            if (
                metric_lines(body.decode(), "jitterlab_monitor_samples_total").get(f'{{channel="{channel}"}}')
                == 20_000
            ):
                break
            assert time.monotonic() < deadline
            time.sleep(0.2)
        # the protobuf exposition, decoded as Prometheus does
        status, headers, body = get(url, PROTO_ACCEPT)
        assert status == 200 and headers["Content-Type"].startswith("application/vnd.google.protobuf")
        families = {f.name: f for f in promproto.decode_delimited(body)}
        (metric,) = families["jitterlab_monitor_latency_seconds"].metric
        h = metric.histogram
        assert (
            h.schema == 7 and h.sample_count == 20_000 and len(h.bucket) == len(BUCKETS_S)
        )  # native and classic
        assert sum(np.cumsum(list(h.positive_delta))) == 20_000
        assert families["jitterlab_monitor_samples_total"].metric[0].counter.value == 20_000
        # text: the classic buckets and the summary; HEAD answers with headers only
        status, headers, text = get(url)
        assert status == 200 and b'jitterlab_monitor_latency_seconds_bucket{channel="' in text
        summary = metric_lines(text.decode(), "jitterlab_monitor_latency_summary_seconds")
        assert set(summary) >= {
            f'{{channel="{channel}",quantile="0.5"}}',
            f'{{channel="{channel}",quantile="0.99"}}',
        }
        status, headers, body = get(url, method="HEAD")
        assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0
        deadline = time.monotonic() + 90
        result: list[dict] = []
        while time.monotonic() < deadline:
            try:
                result = _query(
                    prom_port,
                    f'histogram_quantile(0.99, jitterlab_monitor_latency_seconds{{channel="{channel}"}})',
                )
                count = _query(
                    prom_port, f'histogram_count(jitterlab_monitor_latency_seconds{{channel="{channel}"}})'
                )
                if result and count and float(count[0]["value"][1]) == 20_000:
                    break
            except OSError:
                pass  # prometheus still starting
            time.sleep(0.5)
        assert result, "prometheus never scraped the native histogram"
        served_p99 = float(result[0]["value"][1])
    finally:
        prometheus.terminate()
        prometheus.wait(timeout=30)
    proc.send_signal(signal.SIGINT)
    run = load_run(wait_stored(proc, timeout=60), store)
    exact = float(percentiles(run.latency_ns, [99.0])[0]) / 1e9
    bound = promproto.schema_error(7)
    assert abs(served_p99 - exact) / exact <= bound, (served_p99, exact, bound)
    print(
        f"native p99 {served_p99:.6g} s, exact type-7 p99 {exact:.6g} s: {abs(served_p99 - exact) / exact:.3%} (bound {bound:.3%})"
    )


# --- item 4: OTLP ---------------------------------------------------------------------------


def test_export_otlp_decodes_and_its_quantiles_are_within_the_printed_bound(
    store: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    from jitterlab.store import otlp

    latency = latency_clusters(41, 30_000)
    latency[:3] = 0  # a clock step: the zero bucket
    run = make_run(store, latency)
    out = tmp_path / "run.otlp"
    code, _, err = run_main(
        ["export", run.id, "--format", "otlp", "-o", str(out), "--store", str(store)], capsys
    )
    assert code == 0, err
    request = ExportMetricsServiceRequest.FromString(out.read_bytes())
    (metric,) = request.resource_metrics[0].scope_metrics[0].metrics
    assert metric.name == "jitterlab.latency" and metric.unit == "s"
    (point,) = metric.exponential_histogram.data_points
    assert point.count == latency.size and point.zero_count == 3
    assert sum(point.positive.bucket_counts) == latency.size - 3 and len(point.positive.bucket_counts) <= 160
    assert point.max == latency.max() / 1e9 and math.isclose(point.sum, latency.sum() / 1e9)
    bound = otlp.relative_error(point.scale)
    assert f"scale {point.scale}" in err and f"{bound:.3%}" in err
    ordered = np.sort(latency)
    for q in (0.5, 0.9, 0.99, 0.999, 0.9999, 1.0):
        exact = ordered[max(1, math.ceil(q * latency.size)) - 1] / 1e9
        assert abs(otlp.quantile_from(point, q) - exact) <= bound * exact, q
    # the scale is the finest that fits: one finer needs more than 160 buckets
    values = latency[latency > 0] / 1e9
    finer = otlp.bucket_index(np.array([values.min(), values.max()]), point.scale + 1)
    assert finer[1] - finer[0] + 1 > 160


def test_monitor_pushes_otlp_to_a_collector_that_comes_up_late(store: Path, channel: str) -> None:
    """``monitor serve --otlp``: while the collector is down, one warning line and quiet
    retries; once a real HTTP receiver listens, the pushes arrive as OTLP/HTTP protobuf on
    /v1/metrics, decode with opentelemetry-proto, and their quantiles are within the bound
    the server printed of the stored run's exact ones."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    from jitterlab.store import otlp

    received: list[tuple[str, str, bytes]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers.get("Content-Type", ""), body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    latency = latency_clusters(41, 20_000)
    latency[:2] = 0  # a clock step: the zero bucket
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/metrics"
    proc = start_serve(
        channel,
        store,
        f"127.0.0.1:{free_port()}",
        "--duration",
        "60s",
        "--otlp",
        url,
        "--otlp-interval",
        "0.3s",
    )
    collector = None
    try:
        with Monitor(channel) as m:
            for v in latency.tolist():
                m.record(v)
        time.sleep(1.5)  # several pushes meet no collector
        collector = ThreadingHTTPServer(("127.0.0.1", port), Collector)
        threading.Thread(target=collector.serve_forever, daemon=True).start()
        deadline = time.monotonic() + 20
        while not received:
            assert time.monotonic() < deadline, "no push reached the collector once it listened"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        if collector is not None:
            collector.shutdown()
            collector.server_close()
    assert proc.returncode in (0, 130), err
    assert err.count("otlp-unreachable") == 1, err  # one line, then quiet retries
    run = load_run(
        next(line.split()[1].rstrip(":") for line in err.splitlines() if line.startswith("stored ")), store
    )
    path, content_type, body = received[-1]  # the last push, at the end: the whole session
    assert path == "/v1/metrics" and content_type == "application/x-protobuf"
    request = ExportMetricsServiceRequest.FromString(body)
    (metric,) = request.resource_metrics[0].scope_metrics[0].metrics
    assert metric.name == "jitterlab.latency" and metric.unit == "s"
    (point,) = metric.exponential_histogram.data_points
    assert point.count == latency.size == run.latency_ns.size and point.zero_count == 2
    assert len(point.positive.bucket_counts) <= 160
    assert math.isclose(point.sum, latency.sum() / 1e9, rel_tol=1e-9)
    bound = otlp.relative_error(point.scale)
    assert f"scale {point.scale}" in err and f"{bound:.3%}" in err  # the bound, printed
    ordered = np.sort(run.latency_ns)
    for q in (0.5, 0.9, 0.99, 0.999, 1.0):
        exact = ordered[max(1, math.ceil(q * ordered.size)) - 1] / 1e9
        assert abs(otlp.quantile_from(point, q) - exact) <= bound * exact, q


def test_a_bad_otlp_url_is_one_line(store: Path, channel: str) -> None:
    result = run_cli(
        "monitor", "serve", "--channel", channel, "--otlp", "collector:4318", "--store", str(store)
    )
    assert result.returncode == 2
    assert (
        result.stderr.strip().count("\n") == 0 and "--otlp wants an OTLP/HTTP receiver's URL" in result.stderr
    )
    assert not store.exists() or not any(store.iterdir())


# --- items 1 and 2: the page's HTTP side under bad clients ----------------------------------


def test_http_is_read_only_and_bad_clients_never_stop_the_recording(store: Path, channel: str) -> None:
    """Issue 41, bad input: POST is refused, a malformed request is a 400, event streams that
    disconnect at once or never read, and a flood of page loads, leave the drain loop
    recording: every sample stored, none dropped, one log line per incident."""
    port = free_port()
    proc = start_serve(channel, store, f"127.0.0.1:{port}", "--duration", "12s")
    base = f"http://127.0.0.1:{port}"
    assert get(base + "/metrics", method="POST")[0] == 405
    assert get(base + "/", method="DELETE")[0] == 405
    status, headers, page = get(base + "/")
    assert (
        status == 200 and b"/live.js" in page and "default-src 'none'" in headers["Content-Security-Policy"]
    )
    assert b"http" not in page.replace(b"http-equiv", b""), "the page fetches nothing from elsewhere"
    assert get(base + "/nothing")[0] == 404
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"\x16\x03\x01garbage\r\n\r\n")
        assert b"400" in s.recv(400)  # an HTTP/0.9-style answer: the request line was not HTTP
    slow = []
    for _ in range(3):  # streams that are never read: their socket buffers fill
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        s.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        slow.append(s)
    recorded = 0
    with Monitor(channel) as m, m.trial("flood"):
        for _ in range(60):  # a flood of page loads and streams that go away at once
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            get(base + "/")
            for v in range(1000):
                recorded += m.record(10_000 + v)
            time.sleep(0.02)
    time.sleep(1.0)
    for s in slow:
        s.close()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (0, 130), err
    stored = next(line for line in err.splitlines() if line.startswith("stored "))
    run = load_run(stored.split()[1].rstrip(":"), store)
    assert recorded == 60_000 and run.latency_ns.size == recorded and run.meta["monitor"]["ring_dropped"] == 0
    log = [line for line in err.splitlines() if line.startswith("monitor serve: ")]
    assert any("400" in line for line in log), err
    assert all(len(line) < 300 for line in log) and "Traceback" not in err


def test_listening_beyond_loopback_says_who_can_see_it(store: Path, channel: str) -> None:
    from jitterlab.monitor.live import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("::")
    done = run_cli(
        "monitor", "serve", "--channel", channel, "--duration", "0.3s", "--store", str(store),
        "--listen", f"0.0.0.0:{free_port()}",
    )  # fmt: skip
    warning = next(line for line in done.stderr.splitlines() if "listen-open" in line)
    assert "every host that can reach this machine" in warning and "without a password" in warning


# --- item 1: the page in a real browser ------------------------------------------------------


def _chrome(tmp_path: Path):  # type: ignore[no-untyped-def]
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("chromium and chromium-driver are needed (scripts/setup.sh installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1400,1800",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


PAGE_STATE = """
const s = document.querySelector('section.channel');
if (!s) return null;
const num = sel => { const n = s.querySelector(sel); return n ? Number(n.dataset.value) : null; };
return {
  alert: s.querySelector('.alert').classList.contains('on') ? s.querySelector('.alert').textContent : '',
  drained: num('dd.drained'), stored: num('dd.stored'), dropped: num('dd.dropped'),
  lag: num('dd.lag'),
  trials: Array.from(s.querySelectorAll('table.trials tbody tr')).map(r => ({
    tag: r.dataset.trial, samples: Number(r.querySelector('td.samples').dataset.value),
    verdict: r.querySelector('td.verdict').dataset.verdict})),
  categories: Array.from(s.querySelectorAll('table.categories td.count')).map(c => Number(c.dataset.value)),
  percentiles: Object.fromEntries(Array.from(s.querySelectorAll('table.percentiles tbody tr')).map(
    r => [r.dataset.p, Number(r.querySelector('td.value').dataset.ns)])),
};
"""


def test_the_live_page_turns_a_spiked_trial_contaminated_within_a_second(
    tmp_path: Path, store: Path, channel: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41 item 1 in a real headless Chromium: a writer starts, a spike inside a trial
    raises the page's alert within 1 s; the page's numbers equal /metrics and the stored
    run's; no console errors."""
    reference = make_run(store, latency_clusters(7, 5_000))
    port = free_port()
    proc = start_serve(
        channel, store, f"127.0.0.1:{port}", "--baseline", reference.id, "--duration", "60s",
        "--percentiles", "50,99",
    )  # fmt: skip
    driver = _chrome(tmp_path)
    try:
        driver.get(f"http://127.0.0.1:{port}/")
        assert driver.title == "jitterlab monitor"
        clean = latency_clusters(8, 3_000)
        clean = clean[clean < 500_000]  # the main clusters only: no spike of the baseline's kind
        with Monitor(channel) as m:
            with m.trial("calm"):
                for v in clean.tolist():
                    m.record(v)
            with m.trial("spiked"):
                for v in clean[:1000].tolist():
                    m.record(v)
                deadline = time.monotonic() + 10
                while (state := driver.execute_script(PAGE_STATE)) is None or state[
                    "drained"
                ] < clean.size + 1000:
                    assert time.monotonic() < deadline, "the page never showed the samples"
                    time.sleep(0.05)
                assert state["alert"] == ""  # nothing to alarm yet
                m.record(80_000_000)  # an 80 ms spike: beyond the baseline's top cut
                spiked = time.monotonic()
                while not (state := driver.execute_script(PAGE_STATE))["alert"]:
                    assert time.monotonic() - spiked < 5, "the page never showed the alert"
                    time.sleep(0.02)
                seen_after = time.monotonic() - spiked
                assert "spiked" in state["alert"] and "CONTAMINATED" in state["alert"]
        deadline = time.monotonic() + 10
        total = clean.size + 1001
        while (state := driver.execute_script(PAGE_STATE))["drained"] != total or state["alert"]:
            assert time.monotonic() < deadline, state
            time.sleep(0.1)
        _, _, text = get(f"http://127.0.0.1:{port}/metrics")
        metrics = text.decode()
        label = f'{{channel="{channel}"}}'
        assert metric_lines(metrics, "jitterlab_monitor_samples_total")[label] == state["drained"] == total
        assert metric_lines(metrics, "jitterlab_monitor_dropped_total")[label] == state["dropped"] == 0
        outliers = {
            key.split('category="', 1)[1].split('"', 1)[0]: value
            for key, value in metric_lines(metrics, "jitterlab_monitor_outliers_total").items()
        }
        assert outliers == {str(k): c for k, c in enumerate(state["categories"]) if k}, (outliers, state)
        summary = metric_lines(metrics, "jitterlab_monitor_latency_summary_seconds")
        for p, q in (("50", "0.5"), ("99", "0.99")):  # type 7 on the page, HdrHistogram's rank on
            # /metrics, both read off the same HdrHistogram (3 significant digits)
            hdr = summary[f'{{channel="{channel}",quantile="{q}"}}']
            assert state["percentiles"][p] / 1e9 == pytest.approx(hdr, rel=2e-3)
        contaminated = metric_lines(metrics, "jitterlab_monitor_trial_contaminated")
        page_trials = {t["tag"]: t for t in state["trials"]}
        assert {t: page_trials[t]["verdict"] for t in page_trials} == {
            "calm": "clean",
            "spiked": "CONTAMINATED",
        }
        for key, value in contaminated.items():
            tag = key.split('trial="', 1)[1].split('"', 1)[0]
            assert value == (1.0 if tag == "spiked" else 0.0)
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
        driver.save_screenshot(str(tmp_path / "live.png"))
    finally:
        driver.quit()
    proc.send_signal(signal.SIGINT)
    run = load_run(wait_stored(proc, timeout=60), store)
    assert run.latency_ns.size == state["drained"]
    code, out, err = run_main(["monitor", "trials", run.id, "--json", "--store", str(store)], capsys)
    assert code == 0, err
    stored = {t["trial"]: t for t in json.loads(out)}
    assert {t: ("CONTAMINATED" if v["contaminated"] else "clean") for t, v in stored.items()} == {
        t: v["verdict"] for t, v in page_trials.items()
    }
    assert {t: v["samples"] for t, v in stored.items()} == {t: v["samples"] for t, v in page_trials.items()}
    assert seen_after <= 1.0, f"the alert came {seen_after:.2f} s after the spike"


def _first_snapshot(port: int, drained: int, timeout: float = 20.0) -> dict[str, object]:
    """The first /events snapshot that has drained ``drained`` samples."""
    deadline = time.monotonic() + timeout
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        buffer = b""
        while time.monotonic() < deadline:
            buffer += s.recv(65536)
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                for line in event.splitlines():
                    if line.startswith(b"data: "):
                        snap = json.loads(line[6:])
                        if snap["counts"]["drained"] >= drained:
                            return dict(snap)
    raise AssertionError("no snapshot with every sample")


def test_the_live_page_marks_levels_its_sample_cannot_resolve_and_colours_categories(
    store: Path, channel: str
) -> None:
    """Issue 38 on the live page: the one resolution rule and the project's binomial interval
    (stats/quantile_ci.py), and each category in its colour (core/palette.py)."""
    from jitterlab.core.palette import category_colour

    reference = make_run(store, latency_clusters(7, 5_000))
    port = free_port()
    proc = start_serve(channel, store, f"127.0.0.1:{port}", "--baseline", reference.id, "--duration", "15s")
    try:
        with Monitor(channel) as m, m.trial("few"):
            for v in latency_clusters(9, 2_000)[:2_000].tolist():  # 2,000: p99.9 has 2 beyond it
                m.record(v)
        snap = _first_snapshot(port, 2_000)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    levels = {p["p"]: p for p in snap["percentiles"]}  # type: ignore[attr-defined]
    assert levels[99.0]["resolved"] and not levels[99.9]["resolved"] and not levels[99.99]["resolved"]
    assert levels[50.0]["low_ns"] <= levels[50.0]["value_ns"] <= levels[50.0]["high_ns"]
    assert len(snap["categories"]) >= 2  # type: ignore[arg-type]  # main and outliers, with the baseline
    assert [c["colour"] for c in snap["categories"]] == [  # type: ignore[attr-defined]
        category_colour(c["k"])
        for c in snap["categories"]  # type: ignore[attr-defined]
    ]
    script = (Path(__file__).resolve().parents[2] / "src/jitterlab/monitor/page/live.js").read_text()
    assert 'p.resolved ? fmtNs(p.value_ns) : (p.low_ns === null ? "not resolved" : "≥ "' in script

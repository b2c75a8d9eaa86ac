"""``monitor serve --otlp URL``: the channel's latency pushed to an OpenTelemetry collector.

Every ``--otlp-interval`` a thread of its own reads the server's native histogram (the
counts /metrics serves, monitor/state.py), turns it into an OTLP exponential histogram
(store/otlp.py, the encoder ``export --format otlp`` uses) and POSTs it as an
``ExportMetricsServiceRequest`` (``Content-Type: application/x-protobuf``) to URL, an
OTLP/HTTP receiver's ``/v1/metrics``. The drain loop never waits for it: the thread holds
the state's lock only to copy the counts. The data point is cumulative (everything since
the server started), so a push that could not go is simply replaced by the next one: the
queue holds one snapshot at most, however long the collector is away. A collector that
cannot be reached (down, refusing, answering an error) is one warning line
(``otlp-unreachable``); then the pushes retry quietly each interval. A last push goes out
when the server stops.

Scale: the native histogram's schema (``--native-error``; 7 by default: buckets 0.54 %
wide) is OTLP's scale (a Prometheus bucket ``(b^(i−1), b^i]`` is OTLP's bucket ``i − 1``),
downscaled exactly (two buckets into one) until the values span at most 160 buckets, the
OpenTelemetry SDK's default. The scale pushed, and with it the error bound of a quantile
read from it, is said on the server's log when it changes.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.warnings import CodedWarning
from jitterlab.monitor.state import LiveState
from jitterlab.store.otlp import ExponentialHistogram, bound_text, downscaled, request_of

CONTENT_TYPE = "application/x-protobuf"
TIMEOUT_S = 5.0
DEFAULT_INTERVAL_S = 10.0


def check_url(url: str) -> str:
    """An OTLP/HTTP URL (``http://`` or ``https://``, a host), or one line saying what is wanted."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise JitterlabError(
            f"--otlp wants an OTLP/HTTP receiver's URL (for example http://127.0.0.1:4318/v1/metrics), got '{url}'"
        )
    return url


def histogram_now(state: LiveState) -> ExponentialHistogram:
    """The state's native histogram as an OTLP exponential histogram (see the module docs)."""
    with state.lock:
        nonzero = np.flatnonzero(state.native_counts)
        counts = state.native_counts[nonzero].astype(np.uint64)
        zero, total_s, schema = state.native_zero, state.latency_sum_s, state.native_schema
        low = state.native_low
    scale, offset, merged = downscaled(schema, nonzero + low - 1, counts)
    return ExponentialHistogram(scale, int(zero), offset, merged, total_s, None, None)


class OtlpPush:
    """The pushing thread (``stop`` ends it after a last push)."""

    def __init__(
        self,
        state: LiveState,
        url: str,
        interval_s: float,
        info: dict[str, Any],
        warn: Callable[[CodedWarning], None],
        log: Callable[[str], None],
    ) -> None:
        self.state = state
        self.url = check_url(url)
        self.interval_s = interval_s
        self.warn = warn
        self.log = log
        self.resource = {"host.name": socket.gethostname()}
        self.attributes = {
            "jitterlab.channel": str(info.get("channel", "")),
            "jitterlab.run": str(info.get("run", "")),
        }
        self.start_unix_ns = time.time_ns()
        self.warned = False  # an unreachable collector is said once
        self.scale: int | None = None
        self.pushed = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="otlp-push", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.wait(self.interval_s):
            self.push()

    def push(self) -> bool:
        """One push of everything so far; whether the collector took it."""
        histogram = histogram_now(self.state)
        request = request_of(
            histogram,
            self.start_unix_ns,
            time.time_ns(),
            self.resource,
            self.attributes,
            "latency of every sample of a jitterlab monitor channel, since the server started",
        )
        body = request.SerializeToString()
        post = urllib.request.Request(
            self.url, data=body, method="POST", headers={"Content-Type": CONTENT_TYPE}
        )
        try:
            with urllib.request.urlopen(post, timeout=TIMEOUT_S) as response:
                response.read()
        except (urllib.error.URLError, OSError, ValueError) as e:
            if not self.warned:
                reason = getattr(e, "reason", None) or e
                self.warn(
                    CodedWarning(
                        "otlp-unreachable",
                        f"--otlp {self.url}: {reason}; recording goes on, the push retries every "
                        f"{self.interval_s:g} s without saying so again",
                    )
                )
                self.warned = True
            return False
        self.pushed += 1
        if histogram.scale != self.scale and histogram.count:
            self.scale = histogram.scale
            self.log(f"otlp push to {self.url}: {bound_text(histogram.scale)}")
        return True

    def stop(self) -> None:
        """End the thread, then push once more: the collector gets the whole session."""
        self.stopped.set()
        self.thread.join()
        self.push()

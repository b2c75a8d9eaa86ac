"""``export --format otlp``: a run's latency as an OpenTelemetry exponential histogram.

The file is one ``ExportMetricsServiceRequest`` (store/otlp.py: the encoding, the scale
and its error bound, shared with ``monitor serve --otlp``): what an OTLP/HTTP exporter
POSTs to a collector's ``/v1/metrics``. It holds one metric, ``jitterlab.latency`` (unit
``s``), an exponential histogram with one data point (cumulative temporality) over the
run's samples, with the run's id, technique and host as attributes, at the finest scale
(at most 20) at which the run's values fit in 160 buckets; the export prints the scale's
error bound.
"""

from __future__ import annotations

import sys
from typing import Any, BinaryIO

from jitterlab.core.errors import JitterlabError
from jitterlab.store import Run
from jitterlab.store.otlp import bound_text, histogram_of, request_of


def run_request(run: Run) -> tuple[Any, int]:
    """The ExportMetricsServiceRequest of ``run`` and the scale it was written at."""
    latency = run.latency_ns
    if not latency.size:
        raise JitterlabError(f"run {run.id} has no samples: nothing to export as otlp")
    histogram = histogram_of(latency)
    t_send = run.t_send_ns
    start, end = _unix_span(run, int(t_send.max() - t_send.min()))
    request = request_of(
        histogram,
        start,
        end,
        {"host.name": str((run.meta.get("environment") or {}).get("host", ""))},
        {"jitterlab.run": run.id, "jitterlab.technique": str(run.config.get("technique", ""))},
        "latency of every sample of a jitterlab run",
    )
    return request, histogram.scale


def _unix_span(run: Run, length_ns: int) -> tuple[int, int]:
    """The run's start (its ``created_utc`` time) and end in Unix nanoseconds."""
    import datetime as dt

    started = run.meta.get("created_utc")
    try:
        start = dt.datetime.fromisoformat(str(started).replace("Z", "+00:00"))
        start_ns = int(start.timestamp()) * 1_000_000_000 + start.microsecond * 1000
    except ValueError:
        start_ns = 0
    return start_ns, start_ns + max(length_ns, 0)


def export_otlp(run: Run, o: Any, out: BinaryIO) -> None:
    """Write ``run`` as an OTLP ExportMetricsServiceRequest; say the scale's error bound."""
    request, scale = run_request(run)
    out.write(request.SerializeToString())
    sys.stderr.write(f"otlp: {bound_text(scale)}\n")

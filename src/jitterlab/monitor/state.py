"""What ``monitor serve`` knows of its channel now: the counters the drain loop
(monitor/server.py) adds each batch to, and what the endpoints (monitor/metrics.py, the
live page in monitor/live.py, the OTLP push in monitor/otlp_push.py) read from them.

It sits below the server and the endpoints alike, so that none of them imports another in
a circle (issue 41 item 4): the server starts the endpoints, the endpoints read the state.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitterlab.stats.screening import DEFAULT_ALPHA, Baseline, Verdict, screen_counts
from jitterlab.store.hdr.histogram import Histogram

# Histogram buckets of the metrics endpoint (seconds): 1-2-5 steps from 1 µs to 10 s
BUCKETS_S = (*(m * 10.0**e for e in range(-6, 1) for m in (1, 2, 5)), 10.0)
# the native histogram's relative error (issue 41 item 3): schema 7, buckets 0.54 % wide
NATIVE_ERROR = 0.01
# the live page's latency over time: bins of 0.5 s, the last 10 minutes
TIMELINE_BIN_NS = 500_000_000
TIMELINE_BINS = 1200


@dataclass
class TrialState:
    """A trial of one writer (a Monitor handle: pid << 32 | its number in the process): only
    that writer's samples between its begin and end marks belong to it (issue 24 item 11)."""

    tag: str
    writer: int
    index: int  # its place in run.json monitor.trials, the samples' `trial` column
    first_seq: int
    t_begin_ns: int
    counts: np.ndarray
    samples: int = 0
    max_ns: float = float("-inf")
    end_seq: int | None = None
    t_end_ns: int | None = None

    @property
    def writer_name(self) -> str:
        return writer_name(self.writer)

    def block(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "writer": self.writer_name,
            "samples": self.samples,
            "first_seq": self.first_seq,
            "end_seq": self.end_seq,
            "t_begin_ns": self.t_begin_ns,
            "t_end_ns": self.t_end_ns,
        }


def writer_name(writer: int) -> str:
    """``PID.N``: the process and the number of the Monitor handle within it."""
    return f"{writer >> 32}.{writer & 0xFFFF_FFFF}"


@dataclass
class LiveState:
    """What the endpoint reports; written by the drain loop under ``lock``."""

    channel: str
    baseline: Baseline | None
    alpha: float = DEFAULT_ALPHA
    samples: int = 0
    ring_dropped: int = 0
    category_counts: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    bucket_counts: np.ndarray = field(default_factory=lambda: np.zeros(len(BUCKETS_S) + 1, np.int64))
    latency_sum_s: float = 0.0
    # --percentiles: every sample in an HdrHistogram (3 significant digits) read at scrape time
    percentiles: tuple[float, ...] = ()
    histogram: Histogram | None = None
    trials: list[TrialState] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # the native histogram of /metrics' protobuf exposition (promproto): counts per bucket
    # index ``native_low`` + k at ``native_schema``; latencies <= 0 in ``native_zero``
    native_schema: int = 7
    native_low: int = 0
    native_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    native_zero: int = 0
    # the live page (monitor/live.py): samples written to parts so far, entries left from
    # before the server, each writer's samples and last sample time, and per time bin of
    # TIMELINE_BIN_NS (by receive time) the count, min, max, sum and outliers of its latencies
    stored: int = 0
    backlog_skipped: int = 0
    writers: dict[int, list[int]] = field(default_factory=dict)
    timeline: dict[int, list[float]] = field(default_factory=dict)
    version: int = 0  # bumped by every batch: the page's publisher sends only what changed

    def verdict(self, trial: TrialState) -> Verdict | None:
        if self.baseline is None:
            return None
        return screen_counts(tuple(int(c) for c in trial.counts), trial.max_ns, self.baseline, self.alpha)

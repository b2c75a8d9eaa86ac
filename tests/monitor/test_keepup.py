"""Issue 41 item 2: the server keeps up. The ring is emptied by a drain thread of its own,
so a processing thread that is busy (writing a part, a slow batch) never leaves the ring to
fill; and the counters a batch adds are the ones the samples give, whatever the batch."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from jitterlab.core.programs import native_program
from jitterlab.monitor import recorder
from jitterlab.monitor.server import BUCKETS_S, Server, load_baseline
from jitterlab.store.runs import ResultsStore

RING = 524_288  # JL_MONITOR_DEFAULT_CAPACITY: what the ring holds while nobody drains


@pytest.fixture
def channel() -> Iterator[str]:
    name = f"pytest-keepup-{os.getpid()}-{time.monotonic_ns() % 10**9}"
    yield name
    recorder.unlink(name)


def test_the_ring_is_drained_while_the_processing_is_busy(tmp_path: Path, channel: str) -> None:
    server = Server(channel, ResultsStore(tmp_path / "s"), None, None)
    try:
        server.start()
        total = 3 * RING  # three rings' worth written while the processing thread does nothing
        load = subprocess.run(
            [str(native_program("jitterlab-monitor-load")), "--channel", channel, "--rate", "1000000",
             "--samples", str(total), "--jitter-ns", "2000"],
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        written = json.loads(load.stdout)
        time.sleep(0.3)
        drained_meanwhile = server.drainer.held if server.drainer is not None else 0
        server.stop_draining()
        while server.step():
            pass
        # more than a ring's worth waited in the drain thread's queue: without it, all but
        # one ring of what was written while nothing processed would have been dropped
        assert drained_meanwhile > RING + 100_000
        assert server.state.samples + server.state.ring_dropped == total
        assert server.state.samples == written["recorded"]
        assert server.state.samples >= total - RING // 2  # the drain thread kept up with the writer
    finally:
        server.reader.close()


def test_a_batch_counts_what_its_samples_give(tmp_path: Path, channel: str) -> None:
    """The batch's counters come from its distinct values (one sort): each equals the count
    taken sample by sample, negatives (clock steps) and a batch across time bins included."""
    rng = np.random.default_rng(41)
    reference = np.concatenate([rng.normal(10_000, 500, 20_000), rng.normal(30_000, 1_000, 400)])
    baseline = load_baseline(reference.astype(np.int64), "reference")
    server = Server(channel, ResultsStore(tmp_path / "s"), baseline, "reference")
    try:
        n = 50_000
        latency = np.maximum(rng.normal(12_000, 4_000, n), 1).astype(np.int64)
        latency[::1000], latency[7], latency[8] = 80_000_000, -5, 0
        events = np.zeros(n, recorder.EVENT_DTYPE)
        events["t_recv_ns"] = 10**12 + np.sort(rng.integers(0, 2 * 10**9, n))  # five 0.5 s bins
        events["t_send_ns"] = events["t_recv_ns"] - latency
        server._process(events)
        s = server.state
        assert s.samples == n
        assert (
            s.bucket_counts.tolist()
            == np.bincount(
                np.searchsorted(BUCKETS_S, latency / 1e9, side="left"), minlength=len(BUCKETS_S) + 1
            ).tolist()
        )
        assert s.native_zero == 2
        assert int(s.native_counts.sum()) == n - 2
        assert s.latency_sum_s == pytest.approx(latency.sum() / 1e9, rel=1e-12)
        above = np.sum(latency[:, None] > np.array(baseline.thresholds), axis=1)
        assert s.category_counts.tolist() == np.bincount(above, minlength=len(s.category_counts)).tolist()
        assert s.histogram is not None and s.histogram.total == n
        assert s.histogram.max >= 80_000_000
        bins = events["t_recv_ns"] // 500_000_000
        assert sorted(s.timeline) == np.unique(bins).tolist()
        for b, (count, low, high, total, outliers) in s.timeline.items():
            x = latency[bins == b]
            assert (count, low, high) == (x.size, x.min(), x.max())
            assert total == pytest.approx(float(x.sum()))
            assert outliers == np.count_nonzero(x > baseline.thresholds[0])
    finally:
        server.reader.close()

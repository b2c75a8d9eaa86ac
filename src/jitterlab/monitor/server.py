"""``jitterlab monitor serve``: drain a channel, classify, store, serve metrics.

One loop drains the ring in batches (numpy arrays of events), classifies every sample with
the baseline's stacked-z thresholds, keeps counters (per category, per trial, a latency
histogram) that the Prometheus endpoint reads at scrape time, and writes the samples to the
run's staging folder in rolling Parquet parts. Memory stays bounded however long it runs:
only the current part is held. At the end the parts become the run's samples file; a
server killed outright leaves its parts and a draft run.json for ``jitterlab recover``.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import os
import signal
import stat
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError, escape_controls
from jitterlab.core.fileio import atomic_write_json, os_error_text, owner_name
from jitterlab.core.signals import noted_stops
from jitterlab.core.warnings import CodedWarning
from jitterlab.measure import environment
from jitterlab.measure.doctor import doctor_facts
from jitterlab.measure.runner import Context, Done, Plan, Point
from jitterlab.monitor.promproto import bucket_indices, schema_for
from jitterlab.monitor.recorder import (
    EVENT_DTYPE,
    SAMPLE,
    TRIAL_BEGIN,
    TRIAL_END,
    WRITER_NOTE,
    Reader,
    check_channel,
    writer_note,
)
from jitterlab.monitor.state import (
    BUCKETS_S,
    NATIVE_ERROR,
    TIMELINE_BIN_NS,
    TIMELINE_BINS,
    LiveState,
    TrialState,
)
from jitterlab.stats import stacked_z_test
from jitterlab.stats.categories import categorize
from jitterlab.stats.screening import (
    DEFAULT_ALPHA,
    MIN_BASELINE_SAMPLES,
    Baseline,
    baseline_of,
)
from jitterlab.store.hdr.histogram import Histogram
from jitterlab.store.runs import ResultsStore, Run, load_run
from jitterlab.store.schema import run_meta, safe_id_part
from jitterlab.store.staging import DRAFT_JSON

# the live state (what the endpoints read) and its constants: monitor/state.py
# the native buckets kept span 2^-31 s (0.47 ns) to 2^11 s; a value beyond counts in the last
NATIVE_LOG2_RANGE = (-31, 11)
PART_SAMPLES = 1_000_000
PART_SECONDS = 2.0  # what a server killed outright can lose at most
# the drain thread (issue 41 item 2): it empties the ring apart from the processing, so a
# part being written or a slow batch never leaves the ring (0.5 s at 1 M samples/s) to fill;
# it holds at most DRAIN_QUEUE_EVENTS events (56 bytes each: 117 MB) the processing has not
# taken yet, and waits DRAIN_IDLE_S when the ring had less than a batch
DRAIN_QUEUE_EVENTS = 1 << 21
DRAIN_IDLE_S = 0.01
# the processing takes what was drained once a full batch waits or DRAIN_WAIT_S passed: few
# large batches, as numpy's per-call costs want, and a sample is counted within 0.1 s
DRAIN_WAIT_S = 0.1
DRAIN_BATCH = 65_536
DRAIN_CHUNK = 1 << 18
# the drain thread ends within DRAIN_WAIT_S of a stop; one that has not after this long is
# stuck, and the server says so instead of waiting for it for ever
DRAIN_STOP_S = 10.0
NO_WRITER = "no writer recorded on channel '{channel}' while it was served: no run stored"


def sample_writers(events: np.ndarray) -> np.ndarray:
    """The writer of each sample event (the first 8 bytes of its tag field, host order)."""
    raw = np.ascontiguousarray(events).view(np.uint8).reshape(len(events), events.dtype.itemsize)
    fields = events.dtype.fields
    assert fields is not None
    offset = fields["tag"][1]
    return raw[:, offset : offset + 8].copy().view(np.uint64).ravel()


def load_baseline(values: np.ndarray, ref: str) -> Baseline:
    """A baseline from a reference run's latencies; one line for an unusable one."""
    if values.size < MIN_BASELINE_SAMPLES:
        raise JitterlabError(
            f"baseline {ref} has {values.size} samples; screening needs at least {MIN_BASELINE_SAMPLES}"
        )
    result = stacked_z_test(values)
    if not result.thresholds:
        raise JitterlabError(f"baseline {ref} has no outlier categories (all its latencies are equal)")
    return baseline_of(values, result)


class ChannelLock:
    """This server's hold on a channel: a flock on a file beside the ring, removed again on
    release. A server that locked a file another one had just removed would hold nothing,
    so the lock is only taken on a file that is still the one at the path.

    The folder is shared (/dev/shm): the file is opened without following a link and used
    only when it is a regular file of this user, so a link or file another user planted
    there is never written through and what it says is never believed (issue 24 item 2)."""

    def __init__(self, channel: str, warn: Callable[[CodedWarning], None] = lambda _: None) -> None:
        folder = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path("/tmp")
        self.path = folder / f"jitterlab-monitor-{channel}.serve.lock"
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        while True:
            try:
                fd = os.open(self.path, flags, 0o600)
            except OSError as e:
                if e.errno == errno.ELOOP or (e.errno == errno.EACCES and self.path.is_symlink()):
                    raise JitterlabError(
                        f"{self.path} is a symbolic link, not a lock file: not followed; "
                        f"remove it to serve channel '{channel}'"
                    ) from None
                raise JitterlabError(f"cannot open {self.path}: {os_error_text(e)}") from None
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                os.close(fd)
                what = "a regular file" if stat.S_ISREG(st.st_mode) else "not a regular file"
                raise JitterlabError(
                    f"{self.path} ({what}) belongs to {owner_name(st.st_uid)}, not to you: channel "
                    f"'{channel}' is held or blocked by that user; it is not used (remove it, or serve "
                    "another channel)"
                )
            handle = os.fdopen(fd, "r+")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = handle.read(32).strip() or "?"
                handle.close()
                raise JitterlabError(
                    f"channel '{channel}' is already served (pid {pid}); stop that server first"
                ) from None
            try:
                same = os.stat(self.path, follow_symlinks=False).st_ino == st.st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            handle.close()  # the file was removed by the server that held it: take the new one
        stale = handle.read(32).strip()
        if stale:  # a server that ended without removing its lock (killed outright)
            warn(
                CodedWarning(
                    "stale-lock",
                    f"took over the lock of channel '{channel}' left by server pid "
                    f"{stale if stale.isdigit() else '?'}, which no longer holds it",
                )
            )
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self.handle = handle

    def release(self) -> None:
        self.path.unlink(missing_ok=True)  # still held: no one else can own this file yet
        self.handle.close()


class Drainer:
    """A thread that empties the ring apart from the thread that processes what it drained
    (issue 41 item 2): writing a part, a batch's numpy work or a page's snapshot never
    leaves the ring unread. It calls only the C drain (which runs without the GIL), straight
    into a chunk of :data:`DRAIN_CHUNK` events that :meth:`take` hands over whole, so an
    event is copied once on its way from the ring. When :data:`DRAIN_QUEUE_EVENTS` events
    wait untaken it stops draining until they are taken (the ring then fills and counts
    its drops: nothing is lost unseen). Only this thread drains while it runs."""

    def __init__(self, reader: Reader, limit: int = DRAIN_QUEUE_EVENTS) -> None:
        self.reader = reader
        self.limit = limit
        self.full: list[np.ndarray] = []  # drained and not taken yet, in order
        self.chunk = np.empty(DRAIN_CHUNK, EVENT_DTYPE)
        self.fill = 0  # events of ``chunk`` drained so far
        self.held = 0
        self.stopped = False
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="monitor-drain", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped:
            with self.cond:
                while self.held >= self.limit and not self.stopped:
                    self.cond.wait(DRAIN_WAIT_S)
                if self.fill == len(self.chunk):
                    self.full.append(self.chunk)
                    self.chunk, self.fill = np.empty(DRAIN_CHUNK, EVENT_DTYPE), 0
                target, start = self.chunk, self.fill
            n = self.reader.drain_into(target, start)  # outside the lock: take() may swap chunks
            if n:
                with self.cond:
                    if self.chunk is target:
                        self.fill = start + n
                    else:  # taken meanwhile up to ``start``: these events follow as their own piece
                        self.full.append(target[start : start + n])
                    self.held += n
                    self.cond.notify_all()
            if n < self.reader.batch:
                time.sleep(DRAIN_IDLE_S)

    def take(self, timeout: float, enough: int = DRAIN_BATCH) -> list[np.ndarray]:
        """What was drained so far, in order, once ``enough`` events wait or ``timeout``
        passed (the arrays are the caller's from then on)."""
        with self.cond:
            if timeout > 0:
                self.cond.wait_for(lambda: self.held >= enough or self.stopped, timeout)
            taken = [*self.full, self.chunk[: self.fill]] if self.fill else self.full
            if self.fill:
                self.chunk, self.fill = np.empty(DRAIN_CHUNK, EVENT_DTYPE), 0
            self.full, self.held = [], 0
            self.cond.notify_all()
        return taken

    def stop(self, timeout: float = DRAIN_STOP_S) -> bool:
        """End the thread (it sees ``stopped`` within :data:`DRAIN_WAIT_S`; no lock is taken
        here); False when it did not end within ``timeout`` seconds."""
        self.stopped = True
        self.thread.join(timeout)
        return not self.thread.is_alive()


class Server:
    """The drain loop and the run it writes."""

    def __init__(
        self,
        channel: str,
        store: ResultsStore,
        baseline: Baseline | None,
        baseline_id: str | None,
        alpha: float = DEFAULT_ALPHA,
        part_samples: int = PART_SAMPLES,
        ring_owner: int | None = None,
        percentiles: tuple[float, ...] = (),
        native_error: float = NATIVE_ERROR,
    ) -> None:
        self.reader = Reader(channel, ring_owner=ring_owner)
        self.hint_at_start = self.reader.hint()
        self.note: str | None = None  # a writer's note left while served (recorder.writer_note)
        self.store = store
        self.state = LiveState(channel, baseline, alpha, percentiles=percentiles)
        # every sample in an HdrHistogram: the summary on /metrics and the page's percentiles
        self.state.histogram = Histogram.auto(3)
        self.state.native_schema = schema_for(native_error)
        low, high = (e * 2**self.state.native_schema for e in NATIVE_LOG2_RANGE)
        self.native_low = self.state.native_low = low
        self.state.native_counts = np.zeros(high - low + 1, np.int64)
        if baseline is not None:
            self.state.category_counts = np.zeros(len(baseline.thresholds) + 1, np.int64)
        self.part_samples = part_samples
        # locked from the moment it exists: recover never takes a live server's folder
        self.staging = store.staging_dir(store.new_run_id("monitor", safe_id_part(channel)), lock=True)
        self.run_id = self.staging.name
        self.started = dt.datetime.now(dt.timezone.utc)
        self.t_start_ns: int | None = None
        self.buffer_send: list[np.ndarray] = []
        self.buffer_recv: list[np.ndarray] = []
        self.buffer_trial: list[np.ndarray] = []
        self.buffered = 0
        self.parts = 0
        self.seq = 0
        self.open_trials: dict[int, TrialState] = {}  # by writer
        self.last_flush = time.monotonic()
        self.stopped_early = False  # a signal ended a session that stored nothing
        self.drainer: Drainer | None = None
        # what writers left in the ring while no server ran belongs to no run of this server:
        # it is counted and left out (a study's trials must not mix with an earlier session)
        self.backlog_skipped = 0
        while len(skipped := self.reader.drain(stale_ns=0)):
            self.backlog_skipped += len(skipped)
        self.dropped_at_start = self.reader.dropped
        self.state.backlog_skipped = self.backlog_skipped
        # the applications write the ring on this machine: the run is measured here, and
        # carries the machine's environment and the doctor's findings like every measured run
        self.meta = run_meta(
            self.run_id,
            self.started,
            environment=environment.collect(),
            doctor=doctor_facts(),
            config={
                "runtime": "monitor",
                "technique": f"monitor/{channel}",
                "pairs": 1,
                "policy": "n/a",
                "source": f"monitor channel {channel}",
                "source_format": "monitor",
            },
            obtained={"warnings": []},
            floor={},
            timing={},
            monitor={
                "channel": channel,
                "baseline": baseline_id,
                "thresholds_ns": list(baseline.thresholds) if baseline else None,
                "top_cut_ns": baseline.top_cut if baseline else None,
                "baseline_outlier_share": baseline.outlier_share if baseline else None,
                "baseline_samples": baseline.samples if baseline else None,
                "alpha": alpha,
                "trials": [],
            },
        )

    # --- the loop -------------------------------------------------------------------

    def step(self) -> int:
        """Process what was drained (by the drain thread once :meth:`start` ran it, else
        drain here once); the number of events."""
        batches = self.drainer.take(DRAIN_WAIT_S) if self.drainer is not None else [self.reader.drain()]
        n = 0
        for events in batches:  # each as it came (chunks of up to DRAIN_CHUNK): never joined
            if len(events):
                self._process(events)
                n += len(events)
        with self.state.lock:
            self.state.ring_dropped = self.reader.dropped - self.dropped_at_start
        if self.buffered >= self.part_samples or (
            self.buffered and time.monotonic() - self.last_flush > PART_SECONDS
        ):
            self.flush()
        return n

    def start(self) -> None:
        """Drain the ring from a thread of its own from now on (:class:`Drainer`)."""
        if self.drainer is None:
            self.drainer = Drainer(self.reader)

    def stop_draining(self) -> None:
        """Stop the drain thread; what it drained and nobody took yet stays to be processed."""
        if self.drainer is not None:
            if not self.drainer.stop(DRAIN_STOP_S):
                raise JitterlabError(
                    f"the drain thread did not end within {DRAIN_STOP_S:g} s: run {self.run_id} "
                    f"stays staged in {self.staging}; `jitterlab recover` stores what it holds"
                )
            rest = self.drainer.take(0.0)
            self.drainer = None
            for events in rest:
                if len(events):
                    self._process(events)

    def _process(self, events: np.ndarray) -> None:
        marks = np.flatnonzero(events["kind"] != SAMPLE)
        start = 0
        for mark in [*marks.tolist(), len(events)]:
            if mark > start:
                self._samples(events[start:mark])
            if mark < len(events):
                self._mark(events[mark])
            start = mark + 1

    def _samples(self, events: np.ndarray) -> None:
        """Add a batch of samples to every counter, each in one vectorised pass over the
        batch and never sorted: a channel's latencies (ns) are nearly all distinct, so
        sorting them to count equal values cost more than it saved (issue 41 item 2)."""
        t_send, t_recv = events["t_send_ns"], events["t_recv_ns"]
        latency = t_recv - t_send
        n = len(latency)
        if self.t_start_ns is None:
            self.t_start_ns = int(t_recv[0])
        seconds = latency / 1e9
        buckets = np.bincount(np.searchsorted(BUCKETS_S, seconds, side="left"), minlength=len(BUCKETS_S) + 1)
        positive = latency > 0
        n_positive = int(np.count_nonzero(positive))
        native = np.clip(
            bucket_indices(seconds if n_positive == n else seconds[positive], self.state.native_schema)
            - self.native_low,
            0,
            len(self.state.native_counts) - 1,
        )
        native_counts = np.bincount(native, minlength=len(self.state.native_counts))
        # float64 adds integers below 2^53 exactly (a batch's sum is ns of latency) and never wraps
        latency_sum_ns = float(latency.sum(dtype=np.float64))
        categories = None
        baseline = self.state.baseline
        if baseline is not None:
            categories = np.bincount(
                categorize(latency, baseline.thresholds), minlength=len(self.state.category_counts)
            )
        writers = sample_writers(events)
        if writers[0] == writers[-1] and bool((writers == writers[0]).all()):  # one writer (the usual)
            by_writer = ([int(writers[0])], [n])
        else:
            w, c = np.unique(writers, return_counts=True)
            by_writer = (w.tolist(), c.tolist())
        bins = self._timeline_bins(
            t_recv, latency, baseline.thresholds[0] if baseline else None, latency_sum_ns
        )
        last = int(t_recv.max())
        with self.state.lock:
            self.state.version += 1
            self.state.samples += n
            self.state.bucket_counts += buckets
            self.state.latency_sum_s += latency_sum_ns / 1e9
            self.state.native_counts += native_counts
            self.state.native_zero += n - n_positive
            for writer, count in zip(*by_writer, strict=True):
                seen = self.state.writers.setdefault(int(writer), [0, 0])
                seen[0] += int(count)
                seen[1] = max(seen[1], last)
            for b, row in bins.items():
                old = self.state.timeline.get(b)
                if old is None:
                    self.state.timeline[b] = row
                else:
                    old[0] += row[0]
                    old[1], old[2] = min(old[1], row[1]), max(old[2], row[2])
                    old[3] += row[3]
                    old[4] += row[4]
            while len(self.state.timeline) > TIMELINE_BINS:
                del self.state.timeline[min(self.state.timeline)]
            if self.state.histogram is not None:  # a negative latency (clock step) counts as 0
                self.state.histogram.record(latency if n_positive == n else np.maximum(latency, 0))
            if categories is not None:
                self.state.category_counts += categories
            trial_of = np.full(n, -1, np.int64)
            if self.open_trials:
                for writer, trial in self.open_trials.items():
                    mine = writers == np.uint64(writer)
                    k = int(np.count_nonzero(mine))
                    if not k:
                        continue
                    trial_of[mine] = trial.index
                    trial.samples += k
                    theirs = latency[mine]
                    trial.max_ns = max(trial.max_ns, float(theirs.max()))
                    if baseline is not None:
                        trial.counts += np.bincount(
                            categorize(theirs, baseline.thresholds), minlength=len(trial.counts)
                        )
        self.buffer_send.append(t_send.copy())
        self.buffer_recv.append(t_recv.copy())
        self.buffer_trial.append(trial_of)
        self.buffered += n
        self.seq += n

    @staticmethod
    def _timeline_bins(
        t_recv: np.ndarray, latency: np.ndarray, outlier_above: float | None, latency_sum_ns: float
    ) -> dict[int, list[float]]:
        """Per time bin of the batch: count, min, max, sum and outliers of its latencies
        (the page draws min…max per bin: a spike is never decimated away). ``latency_sum_ns``
        is the batch's sum, already taken for the totals (the usual batch is one bin)."""
        first, last = int(t_recv.min()) // TIMELINE_BIN_NS, int(t_recv.max()) // TIMELINE_BIN_NS
        if first == last:  # the usual: a batch is a fraction of a bin
            n_out = int(np.count_nonzero(latency > outlier_above)) if outlier_above is not None else 0
            return {
                first: [
                    float(latency.size),
                    float(latency.min()),
                    float(latency.max()),
                    latency_sum_ns,
                    float(n_out),
                ]
            }
        bins = t_recv // TIMELINE_BIN_NS
        rows: dict[int, list[float]] = {}
        for b in range(first, last + 1) if last - first < 8 else np.unique(bins).tolist():
            x = latency[bins == b]
            if not x.size:
                continue
            n_out = int(np.count_nonzero(x > outlier_above)) if outlier_above is not None else 0
            rows[int(b)] = [
                float(x.size),
                float(x.min()),
                float(x.max()),
                float(x.sum(dtype=np.float64)),
                float(n_out),
            ]
        return rows

    def _mark(self, event: np.void) -> None:
        if int(event["kind"]) not in (TRIAL_BEGIN, TRIAL_END):
            return
        when, writer = int(event["t_recv_ns"]), int(event["t_send_ns"])
        current = self.open_trials.pop(writer, None)
        if current is not None:  # an end, or a begin without an end: close this writer's trial
            current.end_seq, current.t_end_ns = self.seq, when
        if int(event["kind"]) == TRIAL_BEGIN:
            tag = escape_controls(bytes(event["tag"])[: int(event["tag_len"])].decode(errors="replace"))
            width = len(self.state.category_counts)
            with self.state.lock:
                trial = TrialState(
                    tag, writer, len(self.state.trials), self.seq, when, np.zeros(width, np.int64)
                )
                self.state.trials.append(trial)
            self.open_trials[writer] = trial

    def flush(self) -> None:
        """Write the buffered samples as the next part, and the draft run.json beside it."""
        if self.buffered:
            self.parts += 1
            first = self.seq - self.buffered
            self.store.write_sample_part(
                self.staging,
                self.parts,
                0,
                np.arange(first, self.seq, dtype=np.int64),
                np.concatenate(self.buffer_send),
                np.concatenate(self.buffer_recv),
                trial=np.concatenate(self.buffer_trial),  # index into monitor.trials, -1: none
            )
            self.buffer_send, self.buffer_recv, self.buffer_trial, self.buffered = [], [], [], 0
            with self.state.lock:
                self.state.stored = self.seq
        self.last_flush = time.monotonic()
        atomic_write_json(
            self.staging / DRAFT_JSON, self._final_meta("partial", "the server is still running")
        )

    def _final_meta(self, status: str, reason: str) -> dict[str, Any]:
        meta = dict(self.meta)
        meta["status"], meta["partial_reason"] = status, reason
        monitor = dict(meta["monitor"])
        monitor["trials"] = [t.block() for t in self.state.trials]
        monitor["ring_dropped"] = self.state.ring_dropped
        monitor["backlog_skipped"] = self.backlog_skipped
        meta["monitor"] = monitor
        meta["config"] = dict(meta["config"]) | {"samples": self.seq}
        if self.t_start_ns is not None:
            meta["timing"] = {"t_start_ns": self.t_start_ns}
        if self.state.ring_dropped:
            meta["obtained"] = {
                "warnings": [
                    {
                        "code": "buffer-full",
                        "detail": f"{self.state.ring_dropped} samples dropped: the ring was full (the server fell behind)",
                    }
                ]
            }
        return meta

    @property
    def no_writer(self) -> bool:
        """No application wrote to the channel while it was served: no sample, no trial
        mark, no drop (issue 41 item 5)."""
        return self.seq == 0 and not self.state.trials and self.state.ring_dropped == 0

    def finish(self, stopped_by: str, partial: bool) -> Run | None:
        """Store the run; None (its staging folder removed) when no writer ever came: an
        empty session is not a run, and never a "complete" one with 0 samples."""
        self.stop_draining()
        for _ in range(100):  # what is still in the ring
            if self.step() == 0:
                break
        self.note = writer_note(self.hint_at_start, self.reader.hint())
        if self.no_writer:
            self.stopped_early = partial
            self.reader.close()
            self.store.discard_staging(self.staging)
            return None
        self.flush()
        meta = self._final_meta(
            "partial" if partial else "complete",
            f"stopped by {stopped_by} before --duration" if partial else "",
        )
        meta["monitor"]["stopped_by"] = stopped_by
        if self.note:
            meta["monitor"]["writer_note"] = self.note
        self.reader.close()
        return self.store.commit_parts(self.staging, meta)


def stored_json(runs: Sequence[Run], reason: str | None = None) -> dict[str, Any]:
    """What ``monitor serve --json`` says of the runs it stored (after the context block;
    docs/schemas/monitor-serve.schema.json): per run its id, how it ended and its counts;
    ``reason`` (None when a run was stored) says why none was.
    ``samples_recorded`` is what the applications wrote to the ring while it was served:
    the samples stored plus those dropped because the ring was full; entries left from
    before the server started are counted apart (``backlog_skipped``)."""
    rows = []
    for run in runs:
        monitor = run.meta["monitor"]
        stored = int((run.meta.get("samples") or {}).get("rows", 0))
        dropped = int(monitor.get("ring_dropped", 0))
        rows.append(
            {
                "id": run.id,
                "status": run.meta.get("status"),
                "stopped_by": monitor.get("stopped_by"),
                "channel": monitor["channel"],
                "baseline": monitor.get("baseline"),
                "samples_recorded": stored + dropped,
                "samples_stored": stored,
                "samples_dropped": dropped,
                "backlog_skipped": int(monitor.get("backlog_skipped", 0)),
                "trials": len(monitor["trials"]),
            }
        )
    return {"runs": rows, "reason": reason}


def serve_loop(
    server: Server,
    duration_s: float | None,
    on_tick: Callable[[Server], None] = lambda _: None,
    on_started: Callable[[Server], None] = lambda _: None,
) -> Run | None:
    """Run until ``duration_s`` (None: until interrupted), then store the run (None: no
    writer came, nothing stored; see :meth:`Server.finish`); the server's drain thread
    (:class:`Drainer`) empties the ring meanwhile. ``on_started``
    runs once the run is staged, inside the loop's signal handling: a stop signal that
    arrives the moment the server says it serves still stores the run."""
    deadline = time.monotonic() + duration_s if duration_s else None
    try:
        # a stop is a flag the loop reads between steps, never an exception raised wherever
        # the main thread is (inside the drainer's lock it left the lock held: the drain
        # thread, and the server's join with it, waited for ever)
        with server.store.staging_lock(server.run_id), noted_stops() as stopped_by:
            server.flush()
            server.start()
            last_tick = time.monotonic()
            on_started(server)
            while stopped_by() is None and (deadline is None or time.monotonic() < deadline):
                server.step()  # waits up to DRAIN_WAIT_S for the drain thread
                if time.monotonic() - last_tick > 1.0:
                    on_tick(server)
                    last_tick = time.monotonic()
            signum = stopped_by()
            if signum is not None:
                return server.finish(signal.Signals(signum).name, partial=duration_s is not None)
            return server.finish("--duration", partial=False)
    except OSError as e:
        raise JitterlabError(f"cannot write to results store {server.store.root}: {e.strerror or e}") from e
    finally:
        if server.drainer is not None:  # an error (or a second stop) ended the loop: its thread ends with it
            server.drainer.stop()


def serve_plan(
    channel: str,
    baseline: str | None,
    listen: str,
    alpha: float,
    duration_s: float | None,
    on_started: Callable[[Server], None] = lambda _: None,
    on_tick: Callable[[Server], None] = lambda _: None,
    ring_owner: int | None = None,
    percentiles: tuple[float, ...] = (),
    native_error: float = NATIVE_ERROR,
    otlp: str | None = None,
    otlp_interval_s: float = 10.0,
) -> Plan:
    """``monitor serve`` as a plan of one point: hold the channel, classify against the
    baseline (``--baseline``, or the one the application left in the channel), serve the
    metrics endpoint, drain until ``duration_s`` or a stop signal, store the run. Stopped
    by a signal before ``duration_s`` the run is partial; with no duration a signal is the
    ordinary end. Only a ring of this user (or of ``ring_owner``) with mode 0600 is used, so
    its baseline hint comes from no one else. ``otlp``: an OTLP/HTTP receiver's URL the
    latency is pushed to every ``otlp_interval_s`` (monitor/otlp_push.py)."""
    from jitterlab.monitor.live import is_loopback, log_line
    from jitterlab.monitor.metrics import parse_listen, start_endpoint
    from jitterlab.monitor.otlp_push import OtlpPush, check_url

    check_channel(channel)
    host, port = parse_listen(listen)
    schema_for(native_error)
    if otlp is not None:
        check_url(otlp)

    def execute(ctx: Context) -> Done:
        # the parts' writer (pyarrow, and pandas through it: seconds of CPU on a busy machine)
        # is loaded now, not by the first part while writers fill the ring
        import jitterlab.store.writer  # noqa: F401

        held = ChannelLock(channel, ctx.warn)
        try:
            reference = baseline
            if not reference:  # a baseline the application left in the channel (Monitor(baseline=...))
                reader = Reader(channel, ring_owner=ring_owner)
                hint = reader.hint()
                reference = None if hint.startswith(WRITER_NOTE) else hint or None
                reader.close()
            thresholds = None
            if reference:
                run = load_run(reference, ctx.store)
                thresholds, reference = load_baseline(run.latency_ns, run.id), run.id
            else:
                ctx.warn(
                    CodedWarning(
                        "no-baseline",
                        "no --baseline: samples are stored and counted but not classified, trials not screened",
                    )
                )
            server = Server(
                channel,
                ctx.store,
                thresholds,
                reference,
                alpha,
                ring_owner=ring_owner,
                percentiles=percentiles,
                native_error=native_error,
            )
            if server.reader.owner_uid != os.geteuid():
                ctx.warn(
                    CodedWarning(
                        "ring-foreign",
                        f"used the ring of channel '{channel}' owned by {owner_name(server.reader.owner_uid)} "
                        "(--ring-owner)",
                    )
                )
            if server.backlog_skipped:
                ctx.warn(
                    CodedWarning(
                        "backlog-skipped",
                        f"left out {server.backlog_skipped} entries recorded while no server ran (an earlier session)",
                    )
                )
            if not is_loopback(host):
                everyone = (
                    "every host that can reach this machine"
                    if host in ("0.0.0.0", "::", "")
                    else f"every host that can reach {host}"
                )
                ctx.warn(
                    CodedWarning(
                        "listen-open",
                        f"--listen {listen}: the live page, its event stream and /metrics (latencies, trial "
                        f"tags, writers' pids) are readable without a password by {everyone} on port {port}",
                    )
                )
            info = {
                "channel": channel,
                "run": server.run_id,
                "baseline": reference,
                "alpha": alpha,
                "native_schema": server.state.native_schema,
                "started": server.started.isoformat(timespec="seconds"),
            }
            endpoint = start_endpoint(server.state, listen, info)
            push = OtlpPush(server.state, otlp, otlp_interval_s, info, ctx.warn, log_line) if otlp else None
            try:
                stored = serve_loop(server, duration_s, on_tick, on_started=on_started)
            finally:
                if push is not None:  # a last push: the collector gets the whole session
                    push.stop()
                endpoint.shutdown()
        finally:
            held.release()
        if stored is None:
            said = f"; the writer said: {server.note}" if server.note else ""
            return Done(
                [], interrupted=server.stopped_early, failure=NO_WRITER.format(channel=channel) + said
            )
        return Done([stored], interrupted=stored.partial)

    return Plan("monitor serve", [Point(f"monitor {channel}", execute)])

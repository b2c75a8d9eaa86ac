"""``jitterlab.Monitor``: record latencies from Python into a monitor channel.

>>> with jitterlab.Monitor("mtp", baseline="20261122-baseline") as m:   # doctest: +SKIP
...     with m.trial("cond-A/p07"):
...         m.record(latency_ns)

The recorder is the C library of native/include/jitterlab/monitor_c.h (ctypes): the same
ring and protocol as a C or C++ application. Recording never blocks; a full ring (no
``serve`` running, or one that fell behind) drops the sample and counts it.
"""

from __future__ import annotations

import ctypes
import fnmatch
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.programs import native_library

TAG_MAX = 32
SAMPLE, TRIAL_BEGIN, TRIAL_END = 0, 1, 2
# jl_monitor_event, as numpy sees it
EVENT_DTYPE = np.dtype(
    [("t_send_ns", "<i8"), ("t_recv_ns", "<i8"), ("kind", "<u4"), ("tag_len", "<u4"), ("tag", "S32")]
)
assert EVENT_DTYPE.itemsize == 56


class MonitorLibrary(Protocol):
    """The C API as Python sees it through ctypes (a typed stub; argtypes make ctypes check)."""

    def jl_monitor_open(self, channel: bytes, capacity: int, err: Any, err_len: int) -> int | None: ...
    def jl_monitor_close(self, handle: int) -> None: ...
    def jl_monitor_record(self, handle: int, latency_ns: int) -> int: ...
    def jl_monitor_span(self, handle: int, t_start_ns: int, t_end_ns: int) -> int: ...
    def jl_monitor_trial_begin(self, handle: int, tag: bytes) -> int: ...
    def jl_monitor_trial_end(self, handle: int) -> int: ...
    def jl_monitor_dropped(self, handle: int) -> int: ...
    def jl_monitor_drain(self, handle: int, out: Any, max_events: int, stale_ns: int) -> int: ...
    def jl_monitor_unlink(self, channel: bytes) -> int: ...
    def jl_monitor_set_hint(self, handle: int, hint: bytes) -> int: ...
    def jl_monitor_hint(self, handle: int, out: Any, out_size: int) -> int: ...
    def jl_monitor_now_ns(self) -> int: ...
    def jl_monitor_owner(self, handle: int, uid: Any, mode: Any) -> None: ...


@lru_cache(maxsize=1)
def library() -> MonitorLibrary:
    lib = ctypes.CDLL(str(native_library("libjitterlab_monitor.so")))
    i64, u64, p, size = ctypes.c_int64, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t
    lib.jl_monitor_open.restype = p
    lib.jl_monitor_open.argtypes = [ctypes.c_char_p, size, ctypes.c_char_p, size]
    lib.jl_monitor_close.argtypes = [p]
    for name in ("jl_monitor_record",):
        getattr(lib, name).restype = ctypes.c_int
        getattr(lib, name).argtypes = [p, i64]
    lib.jl_monitor_span.restype = ctypes.c_int
    lib.jl_monitor_span.argtypes = [p, i64, i64]
    lib.jl_monitor_trial_begin.restype = ctypes.c_int
    lib.jl_monitor_trial_begin.argtypes = [p, ctypes.c_char_p]
    lib.jl_monitor_trial_end.restype = ctypes.c_int
    lib.jl_monitor_trial_end.argtypes = [p]
    lib.jl_monitor_dropped.restype = u64
    lib.jl_monitor_dropped.argtypes = [p]
    lib.jl_monitor_drain.restype = size
    lib.jl_monitor_drain.argtypes = [p, p, size, i64]
    lib.jl_monitor_unlink.restype = ctypes.c_int
    lib.jl_monitor_unlink.argtypes = [ctypes.c_char_p]
    lib.jl_monitor_set_hint.restype = ctypes.c_int
    lib.jl_monitor_set_hint.argtypes = [p, ctypes.c_char_p]
    lib.jl_monitor_hint.restype = size
    lib.jl_monitor_hint.argtypes = [p, ctypes.c_char_p, size]
    lib.jl_monitor_now_ns.restype = i64
    lib.jl_monitor_owner.restype = None
    lib.jl_monitor_owner.argtypes = [p, ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32)]
    return cast(MonitorLibrary, lib)


RING_PREFIX = "jitterlab-monitor-"
_CHANNEL = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def check_channel(channel: str) -> str:
    """The channel's name, or one line saying what a name may hold (the C API's rule)."""
    if not _CHANNEL.match(channel):
        raise JitterlabError(f"'{channel}': a channel name is 1 to 64 letters, digits, '.', '_' or '-'")
    return channel


def _open(channel: str, capacity: int = 0, ring_owner: int | None = None) -> tuple[MonitorLibrary, int, int]:
    """The channel's ring, used only when it is this user's (or ``ring_owner``'s, a user the
    caller trusts) and no one else may read or write it (mode 0600 or narrower): another
    local user who created the ring first could otherwise feed samples into this user's run,
    drain them unseen, or set its baseline hint (issue 24 item 3)."""
    lib = library()
    err = ctypes.create_string_buffer(512)
    handle = lib.jl_monitor_open(channel.encode(), capacity, err, len(err))
    if not handle:
        raise JitterlabError(f"monitor channel '{channel}': {err.value.decode(errors='replace')}")
    uid, mode = ctypes.c_uint32(), ctypes.c_uint32()
    lib.jl_monitor_owner(handle, ctypes.byref(uid), ctypes.byref(mode))
    refusal = ring_refusal(channel, uid.value, mode.value, ring_owner)
    if refusal:
        lib.jl_monitor_close(handle)
        raise JitterlabError(refusal)
    return lib, handle, uid.value


def ring_refusal(channel: str, uid: int, mode: int, ring_owner: int | None = None) -> str | None:
    """Why a ring with this owner and mode may not be used (None when it may)."""
    from jitterlab.core.fileio import owner_name

    ring = f"/dev/shm/jitterlab-monitor-{channel}"
    if uid not in (os.geteuid(), ring_owner):
        return (
            f"monitor channel '{channel}': its ring {ring} belongs to {owner_name(uid)}, not to you: "
            f"not used (remove it: jitterlab monitor unlink --channel {channel}; or trust that user: "
            "--ring-owner USER)"
        )
    if mode & 0o077:
        return (
            f"monitor channel '{channel}': its ring {ring} has mode {mode & 0o7777:o}, readable or "
            f"writable by others: not used (remove it: jitterlab monitor unlink --channel {channel})"
        )
    return None


class Monitor:
    """The recording side of a channel. Each Monitor is one writer: a trial it marks holds
    only the samples it records itself, whatever other writers share the channel (threads
    that should keep their trials apart open a Monitor each).

    Parameters
    ----------
    channel
        Name of the channel (letters, digits, '.', '_', '-'); ``jitterlab monitor serve
        --channel NAME`` drains it.
    baseline
        A baseline run id left in the channel for ``serve`` (used when serve is started
        without ``--baseline``).
    capacity
        Entries of the ring when this call creates it (a power of two; 0: the default).
    ring_owner
        A uid besides this user's whose ring is used (a server of another user created
        it); any other user's ring, or one others may read or write, is refused.
    """

    _handle: int | None = None

    def __init__(
        self, channel: str, baseline: str | None = None, capacity: int = 0, ring_owner: int | None = None
    ) -> None:
        self._lib, self._handle, _ = _open(channel, capacity, ring_owner)
        self.channel = channel
        # bound once: a record is one ctypes call, nothing else
        self._record = self._lib.jl_monitor_record
        if baseline is not None and self._lib.jl_monitor_set_hint(self._handle, baseline.encode()) != 0:
            raise JitterlabError("baseline: a run id of at most 127 bytes")

    def record(self, latency_ns: int) -> bool:
        """A latency that ended now; False when it was dropped (ring full)."""
        return self._record(self._handle, latency_ns) == 0  # type: ignore[arg-type]

    def span(self, t_start_ns: int, t_end_ns: int) -> bool:
        """An interval measured by the caller (CLOCK_MONOTONIC ns, e.g. time.monotonic_ns())."""
        return self._lib.jl_monitor_span(self._live(), t_start_ns, t_end_ns) == 0

    @contextmanager
    def trial(self, tag: str) -> Iterator[None]:
        """Samples recorded inside belong to trial ``tag`` (at most 32 bytes)."""
        encoded = tag.encode()
        if len(encoded) > TAG_MAX:
            raise JitterlabError(f"trial tag '{tag}' is longer than {TAG_MAX} bytes")
        self._lib.jl_monitor_trial_begin(self._live(), encoded)
        try:
            yield
        finally:
            self._lib.jl_monitor_trial_end(self._live())

    @property
    def dropped(self) -> int:
        """Samples dropped on this channel because the ring was full (all writers)."""
        return int(self._lib.jl_monitor_dropped(self._live()))

    def _live(self) -> int:
        if self._handle is None:
            raise JitterlabError("the monitor is closed")
        return self._handle

    def close(self) -> None:
        if self._handle is not None:
            self._lib.jl_monitor_close(self._handle)
            self._handle = None

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


class Reader:
    """The draining side of a channel (``serve``): events in order, as a numpy array."""

    def __init__(self, channel: str, batch: int = 65_536, ring_owner: int | None = None) -> None:
        self._lib, self._handle, self.owner_uid = _open(channel, ring_owner=ring_owner)
        self.batch = batch
        self._buffer = np.zeros(batch, dtype=EVENT_DTYPE)

    def drain(self, stale_ns: int = 1_000_000_000) -> np.ndarray:
        n = self._lib.jl_monitor_drain(self._handle, self._buffer.ctypes.data, len(self._buffer), stale_ns)
        return self._buffer[:n].copy()

    def drain_into(self, out: np.ndarray, start: int, stale_ns: int = 1_000_000_000) -> int:
        """Drain straight into ``out[start:]`` (an EVENT_DTYPE array; at most ``batch``
        events): no copy on this side; the number of events."""
        room = min(len(out) - start, self.batch)
        if room <= 0:
            return 0
        address = out.ctypes.data + start * EVENT_DTYPE.itemsize
        return int(self._lib.jl_monitor_drain(self._handle, address, room, stale_ns))

    @property
    def dropped(self) -> int:
        return int(self._lib.jl_monitor_dropped(self._handle))

    def hint(self) -> str:
        out = ctypes.create_string_buffer(128)
        self._lib.jl_monitor_hint(self._handle, out, len(out))
        return out.value.decode(errors="replace")

    def close(self) -> None:
        self._lib.jl_monitor_close(self._handle)


# A hint that starts so is a writer's note for the server (the OpenXR layer's "passing every
# call through" line, docs/xr.md), not a baseline run.
WRITER_NOTE = "note:"


def writer_note(before: str, now: str) -> str | None:
    """The note a writer left in a channel's hint while it was served: ``now`` when it is a
    note and differs from the hint ``before`` (a note an earlier session left stays unsaid)."""
    return now.removeprefix(WRITER_NOTE).strip() if now.startswith(WRITER_NOTE) and now != before else None


def unlink(channel: str) -> bool:
    """Remove a channel's shared memory; False when there was none."""
    return library().jl_monitor_unlink(channel.encode()) == 0


def _mapped_rings() -> set[str]:
    """Names of the /dev/shm files some process has mapped now (/proc/PID/maps). Processes
    whose maps this user may not read cannot map this user's 0600 rings (root aside)."""
    mapped: set[str] = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text(errors="replace")
        except OSError:  # gone meanwhile, or another user's
            continue
        for line in text.splitlines():
            at = line.find("/dev/shm/" + RING_PREFIX)
            if at >= 0:
                mapped.add(line[at + len("/dev/shm/") :].removesuffix(" (deleted)"))
    return mapped


def stale_channels(pattern: str = "*") -> list[str]:
    """Channels matching ``pattern`` whose ring is this user's and mapped by no process: no
    server drains it and no application records into it (issue 24 item 13). A ring is 32 MB
    of /dev/shm by default and outlives its server on purpose (an application may still
    hold it), so these are what ``monitor unlink --stale`` removes."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        return []
    mapped = _mapped_rings()
    stale = []
    for path in sorted(shm.glob(RING_PREFIX + "*")):
        channel = path.name[len(RING_PREFIX) :]
        if channel.endswith(".serve.lock") or not _CHANNEL.match(channel):
            continue  # a server's lock file, or not a ring jitterlab made
        if not fnmatch.fnmatchcase(channel, pattern):
            continue
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and path.name not in mapped:
            stale.append(channel)
    return stale

"""``jitterlab.Injector``: the native injection engine from Python (ctypes over its C API).

The engine is the availability queue of thesis ch. 6 §7.1 (docs/model-format.md,
"Injection semantics"): push items with their arrival time, pop them when they are due.
Any Python object can be queued; the engine itself only sees a tag per item.

>>> inj = Injector("model.json", seed=1)            # doctest: +SKIP
>>> inj.push(packet)                                # arrival = now
>>> for item in inj.pop_due(): forward(item)
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, cast

from jitterlab.core.errors import JitterlabError
from jitterlab.core.programs import native_library

NEVER = 2**63 - 1


class InjectorLibrary(Protocol):
    """The C API of native/include/jitterlab/injector_c.h as Python sees it through ctypes:
    a typed stub, so mypy checks every call (the argtypes below make ctypes check them)."""

    def jl_injector_create(
        self, model_path: bytes | None, seed: int, reorder: int, capacity: int, err: Any, err_len: int
    ) -> int | None: ...
    def jl_injector_destroy(self, handle: int) -> None: ...
    def jl_injector_push(self, handle: int, arrival_ns: int, tag: int) -> int: ...
    def jl_injector_pop_due(self, handle: int, now_ns: int, tag: Any, available_ns: Any) -> int: ...
    def jl_injector_next_due(self, handle: int) -> int: ...
    def jl_injector_size(self, handle: int) -> int: ...
    def jl_injector_dropped(self, handle: int) -> int: ...
    def jl_now_ns(self) -> int: ...
    def jl_wait_until(self, t_ns: int) -> None: ...


@lru_cache(maxsize=1)
def _library() -> InjectorLibrary:
    lib = ctypes.CDLL(str(native_library("libjitterlab_inject.so")))
    i64, u64, p = ctypes.c_int64, ctypes.c_uint64, ctypes.c_void_p
    lib.jl_injector_create.restype = p
    lib.jl_injector_create.argtypes = [
        ctypes.c_char_p,
        u64,
        ctypes.c_int,
        ctypes.c_size_t,
        ctypes.c_char_p,
        ctypes.c_size_t,
    ]
    lib.jl_injector_destroy.argtypes = [p]
    lib.jl_injector_push.restype = i64
    lib.jl_injector_push.argtypes = [p, i64, u64]
    lib.jl_injector_pop_due.restype = ctypes.c_int
    lib.jl_injector_pop_due.argtypes = [p, i64, ctypes.POINTER(u64), ctypes.POINTER(i64)]
    lib.jl_injector_next_due.restype = i64
    lib.jl_injector_next_due.argtypes = [p]
    lib.jl_injector_size.restype = ctypes.c_size_t
    lib.jl_injector_size.argtypes = [p]
    lib.jl_injector_dropped.restype = u64
    lib.jl_injector_dropped.argtypes = [p]
    lib.jl_now_ns.restype = i64
    lib.jl_wait_until.argtypes = [i64]
    return cast(InjectorLibrary, lib)


def now_ns() -> int:
    """CLOCK_MONOTONIC nanoseconds, the engine's clock (same as time.monotonic_ns on Linux)."""
    return int(_library().jl_now_ns())


class Injector:
    """A bounded availability queue driven by a latency model file.

    Parameters
    ----------
    model_path
        A model file (docs/model-format.md); problems raise a one-line JitterlabError.
    seed
        Seed of the engine's generator (xoshiro256**): the same seed gives the same delays.
    reorder
        Give every item its own delay instead of releasing items in arrival order.
    capacity
        Most items held at once; a push beyond it drops the item and counts it.
    """

    _handle: int | None = None  # set once the engine exists, so __del__ after a failed create is safe

    def __init__(self, model_path: str | Path, seed: int = 0, reorder: bool = False, capacity: int = 65_536):
        lib = _library()
        err = ctypes.create_string_buffer(512)
        handle = lib.jl_injector_create(str(model_path).encode(), seed, int(reorder), capacity, err, len(err))
        if not handle:
            raise JitterlabError(err.value.decode(errors="replace"))
        self._lib = lib
        self._handle = handle
        self._items: dict[int, Any] = {}
        self._next_tag = 0

    def close(self) -> None:
        if self._handle is not None:
            self._lib.jl_injector_destroy(self._handle)
            self._handle = None
            self._items.clear()

    def __enter__(self) -> Injector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _h(self) -> int:
        if self._handle is None:
            raise JitterlabError("the injector is closed")
        return self._handle

    def push(self, item: Any = None, arrival_ns: int | None = None) -> int | None:
        """Queue ``item`` arriving at ``arrival_ns`` (default: now). Returns when it will be
        available, or None when the queue was full and the item was dropped."""
        tag = self._next_tag
        at = int(self._lib.jl_injector_push(self._h(), now_ns() if arrival_ns is None else arrival_ns, tag))
        if at < 0:
            return None
        self._items[tag] = item
        self._next_tag += 1
        return at

    def pop_due(self, now: int | None = None) -> Iterator[Any]:
        """Yield, in release order, every item due at ``now`` (default: the current time)."""
        t = now_ns() if now is None else now
        tag, at = ctypes.c_uint64(), ctypes.c_int64()
        while self._lib.jl_injector_pop_due(self._h(), t, ctypes.byref(tag), ctypes.byref(at)):
            yield self._items.pop(tag.value)

    def next_due(self) -> int | None:
        """When the next item is due (CLOCK_MONOTONIC ns), or None when the queue is empty."""
        due = int(self._lib.jl_injector_next_due(self._h()))
        return None if due == NEVER else due

    def wait(self) -> None:
        """Wait accurately (sleep, then spin) until the next item is due; returns at once when empty."""
        due = self.next_due()
        if due is not None:
            self._lib.jl_wait_until(due)

    def __len__(self) -> int:
        return int(self._lib.jl_injector_size(self._h()))

    @property
    def dropped(self) -> int:
        return int(self._lib.jl_injector_dropped(self._h()))

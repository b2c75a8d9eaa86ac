"""describe's pass kernels in C++ (native/src/stats_kernels.cpp), through ctypes.

Loops over a chunk that numpy would make into a dozen temporaries each: describe's first
pass over (t_send_ns, t_recv_ns) (window counts, exact sums, extremes, log-linear histograms
and the exact count of every latency value), its refinement pass (window category counts and
bucket counts inside given intervals), the value counts of a plain chunk of latencies, and the
summary's single pass (extremes, exact sums of x and x², value counts). Integer work only; the arrays are the caller's
and are added to in place. ctypes releases the GIL during a call, so a thread can decode the
next row group meanwhile.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from jitterlab.core.programs import native_library


class KernelRangeError(Exception):
    """A sample fell outside the ranges the caller sized its arrays for (take another path)."""


def _pointer(array: np.ndarray | None, kind: Any) -> Any:
    if array is None:
        return None
    if not array.flags.c_contiguous:
        raise ValueError("kernel arrays must be C-contiguous")
    return array.ctypes.data_as(ctypes.POINTER(kind))


@lru_cache(maxsize=1)
def _library() -> Any:
    lib = ctypes.CDLL(str(native_library("libjitterlab_stats.so")))
    i64, i32, dbl = ctypes.c_int64, ctypes.c_int32, ctypes.c_double
    p64, pd = ctypes.POINTER(i64), ctypes.POINTER(dbl)
    lib.jl_windows_first_pass.restype = ctypes.c_int
    lib.jl_windows_first_pass.argtypes = [
        p64, p64, i64, i64, i64, i64, i64, i32, i64, p64, p64, p64, p64, p64, p64, i64, p64, p64,
    ]  # fmt: skip
    lib.jl_count_values.restype = ctypes.c_int
    lib.jl_count_values.argtypes = [p64, i64, i64, p64, i64, p64, p64]
    lib.jl_summary_pass.restype = ctypes.c_int
    lib.jl_summary_pass.argtypes = [p64, p64, i64, i64, p64, i64, p64, p64, p64]
    lib.jl_windows_refine_pass.restype = ctypes.c_int
    lib.jl_windows_refine_pass.argtypes = [
        p64, p64, i64, i64, i64, i64, pd, i32, i32, dbl, p64, i32, p64, p64, p64, i64, p64,
    ]  # fmt: skip
    return lib


def available() -> bool:
    """Whether the kernel library is installed (it is, unless the C++ core was not built)."""
    try:
        _library()
    except Exception:
        return False
    return True


@dataclass(frozen=True)
class FirstSpec:
    """The first pass's plan, as every reader passes it on: windows of ``width_ns`` from
    send time ``t0``; the log-linear buckets of latencies from ``base`` with ``sub_bits``."""

    t0: int
    width_ns: int
    base: int
    sub_bits: int


def first_pass(
    send: np.ndarray,
    recv: np.ndarray,
    spec: FirstSpec,
    windows: dict[str, np.ndarray],
    dense: np.ndarray,
    beyond: np.ndarray,
) -> np.ndarray:
    """Add one chunk to the first pass planned by ``spec`` (``windows``: count, sum, lowest,
    highest per window and hist, windows × buckets); return the latencies beyond ``dense``."""
    n = send.size
    n_beyond = ctypes.c_int64(0)
    hist = windows["hist"]
    code = _library().jl_windows_first_pass(
        _pointer(send, ctypes.c_int64), _pointer(recv, ctypes.c_int64), n, spec.t0, spec.width_ns,
        windows["count"].size, spec.base, spec.sub_bits, hist.shape[1],
        *(_pointer(windows[k], ctypes.c_int64) for k in ("count", "sum", "lowest", "highest", "hist")),
        _pointer(dense, ctypes.c_int64), dense.size, _pointer(beyond, ctypes.c_int64), ctypes.byref(n_beyond),
    )  # fmt: skip
    if code != 0:
        raise KernelRangeError(f"first pass: code {code}")
    return beyond[: n_beyond.value]


def count_values(x: np.ndarray, base: int, dense: np.ndarray, beyond: np.ndarray) -> np.ndarray:
    """Add one chunk's values to ``dense`` (counts from ``base``); return those beyond it."""
    n_beyond = ctypes.c_int64(0)
    code = _library().jl_count_values(
        _pointer(x, ctypes.c_int64), x.size, base, _pointer(dense, ctypes.c_int64), dense.size,
        _pointer(beyond, ctypes.c_int64), ctypes.byref(n_beyond),
    )  # fmt: skip
    if code != 0:
        raise KernelRangeError(f"value counts: code {code}")
    return beyond[: n_beyond.value]


@dataclass(frozen=True)
class RefineSpec:
    """One refinement pass's plan, as every reader passes it on: the windows (``n_windows``
    of ``width_ns`` from send time ``t0``), the category cuts (``low``: the low cut of a
    two-sided test, else None), and per (group, window) the open value interval [a, b]
    (groups × windows) split into buckets ``step`` wide, ``nb`` buckets each."""

    t0: int
    width_ns: int
    n_windows: int
    cuts: np.ndarray
    low: float | None
    a: np.ndarray
    b: np.ndarray
    step: np.ndarray
    nb: int

    def windows(self, w: int, n: int) -> RefineSpec:
        """The plan of the ``n`` windows from window ``w`` on (a chunk's share of them)."""
        a, b, step = (np.ascontiguousarray(x[:, w : w + n]) for x in (self.a, self.b, self.step))
        t0 = self.t0 + w * self.width_ns
        return RefineSpec(t0, self.width_ns, n, self.cuts, self.low, a, b, step, self.nb)


def refine_pass(
    send: np.ndarray,
    recv: np.ndarray,
    spec: RefineSpec,
    slot_counts: np.ndarray | None,
    hist: np.ndarray,
) -> None:
    """Add one chunk to a refinement pass planned by ``spec``: ``slot_counts`` (windows ×
    slots, or None) and ``hist`` (groups × windows × nb) of the values inside [a, b] of each
    (group, window)."""
    k = spec
    code = _library().jl_windows_refine_pass(
        _pointer(send, ctypes.c_int64), _pointer(recv, ctypes.c_int64), send.size, k.t0, k.width_ns,
        k.n_windows, _pointer(k.cuts, ctypes.c_double), k.cuts.size, int(k.low is not None),
        float(k.low or 0.0), _pointer(slot_counts, ctypes.c_int64), k.a.shape[0],
        _pointer(k.a, ctypes.c_int64), _pointer(k.b, ctypes.c_int64), _pointer(k.step, ctypes.c_int64),
        hist.shape[-1], _pointer(hist, ctypes.c_int64),
    )  # fmt: skip
    if code != 0:
        raise KernelRangeError(f"refinement pass: code {code}")


_WORD = 1 << 64


def summary_pass(
    a: np.ndarray | None,
    b: np.ndarray,
    base: int = 0,
    dense: np.ndarray | None = None,
    beyond: np.ndarray | None = None,
) -> tuple[int, int, int, int, np.ndarray | None]:
    """(min, max, Σx, Σx², values beyond ``dense``) of one non-empty chunk x = b − a (x = b
    when ``a`` is None), the sums exact; with ``dense`` and ``beyond``, every value is also
    counted in ``dense`` from ``base`` or returned among those beyond it (either side)."""
    n_beyond = ctypes.c_int64(0)
    moments = np.zeros(6, np.int64)
    code = _library().jl_summary_pass(
        _pointer(a, ctypes.c_int64), _pointer(b, ctypes.c_int64), b.size, base,
        _pointer(dense, ctypes.c_int64), 0 if dense is None else dense.size,
        _pointer(beyond, ctypes.c_int64), ctypes.byref(n_beyond), _pointer(moments, ctypes.c_int64),
    )  # fmt: skip
    if code != 0:
        raise KernelRangeError(f"summary pass: code {code}")
    w = [int(v) % _WORD for v in moments[2:]]  # the words as unsigned
    total = w[0] * _WORD + w[1]
    total -= (1 << 128) if total >= 1 << 127 else 0  # two's complement, 128 bits
    squares = w[2] * _WORD + w[3]
    return (
        int(moments[0]),
        int(moments[1]),
        total,
        squares,
        None if beyond is None else beyond[: n_beyond.value],
    )

"""Intervals between consecutive events of each stream (pure)."""

from __future__ import annotations

import numpy as np


def stream_intervals(stream: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Time from each event to the next event of the same stream.

    Parameters
    ----------
    stream
        Which stream each event belongs to (for replication: observer and avatar).
    t
        When each event happened, in any order.

    Returns
    -------
    numpy.ndarray
        The differences of consecutive times within each stream, streams one after another;
        a stream of k events gives k - 1 intervals.
    """
    order = np.lexsort((t, stream))
    s, ordered = np.asarray(stream)[order], np.asarray(t)[order]
    intervals: np.ndarray = np.diff(ordered)[s[1:] == s[:-1]]
    return intervals

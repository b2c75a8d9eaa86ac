"""``--from``/``--to`` of a stored run as a filter for the one reader: the
:class:`jitterlab.store.reader.Span` of the samples whose send time t satisfies
t0 + from <= t <= t0 + to, t0 being the run's first send (from the row groups' statistics of
``t_send_ns``; a row group without statistics is read for it). The reader skips a row group
whose send times miss the span and filters the others row by row, in file order, so every
analysis sees the same samples in the same order as the in-memory filter
(:func:`jitterlab.describe.analysis.time_range`) and gives the same figures.
"""

from __future__ import annotations

from jitterlab.core.errors import JitterlabError
from jitterlab.store.reader import Span, count_kept, first_send_ns
from jitterlab.store.runs import Run, verified_samples_path


def time_span(run: Run, from_s: float | None, to_s: float | None) -> Span | None:
    """The span of ``--from``/``--to`` (seconds after the run's first send) of a sample run,
    None when neither is given; refused in one line when it holds no sample."""
    if from_s is None and to_s is None:
        return None
    path = verified_samples_path(run)
    t0 = first_send_ns(path) or 0
    span = Span(
        t0 + round(from_s * 1e9) if from_s is not None else None,
        t0 + round(to_s * 1e9) if to_s is not None else None,
    )
    if count_kept(path, span) == 0:
        raise no_samples_sent(run, from_s, to_s)
    return span


def no_samples_sent(run: Run, from_s: float | None, to_s: float | None) -> JitterlabError:
    """The one-line refusal of a ``--from``/``--to`` that keeps no sample of ``run``: both
    ends as given (``:g``), "the start" and "the end" for the one not given."""
    start = "the start" if from_s is None else f"{from_s:g} s"
    end = "the end" if to_s is None else f"{to_s:g} s"
    return JitterlabError(f"run {run.id}: no samples sent between {start} and {end}")

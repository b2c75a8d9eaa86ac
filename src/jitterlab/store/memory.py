"""The memory policy, one rule for every command: how much an analysis that holds a whole
run may take (``$JITTERLAB_MEMORY_LIMIT_MB``, else MemAvailable: :func:`memory_bound_bytes`),
whether a run of so many samples fits it (:func:`fits_in_memory`), whether it is worth
holding rather than streaming (:func:`hold_in_memory`: compare, report and paper), and the
one-line refusal before a whole run that would not fit is read (a model build --kde
refuses by :func:`fits_in_memory` too, at its own bytes per sample). No other module sets its own threshold
(tests/store/test_memory_rule.py)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jitterlab.store.run import Run

from jitterlab.core.errors import JitterlabError

# Memory an analysis that holds a whole run takes per sample: the four columns (28 B), the
# latency array, its sorted copy and the test's temporaries (describe --test gesd of 10^8
# samples peaked at ~7 GB: ~70 B a sample).
IN_MEMORY_BYTES_PER_SAMPLE = 80
# Samples a run may have to be held when it fits: below, reading it once and one sort beat
# the row-group passes (about 4x at the main job's sizes); above, the passes stream it
# (2^24 samples: 128 MiB as float64). The answers are the same either way.
IN_MEMORY_AT_MOST = 1 << 24


def memory_bound_bytes() -> int:
    """The memory an analysis may take to hold a run: ``$JITTERLAB_MEMORY_LIMIT_MB`` when set,
    else what the kernel says is available (MemAvailable), else no bound."""
    limit = os.environ.get("JITTERLAB_MEMORY_LIMIT_MB")
    if limit:
        try:
            return int(float(limit) * 1e6)
        except ValueError:
            raise JitterlabError(f"JITTERLAB_MEMORY_LIMIT_MB={limit!r}: not a number of megabytes") from None
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62


def stored_rows(run: Run) -> int | None:
    """The samples run.json says the run holds (None when it does not say)."""
    rows = (run.meta.get("samples") or {}).get("rows")
    return None if rows is None else int(rows)


def fits_in_memory(rows: int, bytes_per_sample: int = IN_MEMORY_BYTES_PER_SAMPLE) -> bool:
    """Whether an analysis holding ``rows`` samples at ``bytes_per_sample`` fits the bound."""
    return rows * bytes_per_sample <= memory_bound_bytes()


def why_not_held(run: Run) -> str | None:
    """Why an analysis that may either hold a run or stream it does not hold it (the rule
    that refused, as a phrase), or None when it holds it: at most :data:`IN_MEMORY_AT_MOST`
    samples that fit the bound (a run that does not say how many samples it has streams)."""
    rows = stored_rows(run)
    if rows is None:
        return "run.json does not say how many samples it holds"
    if rows > IN_MEMORY_AT_MOST:
        return f"{rows:,} samples, more than the {IN_MEMORY_AT_MOST:,} held at most"
    if not fits_in_memory(rows):
        need, bound = rows * IN_MEMORY_BYTES_PER_SAMPLE, memory_bound_bytes()
        return (
            f"{rows:,} samples take about {need / 1e6:.3g} MB, more than the {bound / 1e6:.3g} MB available"
        )
    return None


def hold_in_memory(run: Run) -> bool:
    """Whether an analysis that may either hold a run or stream it holds it
    (:func:`why_not_held` finds no reason not to)."""
    return why_not_held(run) is None


def _check_fits(run: Run, rows: int) -> None:
    """Refuse, before allocating, to hold a run whose samples would not fit (one line naming
    the bound and what streams instead): a big run never dies of memory."""
    need, bound = rows * IN_MEMORY_BYTES_PER_SAMPLE, memory_bound_bytes()
    if not fits_in_memory(rows):
        raise JitterlabError(
            f"run {run.id}: this analysis holds all {rows:,} samples in memory (about {need / 1e9:.1f} GB, "
            f"more than the {bound / 1e9:.1f} GB available); what streams instead: show, compare, export "
            "--format, model build without --kde, and describe (any --test, --from/--to, a traced run)"
        )

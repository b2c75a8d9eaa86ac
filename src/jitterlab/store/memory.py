"""The memory policy: how much an analysis that holds a whole run may take
(``$JITTERLAB_MEMORY_LIMIT_MB``, else MemAvailable), and the one-line refusal before a run
that would not fit is read."""

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


def _check_fits(run: Run, rows: int) -> None:
    """Refuse, before allocating, to hold a run whose samples would not fit (one line naming
    the bound and what streams instead): a big run never dies of memory."""
    need, bound = rows * IN_MEMORY_BYTES_PER_SAMPLE, memory_bound_bytes()
    if need > bound:
        raise JitterlabError(
            f"run {run.id}: this analysis holds all {rows:,} samples in memory (about {need / 1e9:.1f} GB, "
            f"more than the {bound / 1e9:.1f} GB available); what streams instead: show, compare, export "
            "--format, model build without --kde, and describe (any --test, --from/--to, a traced run)"
        )

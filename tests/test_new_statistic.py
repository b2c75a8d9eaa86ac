"""docs/architecture.md's "where a new thing goes: a statistic" entry, kept true (issue 37):
a toy statistic written once, exactly as the entry says (a module-level pure function of
one chunk and a fold over ``scan.map``), is available in memory, streamed from a stored
run, on a ``local:2`` cluster and with a ``--from/--to`` filter, each equal to numpy on the
same (filtered) samples; and every name the entry mentions exists."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import latency_clusters, make_run
from jitterlab.stats.scan import LocalScan, Scan
from jitterlab.stats.summary import exact_sum
from jitterlab.store.reader import LOCAL, Span, send_ranges
from jitterlab.store.runs import load_run, verified_samples_path
from jitterlab.store.span import time_span
from test_architecture_doc import defined_names

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "jitterlab"
DOC = PACKAGE.parents[1] / "docs" / "architecture.md"
THRESHOLD = 40_000  # ns


# --- the statistic, written once: count and exact sum of the samples above a threshold ---


def above_chunk(x: np.ndarray, threshold: int) -> tuple[int, int]:
    """One chunk's share: how many of its samples exceed ``threshold`` and their exact sum."""
    over = x[x > threshold]
    return int(over.size), exact_sum(over)


def above_by(scan: Scan, threshold: int) -> tuple[int, int]:
    """(count, exact sum) of the samples above ``threshold`` read by ``scan``: integer sums,
    so the same however the sample is cut."""
    count = total = 0
    for n, part in scan.map(above_chunk, threshold):
        count += n
        total += part
    return count, total


def truth(x: np.ndarray) -> tuple[int, int]:
    over = x[x > THRESHOLD]
    return int(over.size), int(over.astype(object).sum()) if over.size else 0


# --- the entry ---------------------------------------------------------------------------


def statistic_entry() -> str:
    text = DOC.read_text()
    found = re.search(r"^- \*\*A statistic\*\*:(.*?)(?=^- \*\*|^## )", text, re.S | re.M)
    assert found, "docs/architecture.md has no 'A statistic' entry under 'Where a new thing goes'"
    return found.group(1)


def test_the_entry_names_what_exists_and_this_test() -> None:
    entry = statistic_entry()
    names = set().union(*(defined_names(PACKAGE / room) for room in ("stats", "store", "cluster")))
    tokens = re.findall(r"`([^`]+)`", entry)
    # a name, or the name a call or attribute starts with (`LOCAL.latency(path)`: LOCAL)
    heads = [re.match(r"[A-Za-z_][A-Za-z0-9_]*", t) for t in tokens if not t.endswith((".py", ".md"))]
    code_names = [m.group(0) for m in heads if m and m.group(0) not in ("scan", "span", "path", "x")]
    assert {"Scan", "LocalScan", "ClusterScan", "LOCAL", "time_span"} <= set(code_names)
    assert [t for t in code_names if t not in names] == []
    for path in re.findall(r"\b([a-z_]+/[a-z_]+\.py)\b", entry):
        assert (PACKAGE / path).is_file() or (PACKAGE.parents[1] / path).is_file(), path
    assert "tests/test_new_statistic.py" in entry and "where=span" in entry


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    """A stored run of 2 row groups (2^20 rows and the rest): its path, latencies, send times."""
    store = tmp_path_factory.mktemp("new-statistic") / "store"
    x = latency_clusters(seed=37, n=1_200_000)
    run = make_run(store, x)
    assert len(send_ranges(verified_samples_path(run))) == 2
    return run.path, x, run.t_send_ns


def _span_of(path: Path, t: np.ndarray) -> tuple[Span | None, np.ndarray]:
    """``--from 2 --to 9`` of the run (seconds after its first send) and the mask it keeps."""
    span = time_span(load_run(path), 2.0, 9.0)
    keep = (t >= t.min() + 2 * 10**9) & (t <= t.min() + 9 * 10**9)
    return span, keep


def test_in_memory_streamed_and_filtered(stored: tuple[Path, np.ndarray, np.ndarray]) -> None:
    path, x, t = stored
    samples = verified_samples_path(load_run(path))
    assert above_by(LocalScan(lambda: [x]), THRESHOLD) == truth(x)  # in memory: one chunk
    assert above_by(LOCAL.latency(samples), THRESHOLD) == truth(x)  # streamed from the file
    span, keep = _span_of(path, t)
    assert 0 < keep.sum() < x.size
    assert above_by(LOCAL.latency(samples, where=span), THRESHOLD) == truth(x[keep])


@pytest.mark.slow
def test_on_a_cluster_and_filtered_there(stored: tuple[Path, np.ndarray, np.ndarray]) -> None:
    pytest.importorskip("distributed", reason="the cluster extra (scripts/setup.sh installs it)")
    from jitterlab.cluster.engine import engine

    path, x, t = stored
    samples = verified_samples_path(load_run(path))
    span, keep = _span_of(path, t)
    with engine("local:2") as on_cluster:
        assert above_by(on_cluster.latency(samples), THRESHOLD) == truth(x)
        assert above_by(on_cluster.latency(samples, where=span), THRESHOLD) == truth(x[keep])

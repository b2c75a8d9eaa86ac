"""One memory rule (issue 37 item 3): what may be held in memory is decided in
store/memory.py only; compare, report, paper and model build call it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import latency_clusters, make_run, module_nodes
from jitterlab.store.memory import (
    IN_MEMORY_AT_MOST,
    IN_MEMORY_BYTES_PER_SAMPLE,
    fits_in_memory,
    hold_in_memory,
)

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "jitterlab"
RULE = "store/memory.py"  # the one module that decides


def own_rules(package: Path) -> list[str]:
    """Modules other than store/memory.py that decide for themselves what may be held: they
    compare against ``memory_bound_bytes()`` (naming the bound in a message is fine) or
    assign a size threshold named IN_MEMORY_…_AT_MOST."""
    found = []
    for relative, node in module_nodes(package, lambda relative: relative == RULE):
        if isinstance(node, ast.Compare) and any(
            isinstance(c, ast.Call) and "memory_bound_bytes" in ast.unparse(c.func) for c in ast.walk(node)
        ):
            found.append(f"{relative}:{node.lineno}: compares memory_bound_bytes")
        targets = node.targets if isinstance(node, ast.Assign) else []
        for t in targets:
            if isinstance(t, ast.Name) and t.id.startswith("IN_MEMORY") and t.id.endswith("AT_MOST"):
                found.append(f"{relative}:{node.lineno}: defines {t.id}")
    return found


def test_no_module_sets_its_own_memory_threshold() -> None:
    assert own_rules(PACKAGE) == []


def test_the_check_catches_a_threshold_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "describe").mkdir()
    (tmp_path / "describe" / "x.py").write_text(
        "IN_MEMORY_AT_MOST = 1 << 20\ndef f(rows):\n    return rows * 80 <= memory_bound_bytes()\n"
    )
    assert own_rules(tmp_path) == [
        "describe/x.py:1: defines IN_MEMORY_AT_MOST",
        "describe/x.py:3: compares memory_bound_bytes",
    ]


def test_the_rule_holds_a_small_run_and_streams_what_does_not_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make_run(tmp_path / "s", latency_clusters(5, 10_000))
    monkeypatch.setenv("JITTERLAB_MEMORY_LIMIT_MB", "100")
    assert hold_in_memory(run)
    assert fits_in_memory(10_000) and not fits_in_memory(10**8 // IN_MEMORY_BYTES_PER_SAMPLE * 2)
    monkeypatch.setenv("JITTERLAB_MEMORY_LIMIT_MB", "0.5")  # 10 000 samples take 0.8 MB
    assert not hold_in_memory(run)
    monkeypatch.setenv("JITTERLAB_MEMORY_LIMIT_MB", "1e9")
    run.meta["samples"]["rows"] = IN_MEMORY_AT_MOST + 1  # above the count: streamed, whatever fits
    assert not hold_in_memory(run)
    del run.meta["samples"]["rows"]  # not said: streamed
    assert not hold_in_memory(run)

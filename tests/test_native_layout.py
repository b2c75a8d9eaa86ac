"""Native and Java code share one way to do each chore (issue 28 item 7): one CPU-wake
(/dev/cpu_dma_latency) holder, one file-descriptor owner, one argument reader for every
native tool, and a maintained JSON library instead of a hand-written writer in C++ and Java."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NATIVE = ROOT / "native"
JAVA = ROOT / "jvm/src/main/java"


def _sources() -> list[Path]:
    return [
        p
        for p in sorted(NATIVE.rglob("*.[ch]pp"))
        if not {"tests", "fuzz"} & set(p.relative_to(NATIVE).parts)
    ]


def _holding(pattern: str) -> list[str]:
    rx = re.compile(pattern)
    return [str(p.relative_to(ROOT)) for p in _sources() if rx.search(p.read_text())]


def test_one_cpu_wake_holder() -> None:
    assert _holding(r'open\("/dev/cpu_dma_latency"') == ["native/internal/jitterlab/cpu_wake.hpp"]


def test_one_file_descriptor_owner() -> None:
    """Only UniqueFd closes a descriptor; nothing else defines an fd-owning class."""
    assert _holding(r"(?<![\w.])(::)?close\(") == ["native/internal/jitterlab/unique_fd.hpp"]
    assert _holding(r"\b(class|struct)\s+\w*Fd\b") == ["native/internal/jitterlab/unique_fd.hpp"]


def test_every_tool_reads_its_arguments_with_the_one_reader() -> None:
    """Every tool declares its options as a table read by ``tool::read_options`` (one loop, one
    usage printer, one set of error lines); no tool walks argv in a loop of its own."""
    tools = [p for p in _sources() if re.search(r"\bint main\(", p.read_text())]
    assert len(tools) >= 8, "bench, hiccup, pipeline, inject, monitor-load, repl, net agent, net impair"
    without = [
        str(p.relative_to(ROOT)) for p in tools if not re.search(r"\b(tool|t)::read_options\(", p.read_text())
    ]
    assert not without, f"tools that do not read their options with tool::read_options: {without}"
    own_loops = _holding(r"while\s*\(\s*\w+\.next\(\)\s*\)")
    assert own_loops == ["native/src/tool_util.hpp"], f"argument loops outside the reader: {own_loops}"
    by_hand = _holding(r"\bargv\[")
    assert not by_hand, f"argv indexed outside the reader: {by_hand}"


def test_json_is_written_by_libraries() -> None:
    assert not (NATIVE / "src/json.hpp").exists()
    assert not _holding(r"\bclass\s+JsonWriter\b")
    assert _holding(r"nlohmann/json\.hpp") != []
    assert not (JAVA / "dev/jitterlab/jvm/Json.java").exists()
    assert "<artifactId>jackson-core</artifactId>" in (ROOT / "jvm/pom.xml").read_text()

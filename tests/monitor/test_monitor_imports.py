"""Issue 41 item 4: no import circle among the monitor's modules (the drain loop, the
endpoints and the state they share), function-local imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import jitterlab.monitor

PACKAGE = "jitterlab.monitor"


def imports_of(path: Path) -> set[str]:
    """The monitor modules ``path`` imports anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == PACKAGE:  # from jitterlab.monitor import live
                found.update(f"{PACKAGE}.{a.name}" for a in node.names)
            elif node.module.startswith(PACKAGE + "."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(PACKAGE + "."))
    return found


def test_the_monitor_modules_import_each_other_in_no_circle() -> None:
    folder = Path(jitterlab.monitor.__file__).parent
    graph = {f"{PACKAGE}.{p.stem}": imports_of(p) for p in folder.glob("*.py") if p.stem != "__init__"}
    assert f"{PACKAGE}.server" in graph and f"{PACKAGE}.metrics" in graph

    def circle_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    return [*path, nxt]
                if nxt not in path:
                    stack.append((nxt, [*path, nxt]))
        return None

    circles = [c for m in sorted(graph) if (c := circle_from(m))]
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)

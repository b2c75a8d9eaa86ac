"""No import circle inside stats/ (issue 37): the modules' imports, function-local ones
included, form a graph without cycles, so every module can be read from the bottom up."""

from __future__ import annotations

import ast
from pathlib import Path

STATS = Path(__file__).resolve().parents[2] / "src" / "jitterlab" / "stats"


def stats_imports(path: Path) -> set[str]:
    """The stats modules ``path`` imports anywhere (module level or inside a function)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("jitterlab.stats."):
                found.add(node.module.split(".")[2])
            elif node.module == "jitterlab.stats":
                found |= {a.name for a in node.names if (STATS / f"{a.name}.py").exists()}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("jitterlab.stats.")}
    return found - {path.stem}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each module that lies on one (depth-first search)."""
    found, state = [], dict.fromkeys(graph, 0)  # 0 unseen, 1 on the path, 2 done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif state.get(nxt) == 0:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if state[node] == 0:
            visit(node, [node])
    return found


def test_the_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b", "a"]]


def test_stats_modules_import_each_other_without_a_circle() -> None:
    graph = {p.stem: stats_imports(p) for p in STATS.glob("*.py") if p.stem != "__init__"}
    assert graph["extremes"] and graph["gesd"]  # the parse sees imports at all
    assert cycles(graph) == []

"""The native include directions (issue 28 item 5): every ``#include`` of a file under ``native/``
points where docs/architecture.md → "Native include directions" allows, read from that table."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NATIVE = ROOT / "native"
DOC = ROOT / "docs" / "architecture.md"
SOURCES = (".c", ".cc", ".cpp", ".h", ".hpp")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)
SEARCH_PATH = ("include", "internal")  # target_include_directories(jitterlab_core PUBLIC include internal)


def allowed_from_doc(text: str) -> dict[str, set[str]]:
    """``{folder: folders it may include}`` from the doc's table (rows ``| `native/src/` | `native/include/`, … |``)."""
    section = text.split("## Native include directions", 1)[1].split("\n## ", 1)[0]
    rules: dict[str, set[str]] = {}
    for line in section.splitlines():
        if m := re.match(r"\|\s*`native/([a-z_]+)/`\s*\|(.*)\|\s*$", line):
            rules[m.group(1)] = set(re.findall(r"`native/([a-z_]+)/`", m.group(2)))
    return rules


def resolve(source: Path, quote: str, name: str, native: Path) -> Path | None:
    """Where the compiler finds ``name``: beside the file for "…", then the search path;
    None for a header from outside the project (system, CAF, nlohmann)."""
    candidates = [source.parent / name] if quote == '"' else []
    candidates += [native / d / name for d in SEARCH_PATH]
    for c in candidates:
        if c.is_file():
            return Path(os.path.normpath(c))
    return None


def wrong_includes(native: Path, rules: dict[str, set[str]]) -> list[str]:
    problems = []
    for path in sorted(p for p in native.rglob("*") if p.suffix in SOURCES and p.is_file()):
        relative = path.relative_to(native)
        folder = relative.parts[0]
        if folder not in rules:
            problems.append(f"{relative}: '{folder}/' has no row in the include table (docs/architecture.md)")
            continue
        text = path.read_text(errors="replace")
        for m in INCLUDE.finditer(text):
            target = resolve(path, m.group(1), m.group(2), native)
            if target is None:
                if m.group(2).startswith("jitterlab/"):
                    problems.append(
                        f"{relative}: includes {m.group(2)}, which is not in include/ or internal/"
                    )
                continue
            line = text.count("\n", 0, m.start()) + 1
            if not target.is_relative_to(native):
                problems.append(f"{relative}:{line}: includes {m.group(2)}, outside native/")
                continue
            to = target.relative_to(native).parts[0]
            if to != folder and to not in rules[folder]:
                problems.append(f"{relative}:{line}: {folder}/ includes {to}/ ({m.group(2)})")
    return problems


RULES = allowed_from_doc(DOC.read_text())


def test_the_table_covers_every_native_folder() -> None:
    folders = {p.name for p in NATIVE.iterdir() if p.is_dir() and any(p.rglob("*.[ch]pp"))}
    assert folders <= set(RULES), f"native folders with no row: {sorted(folders - set(RULES))}"
    assert RULES["include"] == set() and RULES["src"] == {"include", "internal"}


def test_native_includes_point_one_way() -> None:
    assert wrong_includes(NATIVE, RULES) == []


def test_the_check_catches_a_planted_wrong_include(tmp_path: Path) -> None:
    for name, text in {
        "include/jitterlab/api.h": "#pragma once\n",
        "internal/jitterlab/clock.hpp": '#pragma once\n#include <jitterlab/api.h>\n#include "../../src/tool_util.hpp"\n',
        "src/tool_util.hpp": '#pragma once\n#include "jitterlab/clock.hpp"\n',
        "src/runfile.cpp": '#include "jitterlab/clock.hpp"\n#include <vector>\n#include "../bench/harness.hpp"\n',
        "bench/harness.hpp": '#pragma once\n#include "../src/tool_util.hpp"\n',
        "tools/hiccup.cpp": '#include "../src/tool_util.hpp"\n\n#include "../repl/endpoint.hpp"\n',
        "repl/endpoint.hpp": "#pragma once\n",
        "tests/test_x.cpp": '#include "../bench/harness.hpp"\n#include "../repl/endpoint.hpp"\n',
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert wrong_includes(tmp_path, RULES) == [
        "internal/jitterlab/clock.hpp:3: internal/ includes src/ (../../src/tool_util.hpp)",
        "src/runfile.cpp:3: src/ includes bench/ (../bench/harness.hpp)",
        "tools/hiccup.cpp:3: tools/ includes repl/ (../repl/endpoint.hpp)",
    ]

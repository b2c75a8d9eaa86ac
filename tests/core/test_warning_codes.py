"""Warning codes are one closed set from one file (issue 27 item 14)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jitterlab.core.warnings import CODES, CodedWarning, from_stored, warning
from jitterlab.store.schema import read_harness_json

ROOT = Path(__file__).resolve().parents[2]
CONSTRUCTORS = {"CodedWarning", "warning"}


def test_generated_files_are_current() -> None:
    """The C++ header, the Java enum and the schema's enum match warning_codes.toml."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gen_warning_codes.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def test_every_language_lists_the_same_codes() -> None:
    header = (ROOT / "native/src/warning_codes.hpp").read_text()
    java = (ROOT / "jvm/src/main/java/dev/jitterlab/jvm/WarningCode.java").read_text()
    schema = json.loads((ROOT / "src/jitterlab/store/schemas/harness.schema.json").read_text())
    enum = schema["properties"]["warnings"]["items"]["properties"]["code"]["enum"]
    assert enum == list(CODES)
    assert re.findall(r'^    "([a-z0-9-]+)",$', header, re.M) == list(CODES)
    assert re.findall(r'^    [A-Z0-9_]+\("([a-z0-9-]+)"\)', java, re.M) == list(CODES)


def _python_codes() -> list[tuple[str, int, str]]:
    """Every literal code in src/: ``{"code": "x", ...}`` and ``CodedWarning("x", ...)`` /
    ``warning("x", ...)``."""
    found = []
    for path in sorted((ROOT / "src/jitterlab").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "code"
                        and isinstance(value, ast.Constant)
                        and isinstance(value.value, str)
                    ):
                        found.append((str(path.relative_to(ROOT)), node.lineno, value.value))
            elif isinstance(node, ast.Call) and node.args:
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                first = node.args[0]
                if name in CONSTRUCTORS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.append((str(path.relative_to(ROOT)), node.lineno, first.value))
    return found


def test_python_uses_only_codes_of_the_set() -> None:
    found = _python_codes()
    assert len(found) > 20, "the scan finds the codes the sources use"
    unknown = [f"{where}:{line}: {code}" for where, line, code in found if code not in CODES]
    assert not unknown, "codes not in core/warning_codes.toml: " + ", ".join(unknown)


def test_the_scan_catches_a_code_outside_the_set(tmp_path: Path) -> None:
    planted = ast.parse('w = {"code": "made-up", "detail": "x"}\nCodedWarning("also-made-up", "y")\n')
    literals = [
        n.value for n in ast.walk(planted) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]
    assert "made-up" in literals and "made-up" not in CODES and "also-made-up" not in CODES


def test_native_and_java_write_codes_through_the_generated_enums() -> None:
    """No C++ or Java source writes a warning code as a string literal of its own."""
    offenders = []
    for path in [*(ROOT / "native").rglob("*.[ch]pp"), *(ROOT / "jvm/src/main").rglob("*.java")]:
        if path.name in ("warning_codes.hpp", "WarningCode.java"):
            continue
        text = path.read_text()
        for code in CODES:
            if re.search(rf'"{re.escape(code)}"', text):
                offenders.append(f"{path.relative_to(ROOT)}: {code}")
    assert not offenders, offenders


def test_a_code_outside_the_set_is_refused() -> None:
    with pytest.raises(ValueError, match=r"not in core/warning_codes\.toml"):
        CodedWarning("made-up", "detail")
    with pytest.raises(ValueError):
        warning("made-up", "detail")
    assert warning("spin-fallback", "d") == {"code": "spin-fallback", "detail": "d"}


def _harness(code: str) -> dict[str, object]:
    return {
        "harness": "native",
        "harness_version": "9.9.9",
        "status": "complete",
        "partial_reason": "",
        "started_realtime_ns": 1,
        "t_start_ns": 1,
        "t_end_ns": 2,
        "warnings": [{"code": code, "detail": "from a newer harness"}],
    }


def test_a_new_code_never_sets_harness_json_aside(tmp_path: Path) -> None:
    """A run is never marked partial because a warning is new: the harness.json of a newer
    tool with a code this jitterlab does not know is read whole, the code kept as written."""
    path = tmp_path / "harness.json"
    path.write_text(json.dumps(_harness("a-code-from-the-future")))
    doc, set_aside = read_harness_json(path)
    assert set_aside == ""
    assert doc["warnings"] == [{"code": "a-code-from-the-future", "detail": "from a newer harness"}]
    shown = from_stored(doc["warnings"][0])
    assert shown.code == "unclassified" and "a-code-from-the-future" in shown.detail
    # other schema violations still set the file aside
    bad = _harness("spin-fallback") | {"status": "finished"}
    path.write_text(json.dumps(bad))
    assert read_harness_json(path)[1].startswith("harness.json does not match its schema at status")

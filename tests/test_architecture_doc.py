"""docs/architecture.md is the first page and must stay true: rooms, modules and names it lists exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from test_architecture import ALLOWED, PACKAGE

DOC = PACKAGE.parents[1] / "docs" / "architecture.md"


def room_rows(text: str) -> dict[str, str]:
    """The rooms table: ``{room: the row's text}``, from rows that start with a room's name."""
    rows = {}
    for line in text.splitlines():
        if m := re.match(r"\|\s*`([a-z_]+)/`\s*\|(.*)", line):
            rows[m.group(1)] = m.group(2)
    return rows


def defined_names(room: Path) -> set[str]:
    """Every class, function, method and assigned name in the room's modules."""
    names: set[str] = set()
    for path in room.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def problems_of_row(room: str, row: str, package: Path) -> list[str]:
    base = package / room
    modules = {p.name for p in base.rglob("*.py")} | {p.name + "/" for p in base.rglob("*") if p.is_dir()}
    # lowercase single words may be commands (`describe`, `import`): names checked are code-shaped
    names = defined_names(base)
    found = []
    for token in re.findall(r"`([^`]+)`", row):
        if token.endswith((".py", "/")):
            # `other/module.py` names a module of another room; `module.py` or `folder/` one of this room
            exists = (package / token).exists() if token.split("/")[0] in ALLOWED else token in modules
            if not exists:
                found.append(f"{room}/: no module {token}")
        elif room == "cli" and re.fullmatch(r"[a-z_]+", token):
            if not (base / f"{token}.py").is_file():
                found.append(f"cli/: no module {token}.py")
        elif (
            re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token)
            and not (token.islower() and token.isalpha())
            and token not in names
        ):
            found.append(f"{room}/: no name {token}")
    named = {t.split("/")[-1] for t in re.findall(r"`([^`]+\.py)`", row)}
    if room == "cli":
        named |= {f"{t}.py" for t in re.findall(r"`([a-z_]+)`", row)}
    for path in sorted(base.rglob("*.py")):
        if path.name != "__init__.py" and path.name not in named:
            found.append(f"{room}/: {path.relative_to(package)} is not named in the rooms table")
    return found


def test_every_room_is_in_the_table_and_nothing_else() -> None:
    assert set(room_rows(DOC.read_text())) == set(ALLOWED)


@pytest.mark.parametrize("room", sorted(ALLOWED))
def test_every_module_and_name_of_a_room_row_exists(room: str) -> None:
    assert problems_of_row(room, room_rows(DOC.read_text())[room], PACKAGE) == []


def test_the_public_face_is_jitterlab_all() -> None:
    text = DOC.read_text()
    face = re.search(r"`jitterlab/__init__.py` is the public face: ([^.]*)\.", text)
    assert face, "docs/architecture.md no longer names the public face"
    listed = set(re.findall(r"`([A-Za-z_]+)`", face.group(1)))
    init = ast.parse((PACKAGE / "__init__.py").read_text())
    (exported,) = [
        ast.literal_eval(n.value)
        for n in init.body
        if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)
    ]
    assert listed == set(exported)


def test_the_check_catches_a_missing_module_and_name(tmp_path: Path) -> None:
    (tmp_path / "stats").mkdir()
    (tmp_path / "stats" / "summary.py").write_text("def summarize(): ...\n")
    (tmp_path / "stats" / "extra.py").write_text("")
    row = " `summary.py` (`summarize`), `gone.py`, `vanished_name` | arrays |"
    assert problems_of_row("stats", row, tmp_path) == [
        "stats/: no module gone.py",
        "stats/: no name vanished_name",
        "stats/: stats/extra.py is not named in the rooms table",
    ]

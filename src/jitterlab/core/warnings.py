"""The closed set of warnings a run or a command can carry (hyperfine's habit): each a code
that tools can reason about, with the detail a person reads and the fix.

The codes are listed once, in ``warning_codes.toml`` beside this module; the C++ header, the
Java enum and the harness.json schema are generated from it (``scripts/gen_warning_codes.py``).
Harnesses in every language write ``{"code", "detail"}`` into harness.json; the run keeps them
in ``run.json`` → ``obtained.warnings``. A code this jitterlab does not know (written by a
newer harness) is kept as written and shown with a generic fix: a new warning never makes a
run partial.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import tomllib

from jitterlab.core.errors import escape_controls


def _load() -> dict[str, dict[str, str]]:
    text = resources.files("jitterlab.core").joinpath("warning_codes.toml").read_text(encoding="utf-8")
    return {code: dict(entry) for code, entry in tomllib.loads(text).items()}


TABLE: dict[str, dict[str, str]] = _load()
# code -> what to do about it
CODES: dict[str, str] = {code: entry["fix"] for code, entry in TABLE.items()}
UNKNOWN_FIX = "a warning code this jitterlab does not know (written by a newer tool): read its detail"


@dataclass(frozen=True)
class CodedWarning:
    """One warning: a code of the closed set and the detail a person reads."""

    code: str
    detail: str

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"warning code {self.code!r} is not in core/warning_codes.toml")

    @property
    def fix(self) -> str:
        return CODES[self.code]

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "detail": self.detail}


# How rooms hand warnings to whoever prints them.
Warn = Callable[[CodedWarning], None]


def print_warning(w: CodedWarning) -> None:
    """``warning[code]: detail`` on stderr (rustc's habit: the code is what to look up)."""
    print(f"warning[{w.code}]: {escape_controls(w.detail)}", file=sys.stderr)


def warning(code: str, detail: str) -> dict[str, str]:
    """A warning as stored in run.json (``{"code", "detail"}``); raises on an unknown code."""
    return CodedWarning(code, detail).as_dict()


def fix_for(code: str) -> str:
    """The fix of ``code``, or a generic line for a code from a newer tool."""
    return CODES.get(code, UNKNOWN_FIX)


def normalized(entries: Any) -> list[dict[str, str]]:
    """Stored warnings as ``{code, detail}``: older runs stored bare strings."""
    if not isinstance(entries, list):
        return []
    out = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("detail"), str):
            out.append({"code": str(entry.get("code", "unclassified")), "detail": entry["detail"]})
        elif isinstance(entry, str):
            out.append({"code": "unclassified", "detail": entry})
    return out


def from_stored(entry: dict[str, str]) -> CodedWarning:
    """A stored ``{code, detail}`` to print: a code from a newer tool keeps its detail and is
    shown as ``unclassified`` with the original code named."""
    if entry["code"] in CODES:
        return CodedWarning(entry["code"], entry["detail"])
    return CodedWarning("unclassified", f"{entry['detail']} (code {entry['code']})")

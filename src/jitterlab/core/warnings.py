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

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitterlab.core.errors import escape_controls


@functools.cache
def table() -> dict[str, dict[str, str]]:
    """Every code with its entry (``fix``, ``detail`` …), read from warning_codes.toml on first use:
    tomllib costs ~20 ms that ``--version`` and ``--help`` need not pay (issue 28 item 3)."""
    import tomllib

    text = (Path(__file__).parent / "warning_codes.toml").read_text(encoding="utf-8")
    return {code: dict(entry) for code, entry in tomllib.loads(text).items()}


@functools.cache
def codes() -> dict[str, str]:
    """code -> what to do about it."""
    return {code: entry["fix"] for code, entry in table().items()}


def __getattr__(name: str) -> Any:
    """``TABLE`` and ``CODES``, the module's older names for :func:`table` and :func:`codes`."""
    if name == "TABLE":
        return table()
    if name == "CODES":
        return codes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


UNKNOWN_FIX = "a warning code this jitterlab does not know (written by a newer tool): read its detail"


@dataclass(frozen=True)
class CodedWarning:
    """One warning: a code of the closed set and the detail a person reads."""

    code: str
    detail: str

    def __post_init__(self) -> None:
        if self.code not in codes():
            raise ValueError(f"warning code {self.code!r} is not in core/warning_codes.toml")

    @property
    def fix(self) -> str:
        return codes()[self.code]

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
    return codes().get(code, UNKNOWN_FIX)


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
    if entry["code"] in codes():
        return CodedWarning(entry["code"], entry["detail"])
    return CodedWarning("unclassified", f"{entry['detail']} (code {entry['code']})")

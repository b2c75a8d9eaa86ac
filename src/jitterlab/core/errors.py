"""Errors the CLI turns into one-line messages with exit code 2."""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, line separators and bidi overrides: a name or cell from a file that holds one would split an error
# line or send an escape sequence to the terminal (issue 24 item 12)
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class JitterlabError(Exception):
    """Bad input or an unusable file: reported as one line, exit code 2."""


class CorruptRunError(JitterlabError):
    """A stored run whose files are truncated, damaged or inconsistent with run.json."""


def escape_controls(text: str) -> str:
    """``text`` with every control character written as a visible escape (``\\n``,
    ``\\x1b``), so text that came from outside stays on one line and inert on a terminal."""
    return _CONTROLS.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(
        char, f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    )

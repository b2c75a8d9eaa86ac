"""Errors the CLI turns into one-line messages with exit code 2."""

from __future__ import annotations


class JitterlabError(Exception):
    """Bad input or an unusable file: reported as one line, exit code 2."""


class CorruptRunError(JitterlabError):
    """A stored run whose files are truncated, damaged or inconsistent with run.json."""

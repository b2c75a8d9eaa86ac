"""The command line's choices for export (describe/options.py, light for --help) are
exactly the registered exporters (describe --test's are defined there once)."""

from __future__ import annotations

from jitterlab.describe import export, options


def test_export_formats_are_the_registered_exporters() -> None:
    assert tuple(export.EXPORTERS) == options.FORMATS

"""The command line's choices for describe and export (describe/options.py, light for
--help) are exactly the registries that compute them."""

from __future__ import annotations

from jitterlab.describe import analysis, export, options


def test_describe_tests_are_the_analysis_tests() -> None:
    assert options.TESTS == analysis.TESTS


def test_export_formats_are_the_registered_exporters() -> None:
    assert tuple(export.EXPORTERS) == options.FORMATS

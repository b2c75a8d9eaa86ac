"""The choices ``describe`` and ``export`` offer on the command line, kept apart from the
modules that compute them (numpy, pyarrow) so that the parser and ``--help`` stay light.

tests/describe/test_describe_options.py checks each against the registry it names.
"""

from __future__ import annotations

TESTS = ("stacked-z", "gesd", "walsh")  # describe --test (describe_run takes these)
FORMATS = ("hgrm", "hlog", "csv", "parquet", "otlp")  # export --format: jitterlab.describe.export.EXPORTERS

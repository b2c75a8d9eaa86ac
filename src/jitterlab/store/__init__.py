"""The run format and the results store: what every room reads and writes.

``Run`` and ``ResultsStore`` are the public face; :mod:`jitterlab.store.schema` holds the
field names and validation, :mod:`jitterlab.store.rawfile` the harnesses' raw sample file,
:mod:`jitterlab.store.ingest` turns outside files (CSV, HdrHistogram logs) into runs.
"""

from jitterlab.store.runs import ResultsStore, Run, load_run, read_run_json
from jitterlab.store.schema import RUN_JSON, SAMPLES_FILE, SCHEMA_VERSION
from jitterlab.store.staging import STAGING

__all__ = [
    "RUN_JSON",
    "SAMPLES_FILE",
    "SCHEMA_VERSION",
    "STAGING",
    "ResultsStore",
    "Run",
    "load_run",
    "read_run_json",
]

"""jitterlab: measure, describe and simulate latency jitter."""

from jitterlab._version import __version__
from jitterlab.store import ResultsStore, Run, load_run

__all__ = ["ResultsStore", "Run", "__version__", "load_run"]

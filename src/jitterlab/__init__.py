"""jitterlab: measure, describe and simulate latency jitter."""

from jitterlab.core.version import __version__
from jitterlab.monitor.recorder import Monitor
from jitterlab.simulate.injector import Injector
from jitterlab.store import ResultsStore, Run, load_run

__all__ = ["Injector", "Monitor", "ResultsStore", "Run", "__version__", "load_run"]

"""jitterlab: measure, describe and simulate latency jitter."""

from typing import TYPE_CHECKING, Any

from jitterlab.core.version import __version__

# The public names, imported on first use (PEP 562): the command line and `import jitterlab`
# do not pay for numpy, pyarrow and scipy until something needs them.
_LAZY = {
    "Injector": "jitterlab.simulate.injector",
    "Monitor": "jitterlab.monitor.recorder",
    "ResultsStore": "jitterlab.store",
    "Run": "jitterlab.store",
    "load_run": "jitterlab.store",
}


if TYPE_CHECKING:  # what type checkers and editors see
    from jitterlab.monitor.recorder import Monitor
    from jitterlab.simulate.injector import Injector
    from jitterlab.store import ResultsStore, Run, load_run


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'jitterlab' has no attribute {name!r}")


__all__ = ["Injector", "Monitor", "ResultsStore", "Run", "__version__", "load_run"]

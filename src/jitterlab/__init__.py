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
    "open_store": "jitterlab.describe.notebook",
    "compare": "jitterlab.describe.notebook",
    "Store": "jitterlab.describe.notebook",
    "Description": "jitterlab.describe.notebook",
    "Comparison": "jitterlab.describe.notebook",
}


if TYPE_CHECKING:  # what type checkers and editors see
    from jitterlab.describe.notebook import Comparison, Description, Store, compare, open_store
    from jitterlab.monitor.recorder import Monitor
    from jitterlab.simulate.injector import Injector
    from jitterlab.store import ResultsStore, Run, load_run


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'jitterlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names (tab completion in a notebook), not the imports behind them.
    (``run.describe()`` describes a run: ``jitterlab.describe`` is the describe room.)"""
    return sorted(__all__)


__all__ = [
    "Comparison",
    "Description",
    "Injector",
    "Monitor",
    "ResultsStore",
    "Run",
    "Store",
    "__version__",
    "compare",
    "load_run",
    "open_store",
]

"""The notebook face of jitterlab (issue 43 item 5): a store's runs as a DataFrame, every
run's samples as one lazy Polars frame, and the descriptions and comparisons the command line
prints, as objects that print the same text and turn into DataFrames.

>>> import jitterlab
>>> store = jitterlab.open_store("jitterlab-results")      # doctest: +SKIP
>>> store.runs()                # the `runs --json` columns, one row per run (pandas)
>>> store.scan()                # polars.LazyFrame: run_id, name, latency_ns, t_send_ns, ...
>>> run = store.run("baseline") # an id, a name, or a unique part of an id
>>> run.describe()              # what `jitterlab describe RUN` prints; .to_pandas(), .to_dict()
>>> jitterlab.compare(a, b)     # what `jitterlab compare A B` prints; .verdict, .to_pandas()

docs/python.md walks through it; tests/describe/test_notebook.py runs that page.
``Run.describe()`` (store/runs.py) comes here through :data:`jitterlab.store.runs.DESCRIBERS`,
which this module fills when imported: the store room never imports the describe room.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

    from jitterlab.describe import description
    from jitterlab.describe.compare import ComparedRuns
    from jitterlab.store import ResultsStore, Run

# the columns of `jitterlab runs --json` (describe/tables.py summary_row), in its order
RUNS_COLUMNS = ("id", "name", "label", "status", "created_utc", "count", "p50_ns", "p99_ns", "max_ns")

__all__ = ["Comparison", "Description", "Store", "compare", "describe", "open_store"]


class Store:
    """A results store opened for reading in a notebook (:func:`open_store`)."""

    def __init__(self, store: ResultsStore) -> None:
        self._store = store

    @property
    def path(self) -> Path:
        """The store's folder."""
        return self._store.root

    def __repr__(self) -> str:
        return f"<jitterlab store {str(self.path)!r}: {len(self._store.run_dirs())} runs>"

    def __len__(self) -> int:
        return len(self._store.run_dirs())

    def run(self, ref: str) -> Run:
        """One run by id, name, unique part of an id, or folder (as ``RUN`` on the command line)."""
        from jitterlab.store import load_run

        return load_run(ref, self._store)

    def runs(self, polars: bool = False) -> pd.DataFrame | pl.DataFrame:
        """The store's readable runs, oldest first, one row each with the columns of
        ``jitterlab runs --json`` (id, name, label, status, created_utc, count, p50_ns,
        p99_ns, max_ns) and technique, pairs and policy; ``polars=True``: a Polars DataFrame."""
        from jitterlab.describe.run_filter import row
        from jitterlab.describe.tables import summary_row

        runs = self._store.runs()
        rows = [summary_row(r) | {k: v for k, v in row(r).items() if k not in ("label",)} for r in runs]
        columns = [*RUNS_COLUMNS, "technique", "pairs", "policy"]
        if polars:
            import polars as pl

            return pl.DataFrame(rows, schema=columns) if rows else pl.DataFrame(schema=columns)
        import pandas as pd

        return pd.DataFrame(rows, columns=columns)

    def scan(self) -> pl.LazyFrame:
        """Every sample of every run with samples as one lazy Polars frame: ``run_id``,
        ``name``, ``latency_ns`` (t_recv_ns − t_send_ns) and the samples' columns (pair, seq,
        t_send_ns, t_recv_ns). Nothing is read until ``.collect()``; Polars reads only the
        row groups and columns the query needs. Histogram-only runs have no samples and are
        not in it."""
        import polars as pl

        from jitterlab.store.reader import empty_samples_frame, lazy_samples
        from jitterlab.store.runs import verified_samples_path

        frames = []
        for run in self._store.runs():
            if run.histogram_only:
                continue
            frames.append(lazy_samples(verified_samples_path(run), run.id, run.name))
        if not frames:
            return empty_samples_frame()
        return pl.concat(frames, how="vertical_relaxed")


def open_store(path: str | Path | None = None) -> Store:
    """Open a results store (default ``./jitterlab-results`` or ``$JITTERLAB_STORE``).

    Parameters
    ----------
    path
        The store's folder.

    Returns
    -------
    Store
        ``.runs()`` as a DataFrame, ``.scan()`` as a lazy Polars frame, ``.run(ref)``.
    """
    from jitterlab.core.errors import JitterlabError
    from jitterlab.store import ResultsStore

    store = ResultsStore(path)
    if not store.root.is_dir():
        raise JitterlabError(f"no results store at {store.root}")
    return Store(store)


@dataclass(frozen=True)
class Description:
    """What ``jitterlab describe RUN`` prints (``str()``, and in a notebook), with its JSON
    (:meth:`to_dict`, as ``describe --json``) and its summary as a DataFrame (:meth:`to_pandas`):
    the typed description :func:`jitterlab.describe.description.describe` returns
    (``.described``), rendered by the command's own renderers."""

    described: description.Description

    @property
    def text(self) -> str:
        """``jitterlab describe RUN``'s text (its notes, stderr there, left out)."""
        from jitterlab.describe.text import description_text

        return description_text(self.described)[0]

    @property
    def document(self) -> dict[str, Any]:
        """``describe RUN --json``'s document."""
        return self.described.to_json()

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        s = self.document.get("summary_ns") or self.document.get("summary") or {}
        return f"<Description of {self.document.get('id')}: {s.get('count', '?')} samples>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython shows the text
        p.text(self.text)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.document)

    def to_pandas(self) -> pd.DataFrame:
        """The summary figures, one row per figure (``figure``, ``value_ns``)."""
        import pandas as pd

        s = self.document.get("summary_ns") or self.document.get("summary") or {}
        return pd.DataFrame({"figure": list(s), "value_ns": list(s.values())})


def describe(run: Run | str, store: str | Path | None = None) -> Description:
    """``jitterlab describe RUN`` with its defaults (stacked-z test, 1 s windows), as an
    object: :func:`jitterlab.describe.description.describe`'s typed description, printed
    as the command prints it, and its JSON."""
    from jitterlab.describe.description import DescribeRequest
    from jitterlab.describe.description import describe as describe_request

    return Description(describe_request(DescribeRequest((run,), _store(store))))


@dataclass(frozen=True)
class Comparison:
    """What ``jitterlab compare A B`` prints, with its verdict, JSON and rows: the typed
    comparison :func:`jitterlab.describe.compare.compare` returns (``.compared``)."""

    compared: ComparedRuns

    @property
    def text(self) -> str:
        """``jitterlab compare A B``'s text."""
        from jitterlab.describe.compare import comparison_text

        return comparison_text(self.compared)

    @property
    def document(self) -> dict[str, Any]:
        """``compare A B --json``'s document."""
        return self.compared.to_json()

    @property
    def verdict(self) -> str:
        return str(self.compared.verdict)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        rc = self.compared.comparison
        return f"<Comparison {rc.a.id} → {rc.b.id}: {self.verdict}>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.document)

    def to_pandas(self) -> pd.DataFrame:
        """One row per percentile: the figures of ``compare --json``'s rows."""
        import pandas as pd

        rows = self.document.get("percentiles") or self.document.get("rows") or []
        return pd.DataFrame(rows)


def compare(a: Run | str, b: Run | str, noise: float = 0.05, store: str | Path | None = None) -> Comparison:
    """``jitterlab compare A B`` (B judged against A) as an object: the text the command
    prints, its verdict and its JSON."""
    from jitterlab.describe.compare import CompareRequest
    from jitterlab.describe.compare import compare as compare_request

    return Comparison(compare_request(CompareRequest(a, b, _store(store), noise)))


def _store(store: str | Path | None) -> ResultsStore:
    """The store references resolve in (None: the default one)."""
    from jitterlab.store import ResultsStore

    return ResultsStore(store)


def _register() -> None:
    from jitterlab.store import runs

    runs.DESCRIBERS["describe"] = describe


_register()

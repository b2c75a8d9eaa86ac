"""The results store: one folder per run with run.json and samples.parquet (or an
imported histogram).

Layout and fields are documented in docs/run-format.md and :mod:`jitterlab.store.schema`.
:class:`ResultsStore` is made of its three concerns, each in a module of its own: staging
folders and their locks (:mod:`jitterlab.store.staging`), writing and publishing runs
(:mod:`jitterlab.store.publish`: how samples enter the store) and listing them
(:mod:`jitterlab.store.listing`); recovering interrupted runs is :mod:`jitterlab.store.recovery`.
The names other rooms import from here (the store's constants, :class:`Run`,
:func:`verified_samples_path`, :func:`memory_bound_bytes`) are re-exported. Loading verifies
the samples file against the size, row count and SHA-256 recorded in run.json, so
truncation and corruption are named instead of silently analysed.
"""

from __future__ import annotations

from pathlib import Path

from jitterlab.store.listing import ListingStore
from jitterlab.store.memory import IN_MEMORY_BYTES_PER_SAMPLE as IN_MEMORY_BYTES_PER_SAMPLE
from jitterlab.store.memory import memory_bound_bytes as memory_bound_bytes
from jitterlab.store.publish import PublishingStore
from jitterlab.store.run import DESCRIBERS as DESCRIBERS
from jitterlab.store.run import Run as Run
from jitterlab.store.run import read_run_json as read_run_json
from jitterlab.store.verify import decode_whole as decode_whole
from jitterlab.store.verify import verified_runs as verified_runs
from jitterlab.store.verify import verified_samples_path as verified_samples_path


class ResultsStore(PublishingStore, ListingStore):
    """A folder of runs (default ``./jitterlab-results``): staging and locks
    (store/staging.py), writing and publishing (store/publish.py), listing (store/listing.py)."""


def load_run(
    path_or_id: str | Path, store: ResultsStore | Path | str | None = None, verify: bool = True
) -> Run:
    """Load a stored run by folder path, run id or unique id prefix.

    Parameters
    ----------
    path_or_id
        A run folder, its ``run.json``, an id, a name, or a unique id prefix or substring.
    store
        The results store to look ids up in (default ``./jitterlab-results`` or
        ``$JITTERLAB_STORE``).
    verify
        Check the samples file against the size and SHA-256 in run.json when first read.

    Returns
    -------
    Run
        Metadata in ``run.meta``; samples as numpy arrays (``latency_ns``, ``t_send_ns``,
        ``t_recv_ns``, ``pair``, ``seq``) or a DataFrame (``run.dataframe()``).
    """
    s = store if isinstance(store, ResultsStore) else ResultsStore(store)
    directory = s.resolve(str(path_or_id))
    return Run(directory, read_run_json(directory), verify=verify)

"""Verification of a run's samples file against run.json (size, SHA-256, rows; a file
without a checksum decoded whole), once per run object, before any statistic sees it; and
a whole run's samples read into memory once verified."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyarrow is imported where samples are touched (issue 28 item 3)
    import pyarrow as pa

    from jitterlab.store.run import Run

from jitterlab.core.errors import CorruptRunError, JitterlabError
from jitterlab.core.fileio import (
    open_plain_file,
)
from jitterlab.store.memory import _check_fits
from jitterlab.store.schema import (
    SAMPLES_FILE,
)


def verified_samples_path(run: Run) -> Path:
    """The run's samples file, checked against run.json (size, SHA-256 and row count, read
    in a stream: memory independent of the run's size); a CorruptRunError naming it otherwise.
    Checked once per run object: a second call returns the path the first one verified.

    The file is opened from the run folder without following a link, never blocking on a
    FIFO, and must be a regular file (issue 42 item 4): a ``samples.parquet`` that links to
    another run (a private one of root's) is refused, with or without a checksum."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if run.histogram_only:
        raise JitterlabError(f"run {run.id} holds a histogram only (imported); this needs raw samples")
    if run._verified is not None:
        return run._verified
    info = run.meta.get("samples") or {}
    name = str(info.get("file", SAMPLES_FILE))
    path = run.path / name
    try:
        with open_plain_file(run.path, name) as f:
            if run.verify:
                size = os.fstat(f.fileno()).st_size
                if "bytes" in info and size != info["bytes"]:
                    raise CorruptRunError(
                        f"{path}: corrupt (size {size} bytes, run.json recorded {info['bytes']}; truncated?)"
                    )
                if "sha256" in info:
                    digest = hashlib.sha256()
                    while chunk := f.read(1 << 20):
                        digest.update(chunk)
                    if digest.hexdigest() != info["sha256"]:
                        raise CorruptRunError(f"{path}: corrupt (SHA-256 differs from run.json)")
                    f.seek(0)
            try:
                rows = pq.ParquetFile(f).metadata.num_rows
            except (pa.ArrowException, OSError) as e:
                raise CorruptRunError(f"{path}: corrupt Parquet file ({e})") from e
    except FileNotFoundError:
        raise CorruptRunError(f"{path}: samples file is missing") from None
    except CorruptRunError:
        raise
    except JitterlabError as e:
        raise CorruptRunError(str(e)) from None
    if "rows" in info and rows != info["rows"]:
        raise CorruptRunError(f"{path}: {rows} rows, run.json recorded {info['rows']}")
    if run.verify and "sha256" not in info:
        decode_whole(path)  # no checksum (the schema allows it): every page decoded first
    run._verified = path
    return path


def decode_whole(path: Path) -> int:
    """Decode every page of every column of the samples file at ``path`` (one batch in
    memory at a time): what verifies a run whose run.json carries no SHA-256 before any
    figure is given (issue 42 item 11: a flipped bit was an internal error in the middle of
    an analysis). Returns the rows read; a CorruptRunError naming the file otherwise."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 0
    try:
        with pq.ParquetFile(path, pre_buffer=False) as f:
            for batch in f.iter_batches(batch_size=1 << 20):
                rows += batch.num_rows
    except (pa.ArrowException, OSError, ValueError) as e:
        raise CorruptRunError(f"{path}: corrupt Parquet file ({' '.join(str(e).split())[:200]})") from None
    return rows


def verified_runs(runs: list[Run], damaged: list[tuple[Path, str]]) -> list[Run]:
    """``runs`` whose samples match run.json's SHA-256 (a run without one: decoded whole);
    the others join ``damaged`` with the reason (issue 42 item 11)."""
    kept = []
    for run in runs:
        if not run.histogram_only:
            try:
                verified_samples_path(run)
            except CorruptRunError as e:
                damaged.append((run.path, str(e)))
                continue
        kept.append(run)
    return kept


def _read_samples(run: Run) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    _check_fits(run, int((run.meta.get("samples") or {}).get("rows") or 0))
    path = verified_samples_path(run)
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as e:
        raise CorruptRunError(f"{path}: corrupt Parquet file ({e})") from e

"""Recovery of interrupted runs, in one place: what a killed measurement left in the
store's ``.staging/`` stored as a partial run (``jitterlab recover``).

A measuring process killed outright (SIGKILL, a crash, a power cut) leaves its staging
folder behind. Which leftover is whose, and which is still held by a live writer, is the
staging side's (:meth:`ResultsStore.leftovers`); this module turns each leftover into a run:

- a killed long-running recorder (a monitor, a net run): ``run.draft.json`` and ``parts/``
  (:func:`recover_parts`, through :meth:`ResultsStore.commit_parts`);
- a killed native or JVM job: the harness's raw file, which keeps every whole record even
  without its footer, and its harness.json (through :meth:`ResultsStore.commit`);
- killed after the samples file was complete, before publish (issue 42 item 8): the file is
  the run, verified whole; killed in the instant of publish, the run.json already written
  says what it is (when it matches the samples file's rows and SHA-256 the run is published
  as described there, not described again from harness.json).

Nothing in a leftover is read through a link (:func:`check_leftover`); a damaged leftover is
one line and left in place; a full disk stops ``recover`` with one line, the leftover kept.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitterlab.core.errors import CorruptRunError, JitterlabError
from jitterlab.core.fileio import sha256_file
from jitterlab.core.warnings import CodedWarning, Warn
from jitterlab.store.rawfile import read_raw_samples
from jitterlab.store.run import Run, read_run_json
from jitterlab.store.runs import ResultsStore
from jitterlab.store.schema import SAMPLES_FILE, draft_problem, read_harness_json
from jitterlab.store.staging import DRAFT_JSON, HARNESS_FILES

# (staging, harness.json, when it started, pairs, the raw file's note, why) -> run.json
LeftoverMeta = Callable[[Path, dict[str, Any], dt.datetime, int, str, str], dict[str, Any]]


LEFTOVERS = HARNESS_FILES  # the tool's files beside its samples (kept until publish for recover)


def drop_metadata(run: Run) -> Run:
    """The harness's own files removed from a published run (run.json holds what they
    said); kept in staging until then, so recover always has them."""
    for name in LEFTOVERS:
        (run.path / name).unlink(missing_ok=True)
    return run


def recover(store: ResultsStore, warn: Warn, leftover_meta: LeftoverMeta) -> list[Run]:
    """Store what killed measurements left in ``.staging/`` as partial runs.

    A measuring process killed outright (SIGKILL, a crash, a power cut) leaves its staging
    folder behind; the harness's raw file keeps every whole record even without its footer.
    Folders with no samples are removed (nothing was recorded in them). ``leftover_meta``
    makes the run.json of a leftover from what its harness.json said (measure/jobs.py's, which
    adds the machine's environment: the store does not read the machine).
    """
    runs = []
    refused: list[tuple[Path, str]] = []
    leftovers = store.leftovers(refused)
    for _folder, why in refused:  # another user's: never read, never moved (issue 24 item 14)
        warn(CodedWarning("leftover-foreign", f"not recovered: {why}"))
    for staging in leftovers:
        try:
            recovered = _recover_one(store, staging, warn, leftover_meta)
        except (JitterlabError, CorruptRunError, OSError) as e:  # one line for this leftover; the rest go on
            full = _recover_full_disk_text(store, staging, e)
            if full is not None:  # the next leftovers would fail the same way: stop here
                raise JitterlabError(full) from None
            if isinstance(e, OSError):
                raise
            warn(CodedWarning("run-damaged", f"not recovered: {e}"))
            continue
        if recovered is not None:
            runs.append(recovered)
    return runs


def _recover_full_disk_text(store: ResultsStore, staging: Path, error: BaseException) -> str | None:
    """One line for a leftover ``recover`` could not store for want of space (issue 42 item
    10): the store, the space free and about the space its samples file needs; the leftover
    is kept as it was (what was written of its copy is removed) for a later ``recover``.
    None when ``error`` is not a full disk or a quota."""
    text = str(error).lower()
    space = (isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)) or (
        "no space left" in text or "quota exceeded" in text
    )
    if not space:
        return None
    try:
        free = shutil.disk_usage(store.root).free
    except OSError:
        free = 0
    raw = next((p for p in (staging / "samples.jlraw", staging / "samples.jlraw.tmp") if p.exists()), None)
    # the Parquet copy of a raw file is about half as large; a complete samples file needs
    # only its run.json and summary beside it
    needed = raw.stat().st_size // 2 if raw is not None else 0
    needed = max(needed, 1 << 16)
    return (
        f"no space left in results store {store.root}: {free / 1e6:.3g} MB free, about "
        f"{needed / 1e6:.3g} MB needed to recover .staging/{staging.name}, which is kept as it was "
        "(free space there, then run `jitterlab recover` again)"
    )


def _recover_one(store: ResultsStore, staging: Path, warn: Warn, leftover_meta: LeftoverMeta) -> Run | None:
    """One leftover staging folder stored as a partial run (None when nothing was in it)."""
    lock = staging.parent / f"{staging.name}.lock"
    check_leftover(staging)  # nothing in it is read through a link
    recovered = recover_parts(store, staging)  # a killed monitor: its rolling parts
    if recovered is not None:
        lock.unlink(missing_ok=True)
        return recovered
    raw_path = next(
        (p for p in (staging / "samples.jlraw", staging / "samples.jlraw.tmp") if p.exists()), None
    )
    harness_path = staging / "harness.json"
    if raw_path is None and (staging / SAMPLES_FILE).is_file():
        # killed after the samples file was complete (the raw file already removed), before
        # publish: the file is the run (issue 42 item 8)
        return _recover_samples_file(store, staging, leftover_meta)
    if raw_path is None:
        kept = sorted(p.name for p in staging.iterdir() if p.name not in LEFTOVERS)
        if kept:  # never delete what no check has proven empty: left for a person to look at
            warn(
                CodedWarning(
                    "run-damaged",
                    f"not recovered: {staging.name} holds no raw samples file but {', '.join(kept)[:200]}; left in place",
                )
            )
            return None
        warn(CodedWarning("nothing-recorded", f"{staging.name}: nothing was recorded; removed"))
        store.discard_staging(staging)
        lock.unlink(missing_ok=True)
        return None
    raw = read_raw_samples(raw_path)
    harness, _ = read_harness_json(harness_path)
    started = dt.datetime.fromtimestamp(staging.stat().st_mtime, dt.timezone.utc)
    pairs = harness.get("pairs") or max(raw.pairs_seen(), 1)
    meta = leftover_meta(staging, harness, started, int(pairs), raw.note, "")
    run = drop_metadata(store.commit(staging, raw, meta))
    lock.unlink(missing_ok=True)
    return run


def _recover_samples_file(store: ResultsStore, staging: Path, leftover_meta: LeftoverMeta) -> Run:
    """A leftover whose samples file is complete (the writer renames it into place only
    once closed) and whose raw file is gone: the file verified by reading it whole (its
    footer, then every row group for the summary) and published as the run it is, with
    what harness.json said; an unreadable one is left in place, never removed."""
    import pyarrow as pa

    from jitterlab.store.reader import UnreadableFile, decoded_facts
    from jitterlab.store.schema import SAMPLE_COLUMNS

    path = staging / SAMPLES_FILE
    try:
        rows, names, pairs = decoded_facts(path)
    except UnreadableFile as e:
        raise JitterlabError(
            f"{staging.name}: its {SAMPLES_FILE} is not readable ({e}); left in place"
        ) from None
    if list(names[: len(SAMPLE_COLUMNS)]) != list(SAMPLE_COLUMNS):
        raise JitterlabError(f"{staging.name}: its {SAMPLES_FILE} lacks the sample columns; left in place")
    described = _described_run(staging, path, rows)
    if described is not None:  # killed in the instant of publish: run.json says what it is
        meta = described
    else:
        harness, _ = read_harness_json(staging / "harness.json")
        started = dt.datetime.fromtimestamp(staging.stat().st_mtime, dt.timezone.utc)
        why = "recovered from .staging: killed after its samples file was complete, before it was published"
        meta = leftover_meta(staging, harness, started, int(harness.get("pairs") or max(pairs, 1)), "", why)
    done = _StoredFile(path, rows, tuple(names[len(SAMPLE_COLUMNS) :]))
    try:  # its summary reads it again, row group by row group (a reader the decode above is not)
        published = store.publish_samples(staging, meta, done)  # type: ignore[arg-type]
    except (OSError, ValueError, pa.ArrowException) as e:
        raise JitterlabError(
            f"{staging.name}: its {SAMPLES_FILE} is not readable ({' '.join(str(e).split())[:200]}); left in place"
        ) from None
    run = drop_metadata(published)
    (staging.parent / f"{staging.name}.lock").unlink(missing_ok=True)
    return run


def _described_run(staging: Path, samples: Path, rows: int) -> dict[str, Any] | None:
    """The run.json a publish wrote in ``staging`` before it was killed (the harness's files
    are removed once it is written), when it is valid and describes this very samples file
    (rows and SHA-256); None otherwise (recover then describes the run from harness.json)."""

    try:
        meta = read_run_json(staging)
    except (JitterlabError, CorruptRunError):
        return None
    described = meta.get("samples") or {}
    if described.get("rows") != rows or described.get("sha256") != sha256_file(samples):
        return None
    meta["id"] = staging.name
    return meta


@dataclass(frozen=True)
class _StoredFile:
    """What :meth:`ResultsStore.publish_samples` reads of a closed SampleWriter."""

    path: Path
    rows: int
    extra: tuple[str, ...]


def check_leftover(staging: Path) -> None:
    """A leftover holds only files and folders: a link (or a FIFO, a device) in it is
    refused in one line before anything is read. Root recovers leftovers of the store's
    owner; a part, raw file or draft that links to a file only root may read (another
    user's private run) would otherwise be copied into a run that owner can read."""
    for where, folders, files in os.walk(staging):
        for name in [*folders, *files]:
            st = os.lstat(os.path.join(where, name))
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                shown = os.path.relpath(os.path.join(where, name), staging)
                raise JitterlabError(
                    f"{staging.name}: {shown} is not a regular file (a link or a special file); left in place"
                )


def recover_parts(store: ResultsStore, staging: Path) -> Run | None:
    """A staging folder of a killed long-running recorder (``run.draft.json`` and
    ``parts/``) stored as a partial run; None when the folder is not one."""
    draft = staging / DRAFT_JSON
    if not draft.is_file():
        return None
    try:
        meta = json.loads(draft.read_text())
    except (OSError, ValueError) as e:
        raise JitterlabError(
            f"{staging.name}: its {DRAFT_JSON} is not readable JSON ({e}); left in place"
        ) from None
    if not isinstance(meta, dict):
        raise JitterlabError(f"{staging.name}: its {DRAFT_JSON} is not a JSON object; left in place")
    if meta.get("id") != staging.name:
        # the draft names the folder it lives in: anything else would move a run elsewhere
        raise JitterlabError(
            f"{staging.name}: its {DRAFT_JSON} names another run id ({str(meta.get('id'))[:80]!r}); left in place"
        )
    meta["status"] = "partial"
    meta["partial_reason"] = "recovered from .staging: the recording process did not finish"
    problem = draft_problem(meta)
    if problem:
        raise JitterlabError(
            f"{staging.name}: its {DRAFT_JSON} does not match the run format: {problem}; left in place"
        )
    return store.commit_parts(staging, meta)

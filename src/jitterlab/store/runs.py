"""The results store: one folder per run with run.json and samples.parquet (or an
imported histogram).

Layout and fields are documented in docs/run-format.md and :mod:`jitterlab.store.schema`.
Every run with samples enters the store along one path: a stream of chunks (pair, seq,
t_send_ns, t_recv_ns and any extra int64 columns) → :meth:`ResultsStore.commit_chunks`, which
writes them as row groups of the samples file (one chunk in memory at a time) →
:meth:`ResultsStore.publish_samples`, the one metadata builder (samples block with size, rows
and SHA-256, summary read back from the file, samples per pair) → :meth:`ResultsStore._publish`,
which writes run.json last and renames the folder into place, so a listed run is always
complete on disk. The other public entries are thin adapters that only say where the chunks
come from: :meth:`~ResultsStore.commit` (a harness's raw file), :meth:`~ResultsStore.commit_latencies`
(arrays computed in Python), :meth:`~ResultsStore.commit_parts` (a recorder's rolling parts);
a producer that writes its own samples file (merge, ingest, the JVM's several runs) hands its
closed writer to :meth:`~ResultsStore.publish_samples`. An imported HdrHistogram log has no
samples: :meth:`~ResultsStore.commit_histogram` adds its block and ends in the same
:meth:`~ResultsStore._publish`. Loading verifies the samples file against the
size, row count and SHA-256 recorded in run.json, so truncation and corruption are named
instead of silently analysed.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy, pyarrow and pandas are imported where samples are touched, so
    # that listing runs (run.json only) starts fast (issue 28 item 3)
    import numpy as np

    from jitterlab.store.rawfile import RawSamples
    from jitterlab.store.reader import Engine
    from jitterlab.store.writer import SampleWriter

from jitterlab.core.errors import CorruptRunError, JitterlabError
from jitterlab.core.fileio import (
    NOT_WORLD_WRITABLE,
    check_private_dir,
    current_umask,
    fd_path,
    fsync_dir,
    make_dir,
    open_dir_fd,
    open_file_in,
    open_lock_file,
    os_error_text,
    owner_name,
    private_dir,
    sha256_file,
    write_file,
    write_json,
)
from jitterlab.store import names
from jitterlab.store.fsops import (
    _hold_staging,
    _is_file,
    _release_staging_fd,
    _unlock,
    rename_no_replace,
)
from jitterlab.store.fsops import (
    staging_fd as staging_fd,
)
from jitterlab.store.fsops import (
    work_path as work_path,
)
from jitterlab.store.memory import IN_MEMORY_BYTES_PER_SAMPLE as IN_MEMORY_BYTES_PER_SAMPLE
from jitterlab.store.memory import memory_bound_bytes as memory_bound_bytes
from jitterlab.store.run import DESCRIBERS as DESCRIBERS
from jitterlab.store.run import Run as Run
from jitterlab.store.run import read_run_json as read_run_json
from jitterlab.store.schema import (
    HISTOGRAM_FILE,
    RUN_JSON,
    SAMPLE_COLUMNS,
    SAMPLES_FILE,
    SCHEMA_VERSION,
    safe_id_part,
    samples_per_pair,
    valid_run_id,
)
from jitterlab.store.verify import decode_whole as decode_whole
from jitterlab.store.verify import verified_runs as verified_runs
from jitterlab.store.verify import verified_samples_path as verified_samples_path

DEFAULT_STORE = "jitterlab-results"
STAGING = ".staging"
# staging folders this process claimed together with their lock (``staging_dir(lock=True)``):
# the folder's path -> the open descriptor of its flock()ed ``ID.lock``, held until the
# folder is published or discarded (or the process ends: the kernel drops the lock)
# (and the descriptor of the ``.staging`` folder it is in: the lock is removed from that)
_CLAIMED: dict[str, tuple[int, int]] = {}
# staging folders whose run is made from files not every user may read (a merge of a private
# run): published 0700, never readable by others (ResultsStore.keep_private)
_PRIVATE: set[str] = set()
PARTS_DIR = "parts"  # rolling sample parts of a long-running recorder (a monitor)
DRAFT_JSON = "run.draft.json"  # its run.json so far, for recover
# a net run's finished blocks (the agents' raw files) and the scratch files of their sort:
# a run killed before it was stored is recovered from its parts, and this folder dropped
BLOCKS_DIR = "blocks"
# what a harness writes beside its samples (run.json holds what they said): kept in staging
# for ``recover`` until run.json is written, removed before the folder is renamed into the
# store, so a kill in the instant after publish leaves none of them in the run (issue 42)
HARNESS_FILES = ("harness.json", "journal.bin")

# One chunk of samples on the way into the store: pair (an array, or one pair for all),
# seq, t_send_ns, t_recv_ns, and the extra int64 columns by name (ResultsStore.commit_chunks).
Chunk = tuple["np.ndarray | int", "np.ndarray", "np.ndarray", "np.ndarray", "dict[str, np.ndarray]"]


MAX_ID_ATTEMPTS = 1_000  # names tried for one run before giving up (each try is one taken name)


def default_store_path() -> Path:
    return Path(os.environ.get("JITTERLAB_STORE", DEFAULT_STORE))


def _id_suffix() -> str:
    """The random part of a run id: 2 bytes (a test replaces it to force ids to collide)."""
    return os.urandom(2).hex()


def id_candidates(run_id: str) -> Iterator[str]:
    """``run_id``, then, when another writer holds that name, the same id with a new random
    part appended; from the fourth try on also the try's number, so that even a random part
    that keeps repeating (2 bytes: 1 in 65 536 for two writers in one second) ends in a free
    name after as many tries as there are writers holding names."""
    yield run_id
    for attempt in range(1, MAX_ID_ATTEMPTS):
        yield f"{run_id}-{_id_suffix()}" + (f"-{attempt}" if attempt >= 3 else "")
    raise JitterlabError(f"no free run id after {MAX_ID_ATTEMPTS} tries from {run_id!r}")


def _drop_sources(run: Run) -> Run:
    """``run`` without what its samples were written from (a recorder's parts, a net run's
    blocks, its draft), removed only once it is published: a process killed at any moment
    before leaves them for ``recover`` (killed during this, the stored run is whole and keeps
    a stray folder)."""
    for name in (PARTS_DIR, BLOCKS_DIR):
        shutil.rmtree(run.path / name, ignore_errors=True)
    (run.path / DRAFT_JSON).unlink(missing_ok=True)
    return run


class ResultsStore:
    """A folder of runs (default ``./jitterlab-results``)."""

    # Set by the CLI (unless ``--trust-store-owner``): root refuses to read or write a store
    # another user owns (issue 42). The library's default keeps the earlier rule (root trusts
    # the store's owner, :meth:`trusted_uids`).
    refuse_others_as_root: bool = False

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_store_path()
        # the name the command storing runs was given (``--name``): store.names.assign
        self.name: str | None = None

    def check_owner(self) -> None:
        """Root and a store another user owns: one line naming the owner and the option that
        accepts it (when :attr:`refuse_others_as_root`). That user may plant links, FIFOs
        and swapped folders in the store while root works there; running as that user, or
        saying ``--trust-store-owner``, is the administrator's choice."""
        if not ResultsStore.refuse_others_as_root or os.geteuid() != 0:
            return
        try:
            st = os.stat(self.root)
        except OSError:
            return
        if st.st_uid != 0:
            raise JitterlabError(
                f"results store {self.root} belongs to {owner_name(st.st_uid)}: root does not use a store "
                "another user owns; run as that user, or pass --trust-store-owner to accept it"
            )

    def new_run_id(self, *parts: str) -> str:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        slug = "-".join(safe_id_part(p) for p in parts if p)
        return f"{stamp}-{slug}-{_id_suffix()}"

    def trusted_uids(self) -> set[int]:
        """Whose folders in this store are used: the invoking user's and the store owner's."""
        uids = {os.geteuid()}
        with suppress(OSError):
            uids.add(os.stat(self.root).st_uid)
        return uids

    def staging_root(self) -> Path:
        """``ROOT/.staging``, created 0700 (the store root too when missing, never
        world-writable); a store every user can write to, or a .staging folder that belongs
        to someone else or that others can write to, is refused in one line."""
        self.check_owner()
        try:
            make_dir(self.root)
        except JitterlabError as e:
            raise JitterlabError(f"cannot write to results store {self.root}: {e}") from None
        try:
            root = os.stat(self.root)
        except OSError as e:
            raise JitterlabError(f"results store {self.root}: {os_error_text(e)}") from None
        if root.st_mode & 0o002:
            raise JitterlabError(
                f"results store {self.root} is writable by every user (mode {root.st_mode & 0o7777:o}): "
                f"anyone could plant runs or drafts there; chmod o-w {self.root}"
            )
        staging = self.root / STAGING
        if not os.path.lexists(staging):
            private_dir(staging)
            self._hand_to_store_owner(staging, root)
            return staging
        st = os.lstat(staging)
        if st.st_uid == os.geteuid() and (st.st_mode & 0o7777) != 0o700 and os.path.isdir(staging):
            os.chmod(staging, 0o700, follow_symlinks=False)  # made by an earlier version
        if st.st_uid == os.geteuid() and os.path.isdir(staging):
            self._hand_to_store_owner(staging, root)  # one root made in another's store before
        check_private_dir(staging, self.trusted_uids())
        return staging

    @staticmethod
    def _hand_to_store_owner(staging: Path, root: os.stat_result) -> None:
        """Root measuring in a store another user owns gives ``.staging`` (0700) to that user:
        a root-owned one would lock the store's owner out of their own store for good (they
        could neither measure nor remove it). Root's own staging folders inside stay root's
        (0700), so the owner can neither read nor recover them, and root trusts the store's
        owner in any case (:meth:`trusted_uids`)."""
        if os.geteuid() != 0 or root.st_uid == 0:
            return
        with suppress(OSError):
            os.chown(staging, root.st_uid, root.st_gid, follow_symlinks=False)

    def staging_dir(self, run_id: str, lock: bool = False) -> Path:
        """A fresh folder (0700) for a harness to write into, named by the run's id; fails
        early with a clear message.

        The folder is claimed with ``mkdir`` (which fails when the name is taken): when
        another writer already holds ``run_id`` in staging or in the store (two writers that
        picked the same id in the same second), the next of :func:`id_candidates` is taken.
        **The run's id is the returned folder's name**, which callers use from then on.

        With ``lock``, the folder's lock (``ID.lock``, see :meth:`staging_lock`) is taken
        *before* the folder is made and held until the folder is published or discarded:
        ``recover`` never sees the folder without its live lock, so it never removes a
        writer's folder that is still empty (issue 24: the lock came after the claim)."""
        root = self.staging_root()
        try:
            root_fd = open_dir_fd(root, follow=False)  # the lock is made and removed from it
        except OSError as e:
            raise JitterlabError(f"cannot write to results store {self.root}: {os_error_text(e)}") from e
        kept = False
        try:
            for candidate in id_candidates(run_id):
                directory = root / candidate
                held = self._lock_name(root_fd, root, candidate) if lock else None
                if lock and held is None:
                    continue  # another live writer holds this id
                lock_at = (root_fd, f"{candidate}.lock")
                try:
                    os.mkdir(directory, 0o700)
                except FileExistsError:
                    _unlock(held, lock_at)
                    continue
                except OSError as e:
                    _unlock(held, lock_at)
                    raise JitterlabError(
                        f"cannot write to results store {self.root}: {os_error_text(e)}"
                    ) from e
                if os.path.lexists(self.root / candidate):  # published already: the store's name is taken
                    os.rmdir(directory)
                    _unlock(held, lock_at)
                    continue
                try:
                    _hold_staging(directory)
                except OSError as e:
                    _unlock(held, lock_at)
                    raise JitterlabError(
                        f"cannot write to results store {self.root}: {os_error_text(e)}"
                    ) from e
                if held is not None:
                    _CLAIMED[str(directory)] = (held, root_fd)
                    kept = True
                break
        finally:
            if not kept:
                os.close(root_fd)
        try:
            probe = os.open(
                directory / ".write-test", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600
            )
            os.close(probe)
            os.unlink(directory / ".write-test")
        except OSError as e:
            self.discard_if_empty(directory)
            raise JitterlabError(f"cannot write to results store {self.root}: {os_error_text(e)}") from e
        return directory

    def _lock_name(self, root_fd: int, root: Path, name: str) -> int | None:
        """``NAME.lock`` in the folder ``root_fd`` (``root``) opened (never through a link)
        and locked; None when another live process holds it."""
        try:
            fd = open_lock_file(fd_path(root_fd, f"{name}.lock"), root / f"{name}.lock")
        except OSError as e:
            raise JitterlabError(f"cannot write to results store {self.root}: {os_error_text(e)}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def release_staging(staging: Path) -> None:
        """The lock taken with ``staging_dir(lock=True)`` removed and released (the folder is
        published, discarded, or left to ``recover``); nothing for a folder claimed without."""
        _release_staging_fd(staging)
        claimed = _CLAIMED.pop(str(staging), None)
        if claimed is not None:
            fd, root_fd = claimed
            try:
                _unlock(fd, (root_fd, f"{staging.name}.lock"))
            finally:
                os.close(root_fd)

    @staticmethod
    def discard_if_empty(staging: Path) -> None:
        """Remove a staging folder in which nothing was recorded (a measurement that failed
        before its first sample); one that holds anything is kept for ``recover`` (its lock,
        if this process holds it, is released either way)."""
        with suppress(OSError):
            os.rmdir(staging)
        ResultsStore.release_staging(staging)

    @contextmanager
    def staging_lock(self, run_id: str) -> Iterator[None]:
        """Held while a run is measured and stored: :meth:`leftovers` never offers a staging
        folder whose writer is still alive (the kernel drops the lock when it dies)."""
        folder = self.staging_root() / run_id
        if str(folder) in _CLAIMED:  # taken with the folder (staging_dir(lock=True)): held already
            try:
                yield
            finally:
                self.release_staging(folder)
            return
        root = self.staging_root()
        path = root / f"{run_id}.lock"
        try:
            root_fd = open_dir_fd(root, follow=False)  # the lock is made and removed from it
        except OSError as e:
            raise JitterlabError(f"cannot write to results store {self.root}: {os_error_text(e)}") from e
        try:
            try:
                fd = open_lock_file(fd_path(root_fd, path.name), path)
            except OSError as e:
                raise JitterlabError(f"cannot write to results store {self.root}: {os_error_text(e)}") from e
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            try:
                yield
            finally:
                _unlock(fd, (root_fd, path.name))
        finally:
            os.close(root_fd)

    def leftovers(self, refused: list[tuple[Path, str]] | None = None) -> list[Path]:
        """Staging folders left by a measuring process that was killed (no live writer).
        Only folders of the invoking user or the store owner that no one else can write to
        are offered; the others go to ``refused`` with the reason.

        ``.staging`` is opened once, without following a link, and everything in it is
        looked at from that descriptor: a ``.staging`` this user may not enter (another
        user's 0700 folder) has no leftovers of theirs (issue 42 item 7), and a lock file
        that is a FIFO, a device or a link is refused without being waited on (item 6)."""
        self.check_owner()
        staging = self.root / STAGING
        try:
            staging_fd = open_dir_fd(staging, follow=False)
        except PermissionError:
            return []  # another user's staging folder: nothing in it is this user's to recover
        except OSError:
            return []  # absent, a link, not a folder
        try:
            trusted = self.trusted_uids()
            out = []
            for name in sorted(os.listdir(staging_fd)):
                try:
                    st = os.stat(name, dir_fd=staging_fd, follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    continue
                directory = staging / name
                try:
                    check_private_dir(directory, trusted, st)
                except JitterlabError as e:
                    if refused is not None:
                        refused.append((directory, str(e)))
                    continue
                live = self._held_by_a_writer(staging_fd, f"{name}.lock", staging / f"{name}.lock")
                if isinstance(live, str):
                    if refused is not None:
                        refused.append((directory, live))
                    continue
                if not live:
                    out.append(directory)
            return out
        finally:
            os.close(staging_fd)

    @staticmethod
    def _held_by_a_writer(staging_fd: int, name: str, shown: Path) -> bool | str:
        """Whether the lock file ``name`` of ``.staging`` is held by a live writer; a reason
        (str) when it is not a regular file (a FIFO is never opened to wait on a writer)."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=staging_fd)
        except FileNotFoundError:
            return False
        except OSError as e:
            return f"{shown}: {os_error_text(e)}" + (
                "; a link, not followed" if e.errno == errno.ELOOP else ""
            )
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return f"{shown}: not a regular file (a FIFO or a device); left in place"
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True  # still being written
            return False
        finally:
            os.close(fd)

    def ensure_writable(self) -> None:
        """Fail before any work when runs could not be stored."""
        self.discard_staging(self.staging_dir(self.new_run_id("write-check")))

    def commit(
        self,
        staging: Path,
        raw: RawSamples,
        meta: dict[str, Any],
        extra_columns: dict[str, np.ndarray] | None = None,
    ) -> Run:
        """Turn a harness's output into a stored run, streaming: its records become row
        groups of the samples file chunk by chunk (a raw file in ``staging`` is consumed),
        then :meth:`publish_samples`.

        ``extra_columns`` (int64, one value per sample) follow the four every run has, for
        capabilities that know more per sample; an extended raw record's own columns
        (``net``: the intended send time and the nodes) follow them the same way.
        """
        import numpy as np

        extra = extra_columns or {}
        own = raw.extra  # columns of an extended record

        def chunks() -> Iterator[Chunk]:
            start = 0
            for chunk in raw.chunks():
                end = start + len(chunk)
                columns = {name: chunk[name].astype(np.int64) for name in own}
                columns |= {name: values[start:end] for name, values in extra.items()}
                yield chunk["pair"], chunk["seq"], chunk["t_send_ns"], chunk["t_recv_ns"], columns
                start = end

        def drop_raw() -> None:
            if raw.path is not None and raw.path.parent in (staging, work_path(staging)):
                raw.path.unlink()

        return self.commit_chunks(staging, meta, chunks(), (*own, *extra), written=drop_raw)

    def commit_blocks(
        self, staging: Path, blocks: list[RawSamples], meta: dict[str, Any], rows: int | None = None
    ) -> Run:
        """Store raw files of one layout (a ``jitterlab net`` run's blocks, each as an agent
        handed it over) as one run in (pair, seq) order, streaming: an external merge sort
        (:func:`jitterlab.store.sorting.sorted_records`, ``rows`` records at a time) feeds the
        samples file, never every record at once. The run's parts, draft and ``blocks/``
        (with the sort's scratch files) are removed only once the run is published: a
        process killed before leaves them for ``recover``, so nothing recorded is lost."""
        import numpy as np

        from jitterlab.store.rawfile import CHUNK_RECORDS
        from jitterlab.store.sorting import sorted_records

        extra = blocks[0].extra if blocks else ()
        folder = staging / BLOCKS_DIR
        folder.mkdir(mode=0o700, exist_ok=True)

        def chunks() -> Iterator[Chunk]:
            for c in sorted_records(blocks, folder / "sorted", rows or CHUNK_RECORDS):
                columns = {name: c[name].astype(np.int64) for name in extra}
                yield c["pair"], c["seq"], c["t_send_ns"], c["t_recv_ns"], columns

        return _drop_sources(self.commit_chunks(staging, meta, chunks(), extra))

    def commit_latencies(
        self, meta: dict[str, Any], t_send_ns: np.ndarray, t_recv_ns: np.ndarray, partial: bool = False
    ) -> Run:
        """Store samples computed in Python (one pair, in order) as a run: what an analysis
        whose results are latencies (a video, a sensor log) writes."""
        import numpy as np

        staging = self.staging_dir(meta["id"], lock=True)
        meta["id"] = staging.name
        chunk: Chunk = (0, np.arange(len(t_recv_ns)), t_send_ns, t_recv_ns, {})
        return self.commit_chunks(staging, meta, [chunk], ())

    def commit_chunks(
        self,
        staging: Path,
        meta: dict[str, Any],
        chunks: Iterable[Chunk],
        extra: tuple[str, ...] = (),
        written: Callable[[], None] | None = None,
    ) -> Run:
        """The one way samples enter the store: each chunk of ``chunks`` becomes a row group
        of ``staging``'s samples file (columns: the four every run has, then ``extra``; one
        chunk in memory at a time), ``written`` then removes what the chunks came from (a raw
        file, parts: before the folder is published, so the run holds only its own files),
        and :meth:`publish_samples` describes the file in run.json and publishes the run."""
        from jitterlab.core.faults import kill_point
        from jitterlab.store.writer import SampleWriter

        with SampleWriter(work_path(staging) / SAMPLES_FILE, meta["id"], extra) as writer:
            for pair, seq, t_send_ns, t_recv_ns, columns in chunks:
                writer.write(pair, seq, t_send_ns, t_recv_ns, **columns)
                kill_point("committing")
        if written is not None:
            written()
        kill_point("samples-written")  # the window of issue 42 item 8: recover stores this file
        return self.publish_samples(staging, meta, writer)

    def publish_samples(
        self, staging: Path, meta: dict[str, Any], writer: SampleWriter, engine: Engine | None = None
    ) -> Run:
        """The closed samples file of ``writer`` described in run.json (rows, size, SHA-256,
        the exact summary and the intervals of its percentiles read back from it in bounded
        memory, by ``engine`` when given: a cluster's), then published."""
        return self._publish(staging, self.describe_samples(meta, writer, engine))

    def stage_described(self, staging: Path, meta: dict[str, Any], writer: SampleWriter) -> dict[str, Any]:
        """``meta`` describing the closed samples file of ``writer`` (as :meth:`publish_samples`
        does), written as run.json into ``staging`` without publishing it: a run made of
        several (a pipeline's series) stages every part so, then publishes each with
        :meth:`publish_staged`; a kill in between leaves each one ``recover`` publishes as it
        is (issue 42)."""
        described = self.describe_samples(meta, writer)
        write_json(work_path(staging) / RUN_JSON, described)
        return described

    def publish_staged(self, staging: Path, meta: dict[str, Any]) -> Run:
        """A folder :meth:`stage_described` prepared, published."""
        return self._publish(staging, meta)

    @staticmethod
    def describe_samples(
        meta: dict[str, Any], writer: SampleWriter, engine: Engine | None = None
    ) -> dict[str, Any]:
        """``meta`` with the samples block, summary and stored intervals of the closed samples
        file of ``writer``."""
        from jitterlab.store.reader import LOCAL, summary_and_table_of_file
        from jitterlab.store.writer import intervals_block, summary_block

        meta["schema_version"] = SCHEMA_VERSION
        meta["samples"] = {
            "file": writer.path.name,
            "rows": writer.rows,
            "bytes": writer.path.stat().st_size,
            "sha256": sha256_file(writer.path),
            "columns": [*SAMPLE_COLUMNS, *writer.extra],
            "clock": "CLOCK_MONOTONIC",
            "unit": "ns",
        }
        # here: the summary pass's count of every value gives the intervals' order statistics too
        summary, table = (
            summary_and_table_of_file(writer.path) if engine is None else (engine.summary(writer.path), None)
        )
        meta["summary"] = (meta.get("summary") or {}) | summary_block(summary)
        # the summary's levels with their intervals, so that show need not read the samples
        meta["summary"]["intervals"] = intervals_block(writer.path, summary, engine or LOCAL, table)
        if not isinstance(meta.get("config"), dict):  # absent, or null in a recovered draft
            meta["config"] = {}
        config = meta["config"]
        if samples_per_pair(config) is None:  # nothing was asked for (repl, net): what was recorded
            config["samples"] = writer.rows // max(int(config.get("pairs") or 1), 1)
        return meta

    def write_part(
        self, staging: Path, index: int, t_send_ns: np.ndarray, t_recv_ns: np.ndarray, first_seq: int
    ) -> None:
        """One rolling part of a long-running recording (a monitor): samples since the last
        part, written atomically to ``parts/``, so that a recorder killed at any moment
        leaves every part but the one it was writing readable."""
        import numpy as np

        n = len(t_recv_ns)
        self.write_sample_part(
            staging, index, 0, np.arange(first_seq, first_seq + n, dtype=np.int64), t_send_ns, t_recv_ns
        )

    def write_sample_part(
        self,
        staging: Path,
        index: int,
        pair: np.ndarray | int,
        seq: np.ndarray,
        t_send_ns: np.ndarray,
        t_recv_ns: np.ndarray,
        **extra: np.ndarray,
    ) -> None:
        """One part of samples with any extra int64 columns (net's nodes and intended send
        times), written atomically to ``parts/``; :meth:`commit_parts` keeps the columns."""
        from jitterlab.store.writer import SampleWriter

        parts = staging / PARTS_DIR
        if not parts.is_dir():
            os.mkdir(parts, 0o700)
        with SampleWriter(
            parts / f"part-{index:06d}.parquet", str(staging.name), extra=tuple(extra)
        ) as writer:
            writer.write(pair, seq, t_send_ns, t_recv_ns, **extra)

    def write_raw_part(self, staging: Path, index: int, data: bytes) -> None:
        """One part that is a whole raw sample file (a ``jitterlab net`` agent's block, as it
        came), written atomically to ``parts/part-NNNNNN.jlraw``; :meth:`commit_parts` reads
        it with the raw-file reader."""
        parts = staging / PARTS_DIR
        if not parts.is_dir():
            os.mkdir(parts, 0o700)
        write_file(parts / f"part-{index:06d}.jlraw", data)

    def commit_parts(self, staging: Path, meta: dict[str, Any]) -> Run:
        """The parts of ``staging`` merged, batch by batch, into the run's samples file, then
        published (memory: one batch at a time, whatever the recording's length). A part is
        a Parquet file (a monitor's) or a raw sample file as a ``jitterlab net`` agent handed
        it over (``part-NNNNNN.jlraw``), read by the raw-file reader the harnesses' path uses."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq

        from jitterlab.store.rawfile import read_raw_samples

        names, parts_fd = self._part_names(staging)

        @contextmanager
        def opened(name: str) -> Iterator[Path]:
            """The part ``name`` opened from ``parts/``'s descriptor, no link followed, owned
            by the leftover's owner; a path to that open file (``/proc/self/fd/N``)."""
            assert parts_fd is not None
            fd = open_file_in(parts_fd, name, staging / PARTS_DIR / name, {os.fstat(parts_fd).st_uid})
            try:
                yield fd_path(fd)
            finally:
                os.close(fd)

        extra: tuple[str, ...] = ()  # the first whole part's extra columns (every part has the same)
        for name in names:
            try:
                with opened(name) as part:
                    if name.endswith(".jlraw"):
                        extra = read_raw_samples(part).extra
                    else:
                        extra = tuple(n for n in pq.read_schema(part).names if n not in SAMPLE_COLUMNS)
                break
            except (pa.ArrowInvalid, OSError, CorruptRunError):
                continue

        def chunks() -> Iterator[Chunk]:
            for name in names:
                if name.endswith(".jlraw"):
                    try:
                        with opened(name) as part:
                            raw = read_raw_samples(part)
                            if raw.extra != extra:
                                continue  # not this run's layout
                            for c in raw.chunks():
                                columns = {n: c[n].astype(np.int64) for n in extra}
                                yield c["pair"], c["seq"], c["t_send_ns"], c["t_recv_ns"], columns
                    except (OSError, CorruptRunError):
                        continue  # a part cut off by a crash: the parts before it are whole
                    continue
                try:
                    with opened(name) as part, pq.ParquetFile(part, pre_buffer=False) as f:
                        batches = f.iter_batches(columns=[*SAMPLE_COLUMNS, *extra])
                        while True:  # one batch in memory at a time (issue 43 item 8)
                            try:
                                b = next(batches)
                            except StopIteration:
                                break
                            except (pa.ArrowInvalid, OSError, KeyError):
                                break  # damaged from here on: the batches before it are kept
                            pair, seq, t_send, t_recv = (b.column(i).to_numpy() for i in range(4))
                            yield (
                                pair,
                                seq,
                                t_send,
                                t_recv,
                                {n: b.column(4 + k).to_numpy() for k, n in enumerate(extra)},
                            )
                except (pa.ArrowInvalid, OSError, KeyError):
                    continue  # a part cut off by a crash: the parts before it are whole

        try:
            run = self.commit_chunks(staging, meta, chunks(), extra)
        finally:
            if parts_fd is not None:
                os.close(parts_fd)
        return _drop_sources(run)

    @staticmethod
    def _part_names(staging: Path) -> tuple[list[str], int | None]:
        """(the part files' names in order, an open descriptor of ``staging/parts``) — the
        folder opened without following a link (``O_NOFOLLOW|O_DIRECTORY``) and fstat-checked:
        it must belong to the leftover's owner, so a ``parts`` swapped for a link to (or a
        folder of) another user's leftover is refused in one line (issue 42 item 3). ([],
        None) when there is no ``parts`` folder."""
        try:
            staging_fd = open_dir_fd(staging, follow=False)
        except OSError as e:
            raise JitterlabError(f"{staging.name}: {os_error_text(e)}; left in place") from None
        try:
            owner = os.fstat(staging_fd).st_uid
            try:
                parts_fd = open_dir_fd(PARTS_DIR, dir_fd=staging_fd, follow=False)
            except FileNotFoundError:
                return [], None
            except OSError as e:
                raise JitterlabError(
                    f"{staging.name}: {PARTS_DIR} is not a folder of its own ({os_error_text(e)}; a link?); left in place"
                ) from None
        finally:
            os.close(staging_fd)
        st = os.fstat(parts_fd)
        if st.st_uid != owner:
            os.close(parts_fd)
            raise JitterlabError(
                f"{staging.name}: {PARTS_DIR} belongs to {owner_name(st.st_uid)}, not to the leftover's owner "
                f"{owner_name(owner)}; left in place"
            )
        names = sorted(
            n
            for n in os.listdir(parts_fd)
            if n.startswith("part-") and (n.endswith(".parquet") or n.endswith(".jlraw"))
        )
        return names, parts_fd

    def commit_histogram(self, staging: Path, meta: dict[str, Any]) -> Run:
        """Store the HdrHistogram log written to ``staging/histogram.hlog`` as a
        histogram-only run (``meta`` carries its ``histogram`` and ``summary`` blocks)."""
        if not (staging / HISTOGRAM_FILE).is_file():
            raise JitterlabError(f"{staging}: no {HISTOGRAM_FILE} to store")
        meta["schema_version"] = SCHEMA_VERSION
        meta["samples"] = None
        meta["histogram"] = {"file": HISTOGRAM_FILE} | meta.get("histogram", {})
        return self._publish(staging, meta)

    def amend(self, run: Run, blocks: dict[str, Any]) -> None:
        """Add facts known only after a run was stored (for example whether the load stopped
        cleanly) to its run.json, atomically."""
        run.meta |= blocks
        write_json(run.path / RUN_JSON, run.meta)

    @staticmethod
    def keep_private(staging: Path) -> None:
        """Publish the run of ``staging`` as 0700: it is made from files only some users
        may read (issue 42: a run made from files only root may read is never published
        readable by others)."""
        _PRIVATE.add(str(staging))

    @staticmethod
    def _check_still_there(staging: Path) -> None:
        """The folder at ``staging`` is the one this process made (same device and inode, no
        link): one line otherwise, and nothing renamed into the store."""
        fd = staging_fd(staging)
        if fd is None:
            return
        held = os.fstat(fd)
        try:
            now = os.lstat(staging)
        except OSError:
            now = None
        if (
            now is None
            or not stat.S_ISDIR(now.st_mode)
            or (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino)
        ):
            raise JitterlabError(
                f"{staging}: replaced while the run was made (renamed away or swapped for a link); "
                "the run was not stored, and nothing was written through what is there now"
            )

    def _publish(self, staging: Path, meta: dict[str, Any]) -> Run:
        """run.json written last, then the folder (0700 while staged) opened to readers as
        the umask allows, never world-writable, and renamed into place: the one way in.

        The rename claims the id: it never replaces anything at that name (an earlier run,
        another writer's that picked the same id in the same second, a folder anyone put
        there); a taken name gives the run the next of :func:`id_candidates` (run.json
        rewritten with it) and the rename is tried again."""
        original = meta.get("id")
        if not valid_run_id(original):
            raise JitterlabError(f"invalid run id {str(original)[:80]!r}: not stored")
        work = work_path(staging)
        if str(staging) in _PRIVATE:  # made from files others may not read: stays 0700 (issue 42)
            _PRIVATE.discard(str(staging))
            os.chmod(work, 0o700)
        else:
            os.chmod(work, 0o755 & ~current_umask() & NOT_WORLD_WRITABLE)  # still inside .staging (0700)
        names.assign(self, meta)
        from jitterlab.core.faults import kill_point

        for run_id in id_candidates(str(original)):
            meta["id"] = run_id
            write_json(work / RUN_JSON, meta)
            for name in HARNESS_FILES:  # run.json says what they said; recover reads run.json now
                (work / name).unlink(missing_ok=True)
            kill_point("publishing")
            final = self.root / run_id
            self._check_still_there(staging)
            try:
                if rename_no_replace(staging, final):
                    break
            except OSError as e:
                raise JitterlabError(f"cannot store run {run_id} in {self.root}: {os_error_text(e)}") from e
        kill_point("published")
        self.release_staging(staging)  # published: nothing of it is left in staging
        fsync_dir(self.root)
        return Run(final, meta)

    def run_dirs(self) -> list[Path]:
        """Every folder of the store that holds a run.json, or whose run.json this user may
        not even look at (another user's private folder: listed, then named damaged as
        unreadable). Dot-folders (``.staging``) are never runs."""
        self.check_owner()
        try:
            entries = list(os.scandir(self.root))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as e:
            raise JitterlabError(f"results store {self.root}: {os_error_text(e)}") from None
        out = []
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=True):
                continue
            try:
                if stat.S_ISREG(os.stat(Path(entry.path) / RUN_JSON).st_mode):
                    out.append(Path(entry.path))
            except PermissionError:
                out.append(Path(entry.path))
            except OSError:
                continue
        return sorted(out)

    def runs(self) -> list[Run]:
        """Every readable run, oldest first; damaged ones are left out (:meth:`scan` names them)."""
        return self.scan()[0]

    def scan(self) -> tuple[list[Run], list[tuple[Path, str]]]:
        """(readable runs oldest first, damaged runs with the reason): a run.json that
        cannot be read, or a data file that is missing or not the size run.json recorded
        (a cheap check: contents are verified when the samples are read)."""
        runs, damaged = [], []
        for directory in self.run_dirs():
            try:
                run = Run(directory, read_run_json(directory))
            except JitterlabError as e:
                damaged.append((directory, str(e)))
                continue
            problem = run.file_problem()
            if problem:
                damaged.append((directory, problem))
            else:
                runs.append(run)
        return sorted(runs, key=lambda r: (str(r.meta.get("created_utc", "")), r.id)), damaged

    def resolve(self, ref: str) -> Path:
        """A run folder from a path, an id, a name, or a unique id prefix or substring
        (:func:`jitterlab.store.names.resolve_reference`)."""
        self.check_owner()
        candidate = Path(ref)
        if _is_file(candidate / RUN_JSON):
            return candidate
        if candidate.name == RUN_JSON and _is_file(candidate):
            return candidate.parent
        direct = self.root / ref
        if _is_file(direct / RUN_JSON):
            return direct
        return names.resolve_reference(self, ref, self.run_dirs())

    def discard_staging(self, staging: Path) -> None:
        shutil.rmtree(staging, ignore_errors=True)
        self.release_staging(staging)


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

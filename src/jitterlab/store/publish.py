"""The results store's writing side: samples and blocks into a staging folder, then published.

Every samples file is written by :class:`~jitterlab.store.writer.SampleWriter` and described
by one metadata builder, :meth:`PublishingStore.describe_samples` (samples block with size,
rows and SHA-256, summary read back from the file, samples per pair), before
:meth:`PublishingStore._publish` writes run.json last and renames the folder into place.
Most samples enter through :meth:`~PublishingStore.commit_chunks` (row groups, one chunk in
memory at a time); :meth:`~PublishingStore.commit` (a harness's raw file),
:meth:`~PublishingStore.commit_latencies` (arrays computed in Python),
:meth:`~PublishingStore.commit_blocks` (a net run's sorted blocks) and
:meth:`~PublishingStore.commit_parts` (a recorder's rolling parts) only say where the chunks
come from; a producer that writes its own samples file (merge, ingest, recovery) hands it to
:meth:`~PublishingStore.publish_samples`, a run of several series stages each with
:meth:`~PublishingStore.stage_described`. An imported HdrHistogram log has no samples:
:meth:`~PublishingStore.commit_histogram` ends in the same :meth:`~PublishingStore._publish`.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # numpy, pyarrow and pandas are imported where samples are touched, so
    # that listing runs (run.json only) starts fast (issue 28 item 3)
    import numpy as np

    from jitterlab.store.rawfile import RawSamples
    from jitterlab.store.reader import Engine
    from jitterlab.store.runs import ResultsStore
    from jitterlab.store.writer import SampleWriter

from jitterlab.core.errors import CorruptRunError, JitterlabError
from jitterlab.core.fileio import (
    NOT_WORLD_WRITABLE,
    current_umask,
    fd_path,
    fsync_dir,
    open_dir_fd,
    open_file_in,
    os_error_text,
    owner_name,
    sha256_file,
    write_file,
    write_json,
)
from jitterlab.store import names
from jitterlab.store.fsops import (
    rename_no_replace,
    staging_fd,
    work_path,
)
from jitterlab.store.run import Run
from jitterlab.store.schema import (
    HISTOGRAM_FILE,
    RUN_JSON,
    SAMPLE_COLUMNS,
    SAMPLES_FILE,
    SCHEMA_VERSION,
    samples_per_pair,
    valid_run_id,
)
from jitterlab.store.staging import (
    BLOCKS_DIR,
    DRAFT_JSON,
    HARNESS_FILES,
    PARTS_DIR,
    StagingStore,
    id_candidates,
)

# staging folders whose run is made from files not every user may read (a merge of a private
# run): published 0700, never readable by others (ResultsStore.keep_private)
_PRIVATE: set[str] = set()

# One chunk of samples on the way into the store: pair (an array, or one pair for all),
# seq, t_send_ns, t_recv_ns, and the extra int64 columns by name (ResultsStore.commit_chunks).
Chunk = tuple["np.ndarray | int", "np.ndarray", "np.ndarray", "np.ndarray", "dict[str, np.ndarray]"]


def _drop_sources(run: Run) -> Run:
    """``run`` without what its samples were written from (a recorder's parts, a net run's
    blocks, its draft), removed only once it is published: a process killed at any moment
    before leaves them for ``recover`` (killed during this, the stored run is whole and keeps
    a stray folder)."""
    for name in (PARTS_DIR, BLOCKS_DIR):
        shutil.rmtree(run.path / name, ignore_errors=True)
    (run.path / DRAFT_JSON).unlink(missing_ok=True)
    return run


class PublishingStore(StagingStore):
    """Writing and publishing runs (part of :class:`ResultsStore`)."""

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
        names.assign(cast("ResultsStore", self), meta)  # a PublishingStore is only ever one
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

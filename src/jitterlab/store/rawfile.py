"""Reader for the raw sample files the harnesses write (see docs/run-format.md).

A raw file is a 64-byte header, 32-byte records and a 32-byte footer holding the record
count, the CRC-32 of the record bytes and a partial flag. Harnesses in every language
write it; the store ingests it into Parquet. A record may be extended (the header's record
size says which layout): ``jitterlab net`` agents hand over 56-byte records, the 32 bytes
and the intended send time, the actual send time and the two nodes.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path

import numpy as np

from jitterlab.core.errors import CorruptRunError
from jitterlab.core.fileio import write_file

# The layout is written once, in schemas/raw-samples.json; the C++ and Java writers are
# tested against the same file.
LAYOUT = json.loads(resources.files("jitterlab.store").joinpath("schemas/raw-samples.json").read_text())
RAW_MAGIC: bytes = LAYOUT["header"]["magic"].encode()
FOOTER_MAGIC: bytes = LAYOUT["footer"]["magic"].encode()
HEADER_BYTES: int = LAYOUT["header"]["bytes"]
FOOTER_BYTES: int = LAYOUT["footer"]["bytes"]
FORMAT_VERSION: int = LAYOUT["format_version"]
FLAG_PARTIAL: int = LAYOUT["flags"]["partial"]
RECORD_DTYPE = np.dtype([(name, kind) for name, kind in LAYOUT["record"]])
# the extended layouts, by record size: each begins with the 32-byte record
NET_RECORD_DTYPE = np.dtype([(name, kind) for name, kind in LAYOUT["extended_records"]["net"]])
LAYOUTS: dict[int, np.dtype] = {d.itemsize: d for d in (RECORD_DTYPE, NET_RECORD_DTYPE)}


def extra_fields(dtype: np.dtype) -> tuple[str, ...]:
    """The columns of an extended record beyond the 32-byte record's (stored as int64)."""
    base = {name for name, _ in LAYOUT["record"]}
    return tuple(name for name in dtype.names or () if name not in base)


CHUNK_RECORDS = 1 << 20  # 32 MiB of records read at a time


@dataclass(frozen=True)
class RawSamples:
    """Records of a raw file and what its footer said about them: held in memory
    (``loaded``), or read from ``path`` chunk by chunk as they are used."""

    loaded: np.ndarray | None
    partial: bool
    truncated: bool
    note: str
    path: Path | None = None
    count: int = 0  # records in the file at ``path``
    dtype: np.dtype = RECORD_DTYPE  # the layout of the file at ``path`` (``loaded`` has its own)

    @property
    def extra(self) -> tuple[str, ...]:
        """The extended record's columns beyond the four every run has (none for 32 bytes)."""
        return extra_fields(self.loaded.dtype if self.loaded is not None else self.dtype)

    @property
    def rows(self) -> int:
        return len(self.loaded) if self.loaded is not None else self.count

    @cached_property
    def records(self) -> np.ndarray:
        """Every record in memory (small runs; :meth:`chunks` streams large ones)."""
        if self.loaded is not None:
            return self.loaded
        return np.concatenate([np.zeros(0, self.dtype), *self.chunks()])

    @property
    def pair(self) -> np.ndarray:
        """Every record's pair (in memory: :attr:`records`)."""
        return np.asarray(self.records["pair"])

    @property
    def seq(self) -> np.ndarray:
        """Every record's sequence number (in memory: :attr:`records`)."""
        return np.asarray(self.records["seq"])

    @property
    def t_recv_ns(self) -> np.ndarray:
        """Every record's receive time (in memory: :attr:`records`)."""
        return np.asarray(self.records["t_recv_ns"])

    def pairs_seen(self) -> int:
        """1 + the highest pair of any record (0 for none), in one streamed pass."""
        return 1 + max((int(c["pair"].max()) for c in self.chunks() if len(c)), default=-1)

    def chunks_by_pair(self, pairs: int) -> Iterator[list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """Per chunk, (seq, t_send_ns, t_recv_ns) of each pair ``0 … pairs-1``, in order."""
        for chunk in self.chunks():
            parts = []
            for index in range(pairs):
                mine = chunk[chunk["pair"] == index]
                parts.append((mine["seq"], mine["t_send_ns"], mine["t_recv_ns"]))
            yield parts

    def chunks(self, rows: int = CHUNK_RECORDS) -> Iterator[np.ndarray]:
        """The records in order, at most ``rows`` at a time."""
        if self.loaded is not None:
            for start in range(0, len(self.loaded), rows):
                yield self.loaded[start : start + rows]
            return
        assert self.path is not None
        with open(self.path, "rb") as f:
            f.seek(HEADER_BYTES)
            left = self.count
            while left:
                chunk = np.fromfile(f, dtype=self.dtype, count=min(rows, left))
                if len(chunk) == 0:
                    raise CorruptRunError(f"{self.path}: shorter than when it was checked")
                left -= len(chunk)
                yield chunk


def read_raw_samples(path: Path) -> RawSamples:
    """Check a raw sample file (one streaming pass, no record held) and return it, its
    records read as they are used.

    A file with no footer (the writer died) is salvaged: every whole record is kept and
    the result is marked truncated and partial. A footer whose count or CRC-32 disagrees
    with the records raises.

    Raises
    ------
    CorruptRunError
        When the file is not a raw sample file or its footer does not match its records.
    """
    with open(path, "rb") as f:
        head = f.read(HEADER_BYTES)
        size = os.fstat(f.fileno()).st_size
        if len(head) < HEADER_BYTES or head[:8] != RAW_MAGIC:
            raise CorruptRunError(f"{path}: not a jitterlab raw sample file (bad header)")
        dtype = _layout(head, path)
        record_bytes = dtype.itemsize
        body = size - HEADER_BYTES
        footer = b""
        if body >= FOOTER_BYTES and (body - FOOTER_BYTES) % record_bytes == 0:
            f.seek(size - FOOTER_BYTES)
            footer = f.read(FOOTER_BYTES)
        if footer[:8] != FOOTER_MAGIC:
            whole = body // record_bytes
            note = f"raw file truncated (no footer): salvaged {whole} whole records"
            return RawSamples(
                None, partial=True, truncated=True, note=note, path=path, count=whole, dtype=dtype
            )
        count, crc, flags = struct.unpack_from("<QIxxxxQ", footer, 8)
        payload = body - FOOTER_BYTES
        f.seek(HEADER_BYTES)
        running, left = 0, payload
        while left:
            block = f.read(min(left, CHUNK_RECORDS * record_bytes))
            if not block:
                break
            running = zlib.crc32(block, running)
            left -= len(block)
    if count * record_bytes != payload or running != crc:
        raise CorruptRunError(f"{path}: footer count or CRC-32 does not match the records")
    return RawSamples(
        None,
        partial=bool(flags & FLAG_PARTIAL),
        truncated=False,
        note="",
        path=path,
        count=count,
        dtype=dtype,
    )


def _layout(head: bytes, where: Path | str) -> np.dtype:
    """The record layout a raw file's header names (its version and record size)."""
    version, record_bytes = struct.unpack_from("<II", head, 8)
    if version != FORMAT_VERSION or record_bytes not in LAYOUTS:
        raise CorruptRunError(
            f"{where}: unsupported raw format version {version} / record size {record_bytes}"
        )
    return LAYOUTS[record_bytes]


def raw_image_size(head: bytes, count: int, where: str) -> int:
    """The bytes of a whole raw file of ``count`` records whose 64-byte header is ``head``
    (what a ``jitterlab net`` agent's ``part N`` line announces)."""
    if len(head) < HEADER_BYTES or head[:8] != RAW_MAGIC:
        raise CorruptRunError(f"{where}: not a jitterlab raw sample file (bad header)")
    return HEADER_BYTES + count * _layout(head, where).itemsize + FOOTER_BYTES


def read_raw_bytes(data: bytes, where: str) -> RawSamples:
    """A whole raw file held in memory (a ``jitterlab net`` agent's ``samples``/``part``
    block) checked as :func:`read_raw_samples` checks a file: header, footer, CRC-32. A
    block cut short (the agent died while writing it) keeps its whole records, partial.

    Raises
    ------
    CorruptRunError
        When it is not a raw file or its footer does not match its records.
    """
    if len(data) < HEADER_BYTES or data[:8] != RAW_MAGIC:
        raise CorruptRunError(f"{where}: not a jitterlab raw sample file (bad header)")
    dtype = _layout(data, where)
    body = len(data) - HEADER_BYTES
    footer = (
        data[-FOOTER_BYTES:] if body >= FOOTER_BYTES and (body - FOOTER_BYTES) % dtype.itemsize == 0 else b""
    )
    if footer[:8] != FOOTER_MAGIC:
        whole = body // dtype.itemsize
        records = np.frombuffer(data, dtype, count=whole, offset=HEADER_BYTES).copy()
        note = f"raw block truncated (no footer): salvaged {whole} whole records"
        return RawSamples(records, partial=True, truncated=True, note=note, dtype=dtype)
    count, crc, flags = struct.unpack_from("<QIxxxxQ", footer, 8)
    payload = memoryview(data)[HEADER_BYTES : len(data) - FOOTER_BYTES]
    if count * dtype.itemsize != len(payload) or zlib.crc32(payload) != crc:
        raise CorruptRunError(f"{where}: footer count or CRC-32 does not match the records")
    records = np.frombuffer(payload, dtype).copy()
    return RawSamples(records, partial=bool(flags & FLAG_PARTIAL), truncated=False, note="", dtype=dtype)


def raw_bytes(records: np.ndarray, partial: bool = False) -> bytes:
    """Records (of :data:`RECORD_DTYPE` or an extended layout) as a whole raw file."""
    dtype = records.dtype if records.dtype in LAYOUTS.values() else RECORD_DTYPE
    records = np.ascontiguousarray(records, dtype=dtype)
    payload = records.tobytes()
    header = RAW_MAGIC + struct.pack("<II", FORMAT_VERSION, dtype.itemsize) + bytes(HEADER_BYTES - 16)
    footer = FOOTER_MAGIC + struct.pack(
        "<QIxxxxQ", len(records), zlib.crc32(payload), FLAG_PARTIAL if partial else 0
    )
    return header + payload + footer


def write_raw_samples(path: Path, records: np.ndarray, partial: bool = False) -> None:
    """Write records in the raw format (used by importers and tests; harnesses have their own)."""
    write_file(path, raw_bytes(records, partial))

"""Reader for the raw sample files the harnesses write (see docs/run-format.md).

A raw file is a 64-byte header, 32-byte records and a 32-byte footer holding the record
count, the CRC-32 of the record bytes and a partial flag. Harnesses in every language
write it; the store ingests it into Parquet.
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

    @property
    def rows(self) -> int:
        return len(self.loaded) if self.loaded is not None else self.count

    @cached_property
    def records(self) -> np.ndarray:
        """Every record in memory (small runs; :meth:`chunks` streams large ones)."""
        if self.loaded is not None:
            return self.loaded
        return np.concatenate([np.zeros(0, RECORD_DTYPE), *self.chunks()])

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
                chunk = np.fromfile(f, dtype=RECORD_DTYPE, count=min(rows, left))
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
        version, record_bytes = struct.unpack_from("<II", head, 8)
        if version != FORMAT_VERSION or record_bytes != RECORD_DTYPE.itemsize:
            raise CorruptRunError(
                f"{path}: unsupported raw format version {version} / record size {record_bytes}"
            )
        body = size - HEADER_BYTES
        footer = b""
        if body >= FOOTER_BYTES and (body - FOOTER_BYTES) % record_bytes == 0:
            f.seek(size - FOOTER_BYTES)
            footer = f.read(FOOTER_BYTES)
        if footer[:8] != FOOTER_MAGIC:
            whole = body // record_bytes
            note = f"raw file truncated (no footer): salvaged {whole} whole records"
            return RawSamples(None, partial=True, truncated=True, note=note, path=path, count=whole)
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
        None, partial=bool(flags & FLAG_PARTIAL), truncated=False, note="", path=path, count=count
    )


def write_raw_samples(path: Path, records: np.ndarray, partial: bool = False) -> None:
    """Write records in the raw format (used by importers and tests; harnesses have their own)."""
    records = np.ascontiguousarray(records, dtype=RECORD_DTYPE)
    payload = records.tobytes()
    header = RAW_MAGIC + struct.pack("<II", FORMAT_VERSION, RECORD_DTYPE.itemsize) + bytes(HEADER_BYTES - 16)
    footer = FOOTER_MAGIC + struct.pack(
        "<QIxxxxQ", len(records), zlib.crc32(payload), FLAG_PARTIAL if partial else 0
    )
    write_file(path, header + payload + footer)

"""Reader for the raw sample files the harnesses write (see docs/run-format.md).

A raw file is a 64-byte header, 32-byte records and a 32-byte footer holding the record
count, the CRC-32 of the record bytes and a partial flag. Harnesses in every language
write it; the store ingests it into Parquet.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
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


@dataclass(frozen=True)
class RawSamples:
    """Records read from a raw file and what the footer said about them."""

    records: np.ndarray
    partial: bool
    truncated: bool
    note: str


def read_raw_samples(path: Path) -> RawSamples:
    """Read and verify a raw sample file.

    A file with no footer (the writer died) is salvaged: every whole record is kept and
    the result is marked truncated and partial. A footer whose count or CRC-32 disagrees
    with the records raises.

    Raises
    ------
    CorruptRunError
        When the file is not a raw sample file or its footer does not match its records.
    """
    data = path.read_bytes()
    if len(data) < HEADER_BYTES or data[:8] != RAW_MAGIC:
        raise CorruptRunError(f"{path}: not a jitterlab raw sample file (bad header)")
    version, record_bytes = struct.unpack_from("<II", data, 8)
    if version != FORMAT_VERSION or record_bytes != RECORD_DTYPE.itemsize:
        raise CorruptRunError(
            f"{path}: unsupported raw format version {version} / record size {record_bytes}"
        )
    body = len(data) - HEADER_BYTES
    has_footer = (
        body >= FOOTER_BYTES
        and (body - FOOTER_BYTES) % record_bytes == 0
        and data[-FOOTER_BYTES : -FOOTER_BYTES + 8] == FOOTER_MAGIC
    )
    if not has_footer:
        whole = body - body % record_bytes
        records = np.frombuffer(data, dtype=RECORD_DTYPE, count=whole // record_bytes, offset=HEADER_BYTES)
        note = f"raw file truncated (no footer): salvaged {len(records)} whole records"
        return RawSamples(records.copy(), partial=True, truncated=True, note=note)
    count, crc, flags = struct.unpack_from("<QIxxxxQ", data, len(data) - FOOTER_BYTES + 8)
    payload = memoryview(data)[HEADER_BYTES : len(data) - FOOTER_BYTES]
    if count * record_bytes != len(payload) or zlib.crc32(payload) != crc:
        raise CorruptRunError(f"{path}: footer count or CRC-32 does not match the records")
    records = np.frombuffer(data, dtype=RECORD_DTYPE, count=count, offset=HEADER_BYTES)
    return RawSamples(records.copy(), partial=bool(flags & FLAG_PARTIAL), truncated=False, note="")


def write_raw_samples(path: Path, records: np.ndarray, partial: bool = False) -> None:
    """Write records in the raw format (used by importers and tests; harnesses have their own)."""
    records = np.ascontiguousarray(records, dtype=RECORD_DTYPE)
    payload = records.tobytes()
    header = RAW_MAGIC + struct.pack("<II", FORMAT_VERSION, RECORD_DTYPE.itemsize) + bytes(HEADER_BYTES - 16)
    footer = FOOTER_MAGIC + struct.pack(
        "<QIxxxxQ", len(records), zlib.crc32(payload), FLAG_PARTIAL if partial else 0
    )
    write_file(path, header + payload + footer)

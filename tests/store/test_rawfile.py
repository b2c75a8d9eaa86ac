"""The raw sample file: round trip, salvage of a truncated file, detection of damage."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from jitterlab.core.errors import CorruptRunError
from jitterlab.store.rawfile import (
    FOOTER_BYTES,
    HEADER_BYTES,
    RECORD_DTYPE,
    read_raw_samples,
    write_raw_samples,
)


def records(n: int) -> np.ndarray:
    r = np.zeros(n, dtype=RECORD_DTYPE)
    r["pair"] = np.arange(n) % 2
    r["seq"] = np.arange(n) // 2
    r["t_send_ns"] = 1_000 + 10 * np.arange(n)
    r["t_recv_ns"] = r["t_send_ns"] + 500
    return r


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s.jlraw"
    write_raw_samples(path, records(1000), partial=True)
    read = read_raw_samples(path)
    assert np.array_equal(read.records, records(1000))
    assert read.partial and not read.truncated


def test_crc_is_zlib_crc32() -> None:
    # the C++ writer's test checks the same check value (0xCBF43926)
    assert zlib.crc32(b"123456789") == 0xCBF43926


def test_truncated_file_salvages_whole_records(tmp_path: Path) -> None:
    path = tmp_path / "s.jlraw"
    write_raw_samples(path, records(100))
    data = path.read_bytes()
    path.write_bytes(data[: HEADER_BYTES + 32 * 60 + 7])
    read = read_raw_samples(path)
    assert read.truncated and read.partial
    assert len(read.records) == 60
    assert "truncated" in read.note


def test_flipped_byte_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "s.jlraw"
    write_raw_samples(path, records(100))
    data = bytearray(path.read_bytes())
    data[HEADER_BYTES + 100] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRunError, match="CRC-32"):
        read_raw_samples(path)


def test_not_a_raw_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jlraw"
    path.write_bytes(b"hello" * 40)
    with pytest.raises(CorruptRunError, match="bad header"):
        read_raw_samples(path)


def test_footer_size_matches_native_layout() -> None:
    assert RECORD_DTYPE.itemsize == 32 and FOOTER_BYTES == 32 and HEADER_BYTES == 64

"""The raw sample file: round trip, salvage of a truncated file, detection of damage."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from jitterlab.core.errors import CorruptRunError
from jitterlab.store import ResultsStore
from jitterlab.store.rawfile import (
    FOOTER_BYTES,
    HEADER_BYTES,
    LAYOUT,
    NET_RECORD_DTYPE,
    RECORD_DTYPE,
    raw_bytes,
    read_raw_bytes,
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


def net_records(n: int) -> np.ndarray:
    r = np.zeros(n, dtype=NET_RECORD_DTYPE)
    r["seq"] = np.arange(n)
    r["t_intended_ns"] = 1_000 + 10 * np.arange(n)
    r["t_actual_send_ns"] = r["t_intended_ns"] + 3
    r["t_send_ns"] = r["t_intended_ns"]
    r["t_recv_ns"] = r["t_send_ns"] + 500
    r["dst_node"] = 1
    return r


def test_the_net_record_is_the_32_byte_record_extended() -> None:
    # issue 28: net agents hand over the run format's record, not one of their own
    assert NET_RECORD_DTYPE.itemsize == 56
    assert NET_RECORD_DTYPE.names[:5] == RECORD_DTYPE.names
    assert all(NET_RECORD_DTYPE.fields[n][1] == RECORD_DTYPE.fields[n][1] for n in RECORD_DTYPE.names)
    assert [n for n, _ in LAYOUT["extended_records"]["net"]] == list(NET_RECORD_DTYPE.names)


def test_an_extended_file_reads_back_in_its_layout(tmp_path: Path) -> None:
    path = tmp_path / "n.jlraw"
    write_raw_samples(path, net_records(300))
    read = read_raw_samples(path)
    assert read.dtype == NET_RECORD_DTYPE and read.extra == (
        "t_intended_ns",
        "t_actual_send_ns",
        "src_node",
        "dst_node",
    )
    assert np.array_equal(read.records, net_records(300))
    held = read_raw_bytes(path.read_bytes(), "n")  # an agent's block, in memory: the same checks
    assert np.array_equal(held.records, net_records(300)) and not held.truncated
    cut = path.read_bytes()[: HEADER_BYTES + 56 * 7 + 20]  # an agent died while writing its block
    salvaged = read_raw_bytes(cut, "n")
    assert salvaged.truncated and salvaged.partial and np.array_equal(salvaged.records, net_records(7))
    flipped = bytearray(path.read_bytes())
    flipped[HEADER_BYTES + 9] ^= 1
    with pytest.raises(CorruptRunError):
        read_raw_bytes(bytes(flipped), "n")


def test_an_unknown_record_size_is_refused(tmp_path: Path) -> None:
    data = bytearray(raw_bytes(records(2)))
    data[12] = 40  # the agents' old 40-byte record is no layout of the run format
    (tmp_path / "old.jlraw").write_bytes(bytes(data))
    with pytest.raises(CorruptRunError, match="record size 40"):
        read_raw_samples(tmp_path / "old.jlraw")


def test_raw_parts_are_committed_with_their_extra_columns(tmp_path: Path) -> None:
    """What recover does with a killed net coordinator's staging folder: the agent's parts
    (raw files as they came) read by the raw-file reader, merged in order, the net record's
    columns kept as int64 columns of the run."""
    store = ResultsStore(tmp_path / "store")
    staging = store.staging_dir(store.new_run_id("net", "ping", "udp"))
    whole = net_records(250)
    store.write_raw_part(staging, 1, raw_bytes(whole[:100]))
    store.write_raw_part(staging, 2, raw_bytes(whole[100:]))
    meta = {
        "id": staging.name,
        "kind": "run",
        "status": "partial",
        "partial_reason": "t",
        "config": {"pairs": 1},
    }
    run = store.commit_parts(staging, meta)
    assert run.table.column_names[4:] == ["t_intended_ns", "t_actual_send_ns", "src_node", "dst_node"]
    assert np.array_equal(run.seq, whole["seq"]) and np.array_equal(run.column("dst_node"), whole["dst_node"])
    assert np.array_equal(run.column("t_actual_send_ns"), whole["t_actual_send_ns"])
    assert run.table.schema.field("src_node").type == "int64"

"""Every harness writes the one documented run format: harness.json against its JSON
Schema, the raw sample file against its layout, whichever language wrote them."""

from __future__ import annotations

import json
import struct
import subprocess
import zlib
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from jitterlab.core.programs import native_program
from jitterlab.measure import jvm
from jitterlab.simulate.proxy import free_udp_port
from jitterlab.store.rawfile import LAYOUT, RECORD_DTYPE, read_raw_samples, write_raw_samples
from jitterlab.store.schema import harness_schema

NATIVE_TOOLS = {
    "bench": ["jitterlab-bench", "--technique", "mutex", "--samples", "300", "--warmup", "10", "--no-mlock"],
    "hiccup": ["jitterlab-hiccup", "--duration-ns", "100000000", "--cpus", "0", "--no-mlock"],
    "pipeline": ["jitterlab-pipeline", "--samples", "500", "--warmup", "10", "--no-mlock"],
    "probe": ["jitterlab-inject", "probe", "--samples", "50", "--rate", "1000"],
}


def check_raw_file(path: Path) -> int:
    """Parse ``path`` with nothing but the layout file; returns the record count."""
    data = path.read_bytes()
    header, footer = LAYOUT["header"], LAYOUT["footer"]
    fmt = "".join(kind.lstrip("<") for _, kind in header["fields"])
    magic, version, record_bytes = struct.unpack_from("<" + fmt, data, 0)
    assert magic == header["magic"].encode()
    assert version == LAYOUT["format_version"]
    assert record_bytes == np.dtype([(n, k) for n, k in LAYOUT["record"]]).itemsize
    tail = data[-footer["bytes"] :]
    f_magic, count, crc, flags = struct.unpack(
        "<" + "".join(k.lstrip("<") for _, k in footer["fields"]), tail
    )
    assert f_magic == footer["magic"].encode()
    payload = data[header["bytes"] : -footer["bytes"]]
    assert len(payload) == count * record_bytes
    assert zlib.crc32(payload) == crc
    assert flags & ~LAYOUT["flags"]["partial"] == 0
    return int(count)


def run_native(name: str, out: Path) -> Path:
    argv = [str(native_program(NATIVE_TOOLS[name][0])), *NATIVE_TOOLS[name][1:], "--out", str(out)]
    if name == "probe":
        here = f"127.0.0.1:{free_udp_port()}"
        argv += ["--target", here, "--receive", here]
    out.mkdir()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.parametrize("tool", sorted(NATIVE_TOOLS))
def test_native_tools_write_the_documented_format(tool: str, tmp_path: Path) -> None:
    out = run_native(tool, tmp_path / tool)
    harness = json.loads((out / "harness.json").read_text())
    jsonschema.validate(harness, harness_schema())
    assert check_raw_file(out / "samples.jlraw") > 0


@pytest.mark.parametrize(("tool", "requested"), [("bench", 300), ("pipeline", 500)])
def test_harness_json_names_the_count_samples(tool: str, requested: int, tmp_path: Path) -> None:
    harness = json.loads((run_native(tool, tmp_path / tool) / "harness.json").read_text())
    assert harness["samples"] == requested and "samples_requested" not in harness


@pytest.mark.parametrize(
    ("tool", "old", "count"),
    [("pipeline", "--messages", 40), ("probe", "--count", 20)],
)
def test_native_tools_take_the_old_spelling_with_a_warning(
    tool: str, old: str, count: int, tmp_path: Path
) -> None:
    """Issue 28 item 2: --samples everywhere; --messages/--count still work for this release and
    warn on stderr naming the new option, as the Python CLI does for its own old spellings."""
    out = tmp_path / tool
    out.mkdir()
    argv = [str(native_program(NATIVE_TOOLS[tool][0])), *NATIVE_TOOLS[tool][1:], "--out", str(out)]
    at = argv.index("--samples")
    argv[at : at + 2] = [old, str(count)]
    if tool == "probe":
        here = f"127.0.0.1:{free_udp_port()}"
        argv += ["--target", here, "--receive", here]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert f"warning[deprecated-option]: {old} is an old spelling: use --samples" in result.stderr
    # the pipeline: transit and inter-message series of each consumer (an interval fewer)
    expected = 4 * count - 2 if tool == "pipeline" else count
    assert check_raw_file(out / "samples.jlraw") == expected
    usage = subprocess.run(
        [argv[0], *(["probe"] if tool == "probe" else []), "--help"], capture_output=True, text=True
    )
    assert "--samples N" in usage.stdout and f"old spelling {old}" in usage.stdout


def test_the_jvm_harness_writes_the_documented_format(tmp_path: Path) -> None:
    jdk = jvm.choose_jdk("auto")
    out = tmp_path / "jvm"
    out.mkdir()
    argv = [str(jdk.java), "-jar", str(jvm.harness_jar()), "--technique", "java-lock", "--pairs", "2"]
    argv += ["--samples", "300", "--warmup", "10", "--out", str(out)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    harness = json.loads((out / "harness.json").read_text())
    jsonschema.validate(harness, harness_schema())
    assert harness["samples"] == 300 and "samples_requested" not in harness
    threads = {p["thread"] for p in harness["placements"]}
    assert {"main", "sender-0", "receiver-0", "sender-1", "receiver-1"} <= threads
    assert check_raw_file(out / "samples.jlraw") == 600


def test_the_python_writer_writes_the_documented_format(tmp_path: Path) -> None:
    records = np.zeros(5, dtype=RECORD_DTYPE)
    records["t_recv_ns"] = np.arange(5) * 10
    write_raw_samples(tmp_path / "s.jlraw", records, partial=True)
    assert check_raw_file(tmp_path / "s.jlraw") == 5
    assert read_raw_samples(tmp_path / "s.jlraw").partial


def test_the_schema_refuses_what_the_format_forbids() -> None:
    good = {
        "harness": "native",
        "harness_version": "1",
        "status": "complete",
        "partial_reason": "",
        "started_realtime_ns": 1,
        "t_start_ns": 2,
        "t_end_ns": 3,
        "warnings": [],
    }
    jsonschema.validate(good, harness_schema())
    jsonschema.validate(good | {"samples_requested": 3}, harness_schema())  # the old name still reads
    for bad in (
        {"status": "done"},
        {"warnings": "none"},
        {"pairs": 0},
        {"samples": "x"},
        {"samples_requested": "x"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(good | bad, harness_schema())


@pytest.mark.parametrize(
    "argv",
    [
        ["jitterlab-bench"],
        ["jitterlab-hiccup"],
        ["jitterlab-pipeline"],
        ["jitterlab-inject"],
        ["jitterlab-inject", "proxy"],
        ["jitterlab-inject", "probe"],
    ],
)
def test_every_native_tool_answers_help(argv: list[str]) -> None:
    result = subprocess.run(
        [str(native_program(argv[0])), *argv[1:], "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: " + " ".join(argv)) and result.stderr == ""

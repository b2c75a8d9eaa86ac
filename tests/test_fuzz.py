"""Every parser of outside input, fuzzed on each CI run (seeded, fast): a mutated file is
read or refused with a JitterlabError, never anything else. The long run is
benchmarks/fuzz.py, whose targets and mutations these tests share."""

from __future__ import annotations

import importlib.util
import json
import random
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jitterlab.core.errors import JitterlabError

_spec = importlib.util.spec_from_file_location("fuzz", Path(__file__).parents[1] / "benchmarks" / "fuzz.py")
assert _spec and _spec.loader
fuzz = importlib.util.module_from_spec(_spec)
sys.modules["fuzz"] = fuzz
_spec.loader.exec_module(fuzz)

FAST = settings(
    derandomize=True,
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    targets = fuzz.Targets(tmp_path_factory.mktemp("fuzz"))
    yield targets
    targets.close()  # the ring target's shared memory


def read_or_refuse(targets: Any, target: str, data: bytes) -> None:
    try:
        targets.run(target, data)
    except JitterlabError as e:
        assert str(e) and "\n" not in str(e).strip()


@pytest.mark.parametrize("target", fuzz.TARGETS)
@FAST
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_files_are_read_or_refused_in_one_line(targets: Any, target: str, seed: int) -> None:
    read_or_refuse(targets, target, targets.mutate(target, random.Random(seed)))


@pytest.mark.parametrize("target", ["run-json", "model", "harness"])
@FAST
@given(value=json_values, key=st.text(max_size=12))
def test_json_files_with_a_field_of_any_type(targets: Any, target: str, value: Any, key: str) -> None:
    doc = json.loads(targets.seeds[target])
    doc[key or "config"] = value
    read_or_refuse(targets, target, json.dumps(doc).encode())


@pytest.mark.parametrize("target", ["csv", "raw", "hlog"])
@FAST
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes(targets: Any, target: str, data: bytes) -> None:
    read_or_refuse(targets, target, data)


def test_the_fuzzer_finds_what_it_is_meant_to_find(tmp_path: Path) -> None:
    # a target that fails with anything but a JitterlabError is reported as a finding
    class Broken:
        def mutate(self, _target: str, rng: random.Random) -> bytes:
            return bytes([rng.randrange(256)])

        def run(self, _target: str, data: bytes) -> None:
            if data[0] % 2:
                raise KeyError("bug")
            raise JitterlabError("refused")

    result = fuzz.fuzz(Broken(), "x", random.Random(1), lambda done: done >= 50, 5.0, tmp_path / "findings")
    assert result["executions"] == 50 and 0 < result["findings"] < 50
    assert len(list((tmp_path / "findings").glob("x-*.txt"))) == result["findings"]


def test_a_ring_without_its_header_is_refused_once_by_the_reader_then_in_process(targets: Any) -> None:
    """The ring target ran ~13 inputs/s: a file shorter than the header or without its magic
    makes the native reader wait 1 s for a creator that never comes. The header is parsed in
    process: the first such input still goes to the reader (and must be refused), the rest
    are counted without the wait."""
    targets.header_refusals = 0
    with pytest.raises(JitterlabError):
        targets.run("ring", b"\x00" * 100)
    magic = fuzz.RING_MAGIC.to_bytes(8, "little")
    start = time.perf_counter()
    for data in (b"", magic[:7], b"\x00" * len(targets.seeds["ring"]), b"x" + targets.seeds["ring"]):
        targets.run("ring", data)
    assert time.perf_counter() - start < 0.5  # four waits of 1 s before
    assert targets.header_refusals == 5
    read_or_refuse(targets, "ring", targets.seeds["ring"])  # a whole ring still goes to the reader


def test_the_fuzzer_prints_the_rate_and_the_time_to_a_million(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = fuzz.main(["--target", "raw", "--target", "hosts", "--execs", "40", "--findings", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    for target in ("raw", "hosts"):
        (line,) = [ln for ln in out.splitlines() if ln.startswith(f"target {target} ")]
        assert re.search(r"\s40 executions\s+[\d,]+/s\s+10\^6 in\s+[\d.]+ h", line), line

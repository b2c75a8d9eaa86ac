"""Every parser of outside input, fuzzed on each CI run (seeded, fast): a mutated file is
read or refused with a JitterlabError, never anything else. The long run is
benchmarks/fuzz.py, whose targets and mutations these tests share."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
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

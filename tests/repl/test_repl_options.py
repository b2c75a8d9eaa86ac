"""``repl bench --preset`` offers exactly the presets repl/options.py defines (one definition,
light: --help needs no numpy), and a preset sets what the seed's experiment runs."""

from __future__ import annotations

import pytest

from jitterlab.cli.main import build_parser
from jitterlab.repl import bench
from jitterlab.repl.options import PRESETS, ReplOptions


def test_every_preset_is_offered_and_no_other() -> None:
    parser = build_parser("repl")
    for name in PRESETS:
        assert parser.parse_args(["repl", "bench", "--preset", name]).preset == name
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["repl", "bench", "--preset", "seed-999"])
    assert stop.value.code == 2


def test_bench_uses_the_one_definition() -> None:
    assert bench.PRESETS is PRESETS and bench.ReplOptions is ReplOptions
    seed = bench.with_preset("seed-003")
    assert seed.clients == (2, 5, 10, 25, 50, 75, 100, 125) and seed.rate_hz == 90.0

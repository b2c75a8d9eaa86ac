"""``repl bench --preset`` offers the presets repl/bench.py defines, no more, no fewer
(the names live in repl/options.py so that --help needs no numpy)."""

from __future__ import annotations

from jitterlab.repl.bench import PRESETS
from jitterlab.repl.options import PRESET_NAMES


def test_preset_names_are_the_presets() -> None:
    assert tuple(sorted(PRESET_NAMES)) == tuple(sorted(PRESETS))

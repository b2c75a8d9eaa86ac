"""The names ``repl bench --preset`` offers, kept apart from :mod:`jitterlab.repl.bench`
(numpy, scipy, the store) so that the parser and ``--help`` stay light; the presets
themselves are :data:`jitterlab.repl.bench.PRESETS` (tests/repl/test_repl_options.py checks
both name the same ones)."""

from __future__ import annotations

PRESET_NAMES = ("seed-003",)

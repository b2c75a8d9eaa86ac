"""benchmarks/all.py: the registry of published figures is complete and read right (issue 27.12)."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def figures_module():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        yield importlib.import_module("all")
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


def test_every_registered_benchmark_exists_and_every_benchmark_is_registered(figures_module) -> None:
    benches = figures_module.load_registry()
    scripts = {Path(b.command.split()[1]).name for b in benches}
    for script in scripts:
        assert (REPO / "benchmarks" / script).is_file(), script
    # every benchmark that prints figures is in the registry; the tools are not benchmarks
    tools = {"all.py", "treemem.py", "fuzz.py"}
    on_disk = {p.name for p in (REPO / "benchmarks").glob("*.py")} - tools
    assert on_disk <= scripts, f"benchmarks missing from figures.toml: {sorted(on_disk - scripts)}"
    assert all(b.patterns for b in benches)


def test_figures_are_read_from_the_printed_lines(figures_module) -> None:
    bench = next(b for b in figures_module.load_registry() if b.name == "harness_floor")
    out = (
        "  core-to-core one-way p50 (floor of each run, median)       64 ns\n"
        "  spsc one-way p50 (pure channel, spread, median)            80 ns\n"
        "spsc/c2c one-way p50 ratio        1.25  target ≤ 1.30  ok\n"
        "recording on/off cost ratio      1,002.5  target ≤ 1.05  MISSED\n"
    )
    found, missing = figures_module.read_figures(bench, out)
    assert missing == []
    assert found == {"c2c_p50_ns": 64, "spsc_p50_ns": 80, "spsc_over_c2c": 1.25, "record_on_over_off": 1002.5}
    found, missing = figures_module.read_figures(bench, "nothing here")
    assert found == {} and sorted(missing) == sorted(bench.patterns)


def test_a_figure_drifts_when_its_median_moves_by_more_than_its_range(figures_module) -> None:
    published = {"median": 100.0, "min": 90.0, "max": 120.0, "unit": "ns"}
    assert figures_module.drift({"median": 130.0, "unit": "ns"}, published) == ""
    assert figures_module.drift({"median": 70.0, "unit": "ns"}, published) == ""
    assert "moved +31" in figures_module.drift({"median": 131.0, "unit": "ns"}, published)
    assert figures_module.drift({"median": 69.0, "unit": "ns"}, published) != ""


def test_published_figures_name_their_command_and_repeats() -> None:
    path = REPO / "docs" / "results" / "figures.json"
    if not path.exists():
        pytest.skip("no figures published yet")
    for mode, section in json.loads(path.read_text()).items():
        assert {"machine", "regime_before", "regime_after", "benches"} <= set(section), mode
        for name, bench in section["benches"].items():
            assert re.match(r"python benchmarks/\w+\.py", bench["command"]), name
            for fig, v in bench["figures"].items():
                assert v["repeats"] >= 3, (mode, name, fig)
                assert v["min"] <= v["median"] <= v["max"], (mode, name, fig)


def test_tree_memory_counts_children(figures_module) -> None:
    treemem = importlib.import_module("treemem")
    # a child holding ~200 MB: the parent alone (a shell) is a few MB
    code = "import time; b = bytearray(200_000_000); b[::4096] = b'x' * len(b[::4096]); time.sleep(1)"
    m = treemem.run_measured(["sh", "-c", f'{sys.executable} -c "{code}"; true'])
    assert m.returncode == 0
    assert m.peak_tree_rss_bytes > 190_000_000

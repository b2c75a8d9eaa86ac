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
    tools = {"all.py", "treemem.py", "fuzz.py", "checkout.py"}
    on_disk = {p.name for p in (REPO / "benchmarks").glob("*.py")} - tools
    assert on_disk <= scripts, f"benchmarks missing from figures.toml: {sorted(on_disk - scripts)}"
    assert all(b.patterns for b in benches)


def test_figures_are_read_from_the_printed_lines(figures_module) -> None:
    bench = next(b for b in figures_module.load_registry() if b.name == "harness_floor")
    out = (
        "  regime slow    repeats 3: c2c p50    164 ns, spsc p50    148 ns, spsc/c2c per repeat 0.88, 0.91\n"
        "ratio spsc/c2c fast not-met-in-this-session\n"
        "ratio spsc/c2c slow 0.91 0.88 0.91 3 ok   (target ≤ 1.3)\n"
        "ratio record-on/off 1,002.5 MISSED   (target ≤ 1.05)\n"
    )
    found, missing = figures_module.read_figures(bench, out)
    assert missing == []  # the fast regime's ratio is optional: this session did not meet it
    assert found == {
        "c2c_p50_ns": 164,
        "spsc_p50_ns": 148,
        "spsc_over_c2c_slow": 0.91,
        "record_on_over_off": 1002.5,
    }
    found, missing = figures_module.read_figures(bench, "nothing here")
    assert found == {} and sorted(missing) == sorted(set(bench.patterns) - bench.optional)


def test_a_figure_drifts_when_its_median_moves_by_more_than_its_range(figures_module) -> None:
    published = {"median": 100.0, "min": 90.0, "max": 120.0, "unit": "ns"}
    assert figures_module.drift({"median": 130.0, "unit": "ns"}, published) == ""
    assert figures_module.drift({"median": 70.0, "unit": "ns"}, published) == ""
    assert "moved +31" in figures_module.drift({"median": 131.0, "unit": "ns"}, published)
    assert figures_module.drift({"median": 69.0, "unit": "ns"}, published) != ""
    # a range of (almost) nothing still allows 5 % of the median
    tight = {"median": 100.0, "min": 100.0, "max": 100.0, "unit": "MB"}
    assert figures_module.drift({"median": 104.0, "unit": "MB"}, tight) == ""
    assert figures_module.drift({"median": 106.0, "unit": "MB"}, tight) != ""


def test_published_figures_name_their_command_and_repeats() -> None:
    path = REPO / "docs" / "results" / "figures.json"
    if not path.exists():
        pytest.skip("no figures published yet")
    for mode, section in json.loads(path.read_text()).items():
        assert {"machine", "regime_before", "regime_after", "benches"} <= set(section), mode
        for name, bench in section["benches"].items():
            assert re.match(r"python benchmarks/\w+\.py", bench["command"]), name
            for fig, v in bench["figures"].items():
                # a regime's figure may come from fewer repeats (the regime flipped): said so
                assert v["repeats"] >= 3 or "few_repeats" in v, (mode, name, fig)
                assert v["min"] <= v["median"] <= v["max"], (mode, name, fig)


def test_tree_memory_counts_children(figures_module) -> None:
    treemem = importlib.import_module("treemem")
    # a child holding ~200 MB: the parent alone (a shell) is a few MB
    code = "import time; b = bytearray(200_000_000); b[::4096] = b'x' * len(b[::4096]); time.sleep(1)"
    m = treemem.run_measured(["sh", "-c", f'{sys.executable} -c "{code}"; true'])
    assert m.returncode == 0
    assert m.peak_tree_rss_bytes > 190_000_000


def test_tree_counts_processes_and_the_busiest_ones_cpu(figures_module) -> None:
    treemem = importlib.import_module("treemem")
    # a child busy for ~0.5 s of CPU beside the shell that waits for it
    code = "import time; t = time.process_time()\nwhile time.process_time() - t < 0.5: pass"
    m = treemem.run_measured(["sh", "-c", f'{sys.executable} -c "{code}"; true'], pss=True)
    assert m.returncode == 0
    assert m.peak_processes >= 2  # the shell and python
    assert 0.3 <= m.longest_process_cpu_s <= 2.0  # sampled every 20 ms: a little short at most


def test_a_regime_not_met_keeps_its_published_figure(figures_module) -> None:
    """A session in the fast regime publishes its figures without erasing the slow regime's
    spsc/c2c ratio: that one stays, marked with the date, commit and regime it came from."""
    benches = figures_module.load_registry()
    slow = {"date": "2026-11-25 13:17 UTC", "commit": "5af53cc", "cpu": "x", "cpus": "2", "kernel": "k"}
    fig = {"median": 0.91, "min": 0.86, "max": 0.98, "repeats": 3, "unit": "×", "target": "≤ 1.3"}
    section = {
        "machine": slow,
        "regime_before": "slow (c2c p50 188 ns)",
        "regime_after": "slow (c2c p50 165 ns)",
        "benches": {
            "harness_floor": {"command": "c", "figures": {"spsc_over_c2c_slow": fig, "c2c_p50_ns": fig}}
        },
    }
    fast = dict(fig, median=1.05, min=1.0, max=1.06)
    now = {"harness_floor": {"command": "c", "figures": {"spsc_over_c2c_fast": fast}, "failures": []}}
    today = {"machine": dict(slow, date="2026-11-27 08:00 UTC", commit="abc1234"), "regime_before": "fast"}
    figures_module.publish(section, now, today | {"regime_after": "fast"}, some_only=False, benches=benches)
    figures = section["benches"]["harness_floor"]["figures"]
    assert figures["spsc_over_c2c_fast"]["median"] == 1.05
    assert figures["spsc_over_c2c_slow"]["median"] == 0.91  # carried, not erased
    assert figures["spsc_over_c2c_slow"]["carried"]["machine"]["commit"] == "5af53cc"
    assert "c2c_p50_ns" not in figures  # not optional: this session's figures replace it
    assert section["machine"]["commit"] == "abc1234"
    assert "few_repeats" not in figures["spsc_over_c2c_fast"]
    once = {
        "harness_floor": {
            "command": "c",
            "figures": {"spsc_over_c2c_fast": dict(fast, repeats=1)},
            "failures": [],
        }
    }
    figures_module.publish(section, once, today | {"regime_after": "fast"}, some_only=False, benches=benches)
    assert section["benches"]["harness_floor"]["figures"]["spsc_over_c2c_fast"]["few_repeats"]
    # carried again by a later fast session: still the session that measured it
    again = {"harness_floor": {"command": "c", "figures": {"spsc_over_c2c_fast": fast}, "failures": []}}
    figures_module.publish(section, again, today | {"regime_after": "fast"}, some_only=False, benches=benches)
    carried = section["benches"]["harness_floor"]["figures"]["spsc_over_c2c_slow"]["carried"]
    assert carried["machine"]["commit"] == "5af53cc" and carried["regime_before"].startswith("slow")


def test_the_harness_floor_table_has_a_row_per_placement_with_its_host_cpu(figures_module, tmp_path) -> None:
    """Issue 43 item 7: each placement met is kept with its host CPU and c2c floor; a missed one says so."""
    floor = importlib.import_module("harness_floor")
    by_regime = {
        "fast": [(90.0, 80.0, 0.89), (91.0, 79.0, 0.87)],
        "slow": [(105.0, 288.0, 2.74)],
        "changed": [],
    }
    rows = floor.placement_rows(by_regime, 300_000, "2026-11-28 13:21 UTC", "abc1234", 1.5, 3)
    assert [(r["regime"], r["verdict"]) for r in rows] == [("fast", "ok"), ("slow", "MISSED")]
    assert "family" in rows[0]["cpu"] and rows[1]["c2c_p50_ns"] == 105.0
    kept = tmp_path / "placements.json"
    floor.publish(rows[:1], kept)
    floor.publish(rows[1:], kept)  # appended, never replaced: an earlier placement stays
    table = "\n".join(figures_module.placement_table(json.loads(kept.read_text())["rows"]))
    assert table.count("| 2026-11-28 13:21 UTC | abc1234 |") == 2
    assert "| slow | 105 ns | 288 ns | 2.74 (2.74 – 2.74) | 1 | MISSED |" in table


def test_the_published_placements_are_in_figures_md() -> None:
    rows = json.loads((REPO / "docs" / "results" / "harness-floor.json").read_text())["rows"]
    text = (REPO / "docs" / "results" / "figures.md").read_text()
    assert "## Harness floor by placement" in text
    for r in rows:
        assert f"| {r['date']} | {r['commit']} | {r['cpu']} |" in text

"""Issue 38 items 1, 2, 6 and 8: what a run is called (the policy obtained, not the one asked
for), no run dropped from a table, figures that show what they draw, text and JSON hygiene."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import latency_clusters, make_run, run_main
from jitterlab.store import ResultsStore, Run


def refused(run: Run, asked: str = "rr", priority: int = 90) -> Run:
    """``run`` as a harness whose real-time policy the kernel refused stores it: run.json
    written back, the run read again from the store."""
    path = run.path / "run.json"
    meta = json.loads(path.read_text())
    meta["config"] |= {"policy": asked, "priority": priority}
    meta["obtained"] = {
        "policies": ["other"],
        "placements": [
            {
                "role": role,
                "pair": 0,
                "policy": "other",
                "priority": 0,
                "policy_error": "Operation not permitted",
            }
            for role in ("sender", "receiver")
        ],
        "warnings": [{"code": "policy-refused", "detail": "scheduling policy rr refused"}],
    }
    path.write_text(json.dumps(meta))
    return next(r for r in ResultsStore(run.path.parent).runs() if r.id == run.id)


def granted(run: Run, policy: str = "rr", priority: int = 90) -> Run:
    path = run.path / "run.json"
    meta = json.loads(path.read_text())
    meta["config"] |= {"policy": policy, "priority": priority}
    meta["obtained"] = {
        "policies": [policy],
        "placements": [
            {"role": role, "pair": 0, "policy": policy, "priority": priority, "policy_error": ""}
            for role in ("sender", "receiver")
        ],
        "warnings": [],
    }
    path.write_text(json.dumps(meta))
    return next(r for r in ResultsStore(run.path.parent).runs() if r.id == run.id)


# --- item 1: labels follow what the kernel granted -------------------------------------------


def test_a_refused_policy_is_named_by_what_was_obtained_and_says_it_was_refused(tmp_path: Path) -> None:
    run = refused(make_run(tmp_path, latency_clusters(1, 2_000), technique="mutex"))
    assert run.policy_label == "other — rr 90 refused"
    assert run.label == "mutex ×1 other — rr 90 refused"
    assert run.requested_policy_label == "rr 90"


def test_a_granted_policy_keeps_its_plain_label(tmp_path: Path) -> None:
    run = granted(make_run(tmp_path, latency_clusters(1, 2_000), technique="mutex"))
    assert run.policy_label == "rr 90"
    plain = make_run(tmp_path, latency_clusters(2, 2_000), technique="mutex")  # nothing obtained recorded
    assert plain.policy_label == "other"


def test_runs_table_and_report_name_the_refusal_and_tell_it_from_a_real_rr_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jitterlab.describe.report import build_report

    store = tmp_path / "s"
    real = granted(make_run(store, latency_clusters(1, 3_000), technique="mutex"))
    asked = refused(make_run(store, latency_clusters(2, 3_000), technique="mutex"))
    code, out, err = run_main(["runs", "--store", str(store)], capsys)
    assert code == 0, err
    assert "other — rr 90 refused" in out
    html = build_report([real, asked])
    assert "max other — rr 90 refused" in html and "max rr 90" in html  # Table 1: two columns
    # the like-with-like verdict compares runs named apart
    assert "mutex ×1 other — rr 90 refused</td><td>mutex ×1 rr 90" in html


def test_the_run_id_names_what_the_threads_will_run_as(monkeypatch: pytest.MonkeyPatch) -> None:
    from jitterlab.measure import policy

    monkeypatch.setattr(policy, "granted", lambda _policy, _priority: False)
    assert policy.id_label("rr", 90) == "other-rr90-refused"
    monkeypatch.setattr(policy, "granted", lambda _policy, _priority: True)
    assert policy.id_label("rr", 90) == "rr90"
    assert policy.id_label("other", None) == "other"


def test_the_policy_probe_changes_nothing_in_this_process() -> None:
    import os

    from jitterlab.measure.policy import granted

    before = os.sched_getscheduler(0)
    assert granted("other", None)
    granted("rr", 90)  # either answer is right here; what matters is that nothing changed
    assert os.sched_getscheduler(0) == before


# --- item 2: every run in every table, each told apart ---------------------------------------


def test_table1_keeps_every_run_of_a_shared_cell_and_tells_them_apart(tmp_path: Path) -> None:
    from jitterlab.core.units import format_ns
    from jitterlab.describe.tables import table1_layout

    rng = np.random.default_rng(3)
    big = rng.normal(20_000, 500, 20_000).astype(np.int64)
    big[77] = 4_080_000  # the large run's 4.08 ms maximum
    large = make_run(tmp_path, big, technique="mutex")
    small = make_run(tmp_path, np.full(10, 25_600, np.int64), technique="mutex")
    runs = [large, small]
    _headers, rows = table1_layout(runs, [r.meta["summary"]["latency_ns"] for r in runs])
    assert len(rows) == 2
    assert {rows[0][0], rows[1][0]} == {f"synthetic/mutex ×1 ({r.id})" for r in runs}
    maxima = {row[1] for row in rows}
    assert maxima == {format_ns(4_080_000), format_ns(25_600)}


def test_the_report_table_and_navigation_keep_both_runs(tmp_path: Path) -> None:
    from jitterlab.describe.report import build_report

    a = make_run(tmp_path, latency_clusters(1, 4_000), technique="mutex")
    b = make_run(tmp_path, latency_clusters(2, 400) * 3, technique="mutex")
    html = build_report([a, b])
    assert f"synthetic/mutex ×1 ({a.id})" in html and f"synthetic/mutex ×1 ({b.id})" in html
    nav = re.search(r"<nav class='muted'>(.*?)</nav>", html)
    assert nav is not None and a.id in nav.group(1) and b.id in nav.group(1)


def test_describe_hides_no_lone_window_and_says_how_to_see_those_it_hides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s"
    n = 21_000  # 21 windows of 0.1 s (one sample every 100 µs ... 2.1 s)
    t_send = 1_000_000_000 + np.arange(n, dtype=np.int64) * 100_000
    run = make_run(store, latency_clusters(4, n)[:n], t_send=t_send)
    code, out, err = run_main(["describe", run.id, "--window", "100ms", "--store", str(store)], capsys)
    assert code == 0, err
    assert "windows of 100 ms by send time: 21" in out
    assert "not shown" not in out  # all 21 rows: hiding one saves nothing
    assert "2.0 s" in out  # the last window is there
    code, out, err = run_main(["describe", run.id, "--window", "50ms", "--store", str(store)], capsys)
    assert code == 0, err
    assert (
        f"(22 windows in between not shown, from 0.50 s to 1.55 s; jitterlab describe {run.id} --json" in out
    )


# --- item 6: figures ---------------------------------------------------------------------------


def capture_figure(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[Any]:
    figures: list[Any] = []

    def keep(fig: Any, alt: str, close: bool = True) -> str:
        figures.append(fig)
        return ""

    monkeypatch.setattr(module, "figure_img", keep)
    return figures


def test_a_qq_figure_of_one_group_keeps_its_tick_labels_and_axis_titles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jitterlab.describe import overview
    from jitterlab.stats import summarize

    a = make_run(tmp_path, latency_clusters(1, 3_000) * 40, technique="mutex")  # up to ~40 ms: wide labels
    b = make_run(tmp_path, latency_clusters(2, 3_000) * 40, technique="mutex")
    digests = {r.id: overview.digest(r, summarize(r.latency_ns), np.sort(r.latency_ns)) for r in (a, b)}
    figures = capture_figure(monkeypatch, overview)
    overview.qq_figure([(a, [b])], digests, overview.styles([a, b]))
    (fig,) = figures
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    assert ax.xaxis.label.get_text() and ax.yaxis.label.get_text()
    drawn = ax.get_tightbbox(renderer)  # the axes with its drawn tick labels and axis titles
    assert drawn.x0 >= fig.bbox.x0 and drawn.x1 <= fig.bbox.x1, (drawn, fig.bbox)
    assert drawn.y0 >= fig.bbox.y0 and drawn.y1 <= fig.bbox.y1, (drawn, fig.bbox)


def test_the_spectrum_draws_each_pair_count_of_a_technique_its_own_way(tmp_path: Path) -> None:
    from jitterlab.describe.overview import styles

    one = make_run(tmp_path, latency_clusters(1, 2_000), technique="mutex", pairs=1)
    two = make_run(tmp_path, latency_clusters(2, 2_000), technique="mutex", pairs=2)
    again = make_run(tmp_path, latency_clusters(3, 2_000), technique="mutex", pairs=1)
    style = styles([one, two, again])
    assert len({style[r.id].colour for r in (one, two, again)}) == 1  # one technique, one colour
    drawn = {(style[r.id].linestyle, style[r.id].marker) for r in (one, two, again)}
    assert len(drawn) == 3


def test_window_starts_tell_short_windows_apart_and_zero_is_seconds() -> None:
    from jitterlab.describe.tables import window_start

    starts = [10_000_000_000 + k * 100_000 for k in range(10)]
    shown = [window_start(s, 100_000) for s in starts]
    assert len(set(shown)) == 10 and shown[1] == "10.0001 s"
    assert window_start(0, 1_000_000_000) == "0 s"
    assert window_start(0, 100_000) == "0.0000 s"


def test_category_ranges_that_do_not_touch_never_print_touching() -> None:
    from jitterlab.describe.tables import category_rows
    from jitterlab.stats.categories import Category, StackedResult

    cats = (
        Category(0, 25_000.0, 30_120.0, 1000, 0.9),
        Category(1, 30_140.0, 45_000.0, 100, 0.09),
        Category(2, 45_030.0, 90_000.0, 10, 0.01),
    )
    result = StackedResult((30_130.0, 45_010.0), (None, None), cats, None, 3.5)
    ranges = [row[1] for row in category_rows(result)]
    bounds = [part for r in ranges for part in r.split(" – ")]
    assert bounds[1] != bounds[2] and bounds[3] != bounds[4], ranges
    assert ranges[0] == "25 µs – 30.12 µs"


# --- item 8: text and JSON hygiene -----------------------------------------------------------


def floats(document: Any) -> list[float]:
    if isinstance(document, float):
        return [document]
    if isinstance(document, dict):
        return [f for v in document.values() for f in floats(v)]
    if isinstance(document, list):
        return [f for v in document for f in floats(v)]
    return []


def test_json_floats_carry_no_binary_noise(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from jitterlab.core.tidy import tidy_json

    assert tidy_json({"mean": 47295.060000000056, "n": [0.1 + 0.2, 3]}) == {"mean": 47295.06, "n": [0.3, 3]}
    store = tmp_path / "s"
    run = make_run(store, np.array([1, 2, 2, 7, 11, 13, 29] * 3, np.int64) * 1_001)
    code, out, err = run_main(["show", run.id, "--json", "--store", str(store)], capsys)
    assert code == 0, err
    noisy = [f for f in floats(json.loads(out)) if len(repr(abs(f)).replace(".", "").lstrip("0")) > 13]
    assert not noisy


def test_the_summary_has_run_json_s_name_in_json_output_and_the_old_one_still_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s"
    run = make_run(store, latency_clusters(1, 2_000))
    for command in ("show", "describe"):
        code, out, err = run_main([command, run.id, "--json", "--store", str(store)], capsys)
        assert code == 0, err
        doc = json.loads(out)
        assert doc["summary"]["latency_ns"] == doc["summary_ns"]
        assert set(doc["summary"]["latency_ns"]) == set(run.meta["summary"]["latency_ns"])


def test_counts_have_separators_and_the_right_plural(tmp_path: Path) -> None:
    from jitterlab.core.tidy import counted
    from jitterlab.describe.report import build_report

    assert counted(1, "run") == "1 run"
    assert counted(200_000, "sample") == "200,000 samples"
    assert counted(0, "window") == "0 windows"
    run = make_run(tmp_path, latency_clusters(1, 2_000))
    assert "1 run · generated" in build_report([run])


def test_a_bare_number_in_a_duration_is_seconds_and_never_read_as_ms(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from conftest import assert_one_line_error
    from jitterlab.core.errors import JitterlabError
    from jitterlab.core.units import parse_duration_ns

    assert parse_duration_ns("0.5") == 500_000_000
    assert parse_duration_ns("33.3ms", "ms") == 33_300_000
    assert parse_duration_ns("0", "ms") == 0
    with pytest.raises(JitterlabError, match="needs a unit"):
        parse_duration_ns("33.3", "ms")
    code, _out, err = run_main(["mtp", "synth", "-o", "/nonexistent/v.mp4", "--latency", "33.3"], capsys)
    assert code == 2
    assert_one_line_error(err)
    assert "33.3ms" in err and "seconds" in err

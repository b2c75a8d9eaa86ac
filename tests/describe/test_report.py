"""The HTML report, opened in a real headless Chromium (Debian chromium + chromium-driver)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import latency_clusters, make_run, run_cli
from jitterlab.core.tidy import tidy_json

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report over two real harness runs (1 and 2 pairs) and one synthetic run."""
    root = tmp_path_factory.mktemp("report")
    store = root / "s"
    bench = run_cli(
        "bench", "--technique", "futex", "--pairs", "1,2", "--samples", "20000", "--store", str(store)
    )
    assert bench.returncode == 0, bench.stderr
    make_run(store, latency_clusters(7, 20_000), technique="futex")
    out = root / "report.html"
    result = run_cli("report", "-o", str(out), "--store", str(store))
    assert result.returncode == 0, result.stderr
    return out


def test_report_is_self_contained(report: Path) -> None:
    html = report.read_text()
    assert "<script" not in html
    assert "http://" not in html and "https://" not in html, "an offline report fetches nothing"
    for heading in (
        "Max, mean and median per policy",
        "Scaling with the number of pairs",
        "Like with like",
        "Percentile spectrum of every run",
        "Understanding this report",
        "outlier categories",
    ):
        assert heading in html
    assert html.count("data:image/png;base64,") >= 5


def test_report_renders_in_headless_chromium(report: Path, tmp_path: Path) -> None:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("chromium and chromium-driver are needed (scripts/setup.sh installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1280,3000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(report.as_uri())
        assert driver.title == "jitterlab report"
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight]);"
        )
        assert len(images) >= 5
        assert all(done and w > 300 and h > 200 for done, w, h in images), images
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        assert errors == [], errors
        shot = tmp_path / "report.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 50_000, "the screenshot should show plots, not a blank page"
    finally:
        driver.quit()


def test_a_verdict_names_the_percentiles_behind_it(tmp_path: Path) -> None:
    """A faster body with a slower far tail is 'regressed', and the table says where."""
    from jitterlab.describe.report import build_report

    base = latency_clusters(11)
    rng = np.random.default_rng(11)
    faster_body_worse_tail = base // 2
    tail = np.argsort(faster_body_worse_tail)[-base.size // 500 :]  # the top 0.2 %
    faster_body_worse_tail[tail] = rng.normal(5_000_000, 100_000, tail.size).astype(np.int64)
    a = make_run(tmp_path, base, technique="a")
    b = make_run(tmp_path, faster_body_worse_tail, technique="a")
    html = build_report([a, b])
    verdict = html[html.index('class="verdict-') :][:120]
    assert verdict.startswith('class="verdict-regressed">regressed</span>'), verdict
    # the far tail; p50 and p99 improved; p99.99 of ~51 000 samples is not resolved (5 beyond
    # it), so not judged (issue 38 item 3)
    assert "(p99.9)" in verdict, verdict


def test_the_timeline_is_in_seconds_since_the_run_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jitterlab.describe import report
    from jitterlab.describe.analysis import describe_run

    latency = latency_clusters(5, 20_000)
    t_send = np.arange(latency.size, dtype=np.int64) * 250_000  # a sample every 0.25 ms: about 5 s
    run = make_run(tmp_path, latency, t_send=t_send)
    figures: list = []
    monkeypatch.setattr(report, "figure_img", lambda fig, alt, close=True: figures.append(fig) or "")
    report.run_figure(describe_run(run))
    timeline = figures[0].axes[0]
    assert timeline.get_xlabel() == "time since the run started (s)"
    assert timeline.get_xlim() == pytest.approx((0, (latency.size - 1) * 250e-6), abs=1e-6)


def test_the_timeline_of_a_large_run_keeps_a_lone_spike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25 item 2: above 20 000 points the timeline is M4-decimated, not randomly
    subsampled, so the one 10 ms spike among 2 M samples is drawn (a random 20 000 of the
    ~100 000 points above the cut would miss it four times in five)."""
    from jitterlab.describe import report
    from jitterlab.describe.analysis import describe_run

    rng = np.random.default_rng(21)
    latency = rng.lognormal(np.log(5_000), 1.0, 2_000_000).astype(np.int64)
    latency[1_234_567] = 10_000_000
    run = make_run(tmp_path, latency)
    figures: list = []
    monkeypatch.setattr(report, "figure_img", lambda fig, alt, close=True: figures.append(fig) or "")
    report.run_figure(describe_run(run))
    timeline = figures[0].axes[0]
    drawn = np.concatenate([c.get_offsets()[:, 1] for c in timeline.collections])
    assert drawn.size <= report.MAX_SCATTER_POINTS
    assert drawn.max() == pytest.approx(10_000.0)  # µs
    assert "M4" in timeline.get_title()


def test_the_reused_run_figure_shows_only_the_run_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report draws every run into one figure per process: nothing of a run drawn
    before may stay in it (points, lines, legends, limits)."""
    from jitterlab.describe import report
    from jitterlab.describe.analysis import describe_run

    figures: list = []
    monkeypatch.setattr(report, "figure_img", lambda fig, alt, close=True: figures.append(fig) or "")
    slow = make_run(tmp_path, latency_clusters(1, 20_000) * 100, technique="slow")
    fast = make_run(tmp_path, latency_clusters(2, 5_000), technique="fast")
    report.run_figure(describe_run(slow))
    first = [(len(ax.collections), len(ax.lines), len(ax.patches)) for ax in figures[0].axes]
    report.run_figure(describe_run(fast))
    assert figures[0] is figures[1]
    second = [(len(ax.collections), len(ax.lines), len(ax.patches)) for ax in figures[1].axes]
    assert second[2] == first[2]  # the spectrum: one line again, not two
    histogram = figures[1].axes[1]
    assert histogram.get_xlim()[1] < 2 * fast.latency_ns.max() / 1000  # not the slow run's range


def test_verdicts_compare_like_with_like_or_a_named_baseline(tmp_path: Path) -> None:
    """Unrelated techniques get no verdict (issue 17: '+70819.9 % regressed'); runs of one
    technique and pairs are judged against the first of them; --baseline judges all."""
    from jitterlab.describe.report import build_report

    mutex = make_run(tmp_path, latency_clusters(1, 5_000), technique="mutex")
    spin = make_run(tmp_path, latency_clusters(2, 5_000) // 20, technique="spin")
    html = build_report([mutex, spin])
    assert 'class="verdict-' not in html and "No two runs measure the same technique and pairs" in html
    mutex_rr = make_run(tmp_path, latency_clusters(3, 5_000), technique="mutex")
    html = build_report([mutex, spin, mutex_rr])
    assert html.count('class="verdict-') == 1  # mutex against mutex only
    html = build_report([mutex, spin, mutex_rr], baseline_id=spin.id)
    assert html.count('class="verdict-') == 2 and "Against the baseline" in html


def test_each_technique_has_one_colour_and_each_policy_one_marker(tmp_path: Path) -> None:
    from jitterlab.describe.overview import styles

    runs = []
    for technique in ("mutex", "spin"):
        for policy in ("other", "rr"):
            run = make_run(tmp_path, latency_clusters(5, 1_000), technique=technique)
            run.meta["config"]["policy"] = policy
            runs.append(run)
    style = styles(runs)
    colours = {(r.config["technique"], style[r.id].colour) for r in runs}
    markers = {(r.config["policy"], style[r.id].marker, style[r.id].linestyle) for r in runs}
    assert len(colours) == 2 and len({c for _t, c in colours}) == 2
    assert len(markers) == 2 and len({m for _p, m, _l in markers}) == 2


def test_the_report_baseline_option(tmp_path: Path) -> None:
    store = tmp_path / "s"
    a = make_run(store, latency_clusters(1, 5_000), technique="mutex")
    make_run(store, latency_clusters(2, 5_000), technique="spin")
    out = tmp_path / "r.html"
    done = run_cli("report", "-o", str(out), "--baseline", a.id, "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert out.read_text().count('class="verdict-') == 1


def test_report_percentiles_are_columns_with_the_runs_exact_values(tmp_path: Path) -> None:
    """``report --percentiles`` (issue 26 item 5): each run's section has a table whose
    columns are the asked levels and whose cells are the run's exact values, the same
    numbers ``show --percentiles`` gives."""
    import json
    import re

    store = tmp_path / "s"
    latency = latency_clusters(3, 8_000)
    run = make_run(store, latency, technique="mutex")
    out = tmp_path / "r.html"
    done = run_cli("report", "-o", str(out), "--percentiles", "50,99,99.9,99.99,max", "--store", str(store))
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    table = html.split("chosen percentiles (exact, type 7)</div>", 1)[1].split("</table>", 1)[0]
    assert re.findall(r"<th>([^<]*)</th>", table) == ["p50", "p99", "p99.9", "p99.99", "max"]
    cells = [float(v) for v in re.findall(r"data-ns='([^']*)'", table)]
    # 8 160 samples resolve p99 but not p99.9 or p99.99 (8 and 0.8 beyond): no bare number there
    assert table.count("not resolved") == 2
    expected = np.percentile(latency.astype(np.float64), [50, 99, 100])
    assert cells == pytest.approx(list(expected), rel=0, abs=1e-6)
    assert cells[-1] == latency.max()
    shown = run_cli("show", run.id, "--json", "--percentiles", "50,99,99.9,99.99,max", "--store", str(store))
    assert list(json.loads(shown.stdout)["percentiles_ns"].values()) == tidy_json(
        [
            cells[0],
            cells[1],
            None,
            None,
            cells[2],
        ]
    )
    # over several runs the overview holds one row per run with the same values
    other = make_run(store, latency_clusters(4, 6_000), technique="spin")
    two = tmp_path / "two.html"
    done = run_cli("report", "-o", str(two), "--percentiles", "50,99,99.9,99.99,max", "--store", str(store))
    assert done.returncode == 0, done.stderr
    overview = two.read_text().split("<h3>Chosen percentiles (exact, type 7)</h3>", 1)[1].split("</table>")[0]
    rows = {
        label: [float(v) for v in re.findall(r"data-ns='([^']*)'", row)]
        for label, row in re.findall(r"<tr><td>([^<]*)</td>(.*?)</tr>", overview)
    }
    assert rows == {run.label: cells, other.label: rows[other.label]} and len(rows[other.label]) == 3
    assert rows[other.label][-1] == latency_clusters(4, 6_000).max()
    # without the option the report has no such table; a bad list is one line and exit 2
    plain = tmp_path / "plain.html"
    assert run_cli("report", "-o", str(plain), "--store", str(store)).returncode == 0
    assert "chosen percentiles" not in plain.read_text()
    bad = run_cli("report", "-o", str(plain), "--percentiles", "50,101", "--store", str(store))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "101" in bad.stderr


def active_children_during(run_jobs: Any) -> set[int]:
    """The worker pids that answer six jobs of ``run_jobs``: each job sleeps a little, so every
    worker of a pool takes one."""
    return set(run_jobs([(_sleep_then_pid, (0.2,)) for _ in range(6)], None))


def _sleep_then_pid(seconds: float) -> int:
    import os
    import time

    time.sleep(seconds)
    return os.getpid()


def test_a_small_report_renders_in_this_process_and_keeps_no_runs_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25 (≤ 300 MB PSS for the main job's report): at most IN_PROCESS_SAMPLES samples
    in all render here, one run in memory at a time, the same HTML as the workers give; a
    larger report forks workers where there are two CPUs or more."""
    import os
    import re

    from jitterlab.describe import report as rep

    runs = [make_run(tmp_path, latency_clusters(k, 5_000), technique="mutex") for k in range(3)]
    here = rep.build_report(runs)
    assert not any(r.loaded for r in runs), "a run's columns outlived its section"
    with rep._workers(3 * 5_000) as run_jobs:
        assert run_jobs([(os.getpid, ())], None) == [os.getpid()]
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: every report renders in this process")
    with rep._workers(rep.IN_PROCESS_SAMPLES + 1) as run_jobs:
        assert run_jobs([(os.getpid, ())], None) != [os.getpid()]
    # never more workers than jobs: one huge run forks one worker, not one per CPU
    with rep._workers(rep.IN_PROCESS_SAMPLES + 1, 1) as run_jobs:
        assert len(active_children_during(run_jobs)) == 1
    with rep._workers(rep.IN_PROCESS_SAMPLES + 1, 5) as run_jobs:
        assert len(active_children_during(run_jobs)) == min(5, len(os.sched_getaffinity(0)))
    monkeypatch.setattr(rep, "IN_PROCESS_SAMPLES", 0)
    forked = rep.build_report(runs)
    stamp = re.compile(r"generated [0-9-]+ [0-9:]+ UTC")
    assert stamp.sub("", forked) == stamp.sub("", here)

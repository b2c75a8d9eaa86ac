"""``jitterlab paper``: every table number equals describe/compare --json, the LaTeX compiles
with a real TeX and renders, the figures are vector with text as text and fonts embedded,
and a folder that is not a paper's is refused (issue 39)."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from conftest import OtherUser, assert_one_line_error, latency_clusters, make_run, run_main
from jitterlab.describe.paper.tables import Column, Estimate, Table, latex, shown

LEVELS = "99,99.9,99.99"


@pytest.fixture(scope="module")
def paper(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """Four runs (two alike: one comparison), written by ``paper`` once for the module."""
    root = tmp_path_factory.mktemp("paper")
    store = root / "results"
    runs = [
        make_run(store, latency_clusters(1, 20_000), technique="mutex", pairs=1),
        make_run(store, latency_clusters(2, 20_000) + 500, technique="mutex", pairs=1),
        make_run(store, latency_clusters(3, 20_000), technique="mutex", pairs=2),
        make_run(store, latency_clusters(4, 20_000) // 2, technique="spin", pairs=2),
    ]
    ids = [r.id for r in runs]
    out = root / "paper"
    from jitterlab.cli.main import main  # the function (jitterlab.cli.main is the module once imported)

    assert main(["paper", *ids, "-o", str(out), "--store", str(store), "--percentiles", LEVELS]) == 0
    return store, out, ids


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_paper_writes_every_part(paper: tuple[Path, Path, list[str]]) -> None:
    _store, out, _ids = paper
    for name in ("table1", "comparison"):
        for ext in ("tex", "md", "csv"):
            assert (out / "tables" / f"{name}.{ext}").is_file()
    for name in ("spectrum", "scaling", "qq", "effects"):
        for size in ("column", "page"):
            for ext in ("pdf", "svg"):
                assert (out / "figures" / f"{name}-{size}.{ext}").stat().st_size > 1000
    for name in ("histograms", "timelines"):  # one panel per run; four runs: page wide only
        assert (out / "figures" / f"{name}-page.pdf").is_file()
        assert not (out / "figures" / f"{name}-column.pdf").exists()
    for name in (
        "methods.md",
        "methods.tex",
        "checklist.md",
        "runs.csv",
        "references.bib",
        "paper.md",
        ".jitterlab-paper",
    ):
        assert (out / name).is_file(), name


def test_table1_numbers_equal_describe_json(
    paper: tuple[Path, Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    store, out, ids = paper
    rows = _csv(out / "tables" / "table1.csv")
    assert len(rows) == len(ids)
    tex = (out / "tables" / "table1.tex").read_text()
    md = (out / "tables" / "table1.md").read_text()
    unit = re.search(r"median \((\S+)\)", md)
    assert unit is not None
    scale = {"ns": 1, "µs": 1e3, "ms": 1e6}[unit.group(1)]
    for row, run_id in zip(rows, ids, strict=True):
        code, stdout, _ = run_main(
            ["describe", run_id, "--json", "--store", str(store), "--percentiles", LEVELS], capsys
        )
        assert code == 0
        d = json.loads(stdout)
        s = d["summary_ns"]
        assert int(row["n"]) == s["count"]
        assert float(row["median_ns"]) == s["p50"]
        assert float(row["mean_ns"]) == s["mean"]
        assert float(row["max_ns"]) == s["max"]
        intervals = {q["level"]: q for q in d["percentiles"]}
        for key in ("median", "p99", "p99.9", "p99.99"):
            q = intervals[50.0 if key == "median" else float(key[1:])]
            # every interval is describe --json's: the same ends, resolution and method
            assert row[f"{key}_resolved"] == str(q["resolved"]).lower()
            assert row[f"{key}_ci_method"] == q["method"]
            assert (float(row[f"{key}_ci_low_ns"]) if q["ci_low"] is not None else None) == q["ci_low"]
            assert (float(row[f"{key}_ci_high_ns"]) if row[f"{key}_ci_high_ns"] else None) == q["ci_high"]
            if key == "median":
                continue
            if d["percentiles_ns"][key] is None:  # not resolved: describe gives no number, paper marks it
                assert row[f"{key}_resolved"] == "false"
                continue
            assert float(row[f"{key}_ns"]) == d["percentiles_ns"][key]
        # the LaTeX and Markdown show the same numbers, rounded in the table's unit
        decimals = int(re.findall(r"D\{\.\}\{\.\}\{\d+\.(\d+)\}", tex)[1])  # n, then the median
        median = f"{s['p50'] / scale:.{decimals}f}"
        assert median in tex and median in md


def test_comparison_numbers_equal_compare_json(
    paper: tuple[Path, Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    store, out, ids = paper
    rows = _csv(out / "tables" / "comparison.csv")
    code, stdout, _ = run_main(["compare", ids[0], ids[1], "--json", "--store", str(store)], capsys)
    assert code == 0
    c = json.loads(stdout)
    assert len(rows) == len(c["percentiles"])  # the one like-with-like pair (mutex ×1)
    for row, p in zip(rows, c["percentiles"], strict=True):
        assert float(row["A_value_ns"]) == p["a_ns"]
        assert float(row["B_value_ns"]) == p["b_ns"]
        assert float(row["change"]) == p["relative"]
        assert row["verdict"] == p["verdict"]
        if p["ci_low"] is None:
            assert row["CI_low"] == ""
        else:
            assert float(row["CI_low"]) == p["ci_low"] and float(row["CI_high"]) == p["ci_high"]


def test_intervals_of_clustered_spikes_are_describes_block_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Spikes that come in bursts make the samples dependent: the dispersion test picks the
    block interval, and the paper's CSV has describe --json's (a private binomial interval
    was narrower)."""
    rng = np.random.default_rng(39)
    x = rng.normal(10_000, 300, 40_000)
    for start in rng.choice(40_000 - 200, 12, replace=False):  # 12 bursts of 150 slow samples
        x[start : start + 150] = rng.normal(200_000, 5_000, 150)
    store = tmp_path / "results"
    run = make_run(store, x.astype(np.int64))
    out = tmp_path / "paper"
    code, _, _ = run_main(
        ["paper", run.id, "-o", str(out), "--store", str(store), "--percentiles", LEVELS], capsys
    )
    assert code == 0
    (row,) = _csv(out / "tables" / "table1.csv")
    code, stdout, _ = run_main(
        ["describe", run.id, "--json", "--store", str(store), "--percentiles", LEVELS], capsys
    )
    assert code == 0
    intervals = {q["level"]: q for q in json.loads(stdout)["percentiles"]}
    methods = []
    for key, level in (("median", 50.0), ("p99", 99.0), ("p99.9", 99.9), ("p99.99", 99.99)):
        q = intervals[level]
        methods.append(row[f"{key}_ci_method"])
        assert row[f"{key}_ci_method"] == q["method"]
        assert float(row[f"{key}_ci_low_ns"]) == q["ci_low"]
        assert (float(row[f"{key}_ci_high_ns"]) if row[f"{key}_ci_high_ns"] else None) == q["ci_high"]
    assert "block" in methods
    assert "block method for" in (out / "methods.md").read_text()


def test_unresolved_level_is_marked_in_every_format() -> None:
    t = Table("t", "caption", [Column("level", "text"), Column("p99.99", "ns", 1, interval=True)])
    t.rows = [["a", Estimate(12_345.0, 12_000.0, None, resolved=False)]]
    assert shown(t, t.columns[1], 12_345.0) == "12.3"
    assert r"12.3^{\dag}" in latex(t)
    assert "[12.0, —)" in latex(t).replace("---", "—")


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="TeX (texlive) is installed by scripts/setup.sh")
def test_latex_compiles_renders_and_holds_the_numbers(
    paper: tuple[Path, Path, list[str]], tmp_path: Path
) -> None:
    _store, out, _ids = paper
    figures = [*sorted((out / "figures").glob("*-column.pdf"))[:6], out / "figures" / "spectrum-page.pdf"]
    doc = "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage[T1]{fontenc}\usepackage{booktabs}\usepackage{dcolumn}\usepackage{graphicx}",
            r"\usepackage{textcomp}\usepackage[margin=2cm]{geometry}",
            r"\begin{document}",
            rf"\input{{{out}/tables/table1.tex}}",
            rf"\input{{{out}/tables/comparison.tex}}",
            rf"\input{{{out}/methods.tex}}",
            *[rf"\includegraphics[width=\linewidth]{{{p}}}" for p in figures],
            r"\bibliographystyle{plain}",
            rf"\bibliography{{{out}/references}}",
            r"\end{document}",
        ]
    )
    (tmp_path / "doc.tex").write_text(doc)
    for step in (["pdflatex"], ["bibtex"], ["pdflatex"]):
        arg = "doc" if step == ["bibtex"] else "doc.tex"
        r = subprocess.run(
            [*step, *(["-interaction=nonstopmode", "-halt-on-error"] if step != ["bibtex"] else []), arg],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert r.returncode == 0, r.stdout[-3000:]
    pdf = tmp_path / "doc.pdf"
    subprocess.run(["pdftoppm", "-r", "40", "-png", str(pdf), str(tmp_path / "page")], check=True, timeout=60)
    pages = sorted(tmp_path.glob("page*.png"))
    assert len(pages) >= 2
    from matplotlib.image import imread

    for page in pages:
        pixels = imread(page)
        assert (pixels[..., :3].mean(axis=2) < 0.5).mean() > 0.001, f"{page.name} is blank"
    text = subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    table_numbers = re.findall(
        r"^(?:[^&]*&){5}\s*([0-9.]+)", (out / "tables" / "table1.tex").read_text(), re.M
    )
    assert table_numbers and all(n in text for n in table_numbers)


def test_svgs_keep_text_as_text_and_pdfs_embed_fonts(paper: tuple[Path, Path, list[str]]) -> None:
    _store, out, _ids = paper
    svgs = sorted((out / "figures").glob("*.svg"))
    assert svgs
    for svg in svgs:
        root = ET.parse(svg).getroot()
        texts = [t for t in root.iter("{http://www.w3.org/2000/svg}text") if "".join(t.itertext()).strip()]
        assert texts, f"{svg.name}: no <text>"
    if shutil.which("pdffonts") is None:
        pytest.skip("pdffonts (poppler-utils) is installed by scripts/setup.sh")
    for pdf in sorted((out / "figures").glob("*.pdf")):
        lines = subprocess.run(
            ["pdffonts", str(pdf)], capture_output=True, text=True, check=True
        ).stdout.splitlines()[2:]
        assert lines, f"{pdf.name}: no fonts"
        for line in lines:
            assert re.search(r"\s(yes)\s+(yes|no)\s+(yes|no)\s+\d+\s+\d+\s*$", line), f"{pdf.name}: {line}"


def test_methods_and_checklist_come_from_the_runs(paper: tuple[Path, Path, list[str]]) -> None:
    _store, out, ids = paper
    methods = (out / "methods.md").read_text()
    assert "per run from 20,410 to 20,410" in methods  # latency_clusters(n=20000): 20000 + 400 + 10
    assert "The clock read cost (median) was not recorded." in methods  # synthetic runs: no floor
    checklist = (out / "checklist.md").read_text()
    assert "- [ ] **Measurement method and its own error" in checklist
    assert "- [x] **Distribution and tails" in checklist
    rows = _csv(out / "runs.csv")
    assert [r["id"] for r in rows] == ids
    for r in rows:
        assert re.fullmatch(r"[0-9a-f]{64}", r["sha256"])


def test_refuses_a_folder_that_is_not_a_papers(
    paper: tuple[Path, Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, _out, ids = paper
    foreign = tmp_path / "thesis"
    foreign.mkdir()
    (foreign / "chapter1.tex").write_text("mine")
    code, _, err = run_main(["paper", ids[0], "-o", str(foreign), "--store", str(store)], capsys)
    assert code == 2
    assert_one_line_error(err)
    assert sorted(p.name for p in foreign.iterdir()) == ["chapter1.tex"]
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    code, _, err = run_main(["paper", ids[0], "-o", str(a_file), "--store", str(store)], capsys)
    assert code == 2
    assert_one_line_error(err)


def test_rewrites_its_own_folder_dropping_stale_files(
    paper: tuple[Path, Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, _out, ids = paper
    out = tmp_path / "p"
    assert run_main(["paper", *ids[:2], "-o", str(out), "--store", str(store)], capsys)[0] == 0
    assert (out / "figures" / "effects-page.svg").is_file()
    assert run_main(["paper", ids[2], "-o", str(out), "--store", str(store)], capsys)[0] == 0
    assert not (out / "figures" / "effects-page.svg").exists()  # the earlier paper's: no comparison now
    assert not (out / "tables" / "comparison.csv").exists()
    assert len(_csv(out / "tables" / "table1.csv")) == 1


def test_refuses_an_unwritable_folder(other_user: OtherUser) -> None:
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="jl-paper-"))  # /tmp: the other user can reach it
    try:
        os.chmod(top, 0o755)
        parent = top / "root-only"
        parent.mkdir(mode=0o755)
        home = top / "home"
        home.mkdir()
        os.chown(home, other_user.uid, other_user.gid)
        for target in (parent / "paper", parent):  # to create in a folder it cannot write; to write into one
            r = other_user.jitterlab("paper", "-o", str(target), "--store", str(home / "results"), home=home)
            assert r.returncode == 2, r.stderr
            assert_one_line_error(
                r.stderr.replace("Matplotlib is building the font cache; this may take a moment.", "")
            )
            assert "not writable" in r.stderr
            assert list(parent.iterdir()) == []
    finally:
        shutil.rmtree(top)


def test_figures_drawn_in_two_processes_are_those_drawn_in_one(tmp_path: Path) -> None:
    """The forked half draws the same files (SVGs byte for byte) and the split loses none;
    an error in the child is raised in the parent."""
    from jitterlab.describe.paper import figures
    from jitterlab.describe.paper.build import build

    store = tmp_path / "results"
    runs = [
        make_run(store, latency_clusters(5, 5_000), technique="mutex", pairs=1),
        make_run(store, latency_clusters(6, 5_000), technique="mutex", pairs=1),
        make_run(store, latency_clusters(7, 5_000), technique="mutex", pairs=2),
    ]
    data = build(runs, None, None)
    jobs = figures.figure_jobs(data)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    drawn_one = figures._draw(jobs, one)
    drawn_two = figures._draw_in_two(jobs, two)
    assert drawn_one == drawn_two and sum(drawn_one) >= 10
    assert sorted(p.name for p in one.iterdir()) == sorted(p.name for p in two.iterdir())
    for svg in one.glob("*.svg"):
        assert svg.read_bytes() == (two / svg.name).read_bytes(), svg.name
    _mine, theirs = figures._split(jobs)
    bad = list(jobs)
    bad[theirs[0]] = figures.FigureJob("bad", lambda: 1 / 0, None, 1.0)
    with pytest.raises(ZeroDivisionError):
        figures._draw_in_two(bad, tmp_path / "two")


def test_histogram_only_runs_get_their_own_table_as_describe_gives_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A histogram-only run is tabulated apart (HdrHistogram's definition, binomial-counts
    intervals, the numbers of describe --json), never in Table 1, and paper.md says so."""
    import io

    from jitterlab.store.hdr.histogram import Histogram
    from jitterlab.store.hdr.log import LogWriter

    store = tmp_path / "results"
    sample = make_run(store, latency_clusters(8, 5_000), technique="mutex")
    rng = np.random.default_rng(3)
    text = io.StringIO()
    log = LogWriter(text)
    log.version()
    log.start_time(1_700_000_000_000)
    log.legend()
    for i in range(3):  # three one-second intervals of a heavy-tailed mixture
        h = Histogram.auto(3)
        values = np.concatenate([rng.lognormal(9.5, 0.3, 400), rng.pareto(1.5, 20) * 50_000 + 20_000])
        v, c = np.unique(values.astype(np.int64), return_counts=True)
        h.record(v, c)
        log.interval(1_700_000_000 + i, 1_700_000_001 + i, h)
    (tmp_path / "host.hlog").write_text(text.getvalue())
    code, stdout, _ = run_main(["import", str(tmp_path / "host.hlog"), "--store", str(store)], capsys)
    assert code == 0
    hist_id = (
        stdout.split()[0] if stdout.strip() else next(p.name for p in store.iterdir() if "import" in p.name)
    )
    out = tmp_path / "paper"
    code, _, _ = run_main(["paper", "-o", str(out), "--store", str(store), "--percentiles", LEVELS], capsys)
    assert code == 0
    table1 = _csv(out / "tables" / "table1.csv")
    assert [r["run"] for r in table1] == ["#1"]  # the sample run only
    (row,) = _csv(out / "tables" / "histograms.csv")
    assert row["run"] == "#2"
    code, stdout, _ = run_main(["describe", hist_id, "--json", "--store", str(store)], capsys)
    assert code == 0
    d = json.loads(stdout)
    (chosen,) = [s for s in d["streams"] if s["tag"] == d["tag"]]
    assert int(row["n"]) == chosen["summary"]["count"]
    assert float(row["mean_ns"]) == chosen["summary"]["mean"]
    assert d["percentile_definition"].startswith("hdrhistogram")
    intervals = {q["level"]: q for q in d["percentiles"]}
    for key, level in (("median", 50.0), ("p99", 99.0), ("p99.9", 99.9), ("p99.99", 99.99)):
        q = intervals[level]
        assert row[f"{key}_ci_method"] == q["method"] == "binomial-counts"
        assert (float(row[f"{key}_ns"]) if row[f"{key}_ns"] else None) == q["value"]
        assert (float(row[f"{key}_ci_low_ns"]) if row[f"{key}_ci_low_ns"] else None) == q["ci_low"]
        assert (float(row[f"{key}_ci_high_ns"]) if row[f"{key}_ci_high_ns"] else None) == q["ci_high"]
        assert row[f"{key}_resolved"] == str(q["resolved"]).lower()
    index = (out / "paper.md").read_text()
    assert "tables/histograms" in index and "holds a histogram only" in index
    assert sample.id not in index.split("## Left out")[-1]


def test_replication_runs_get_seed_003_tables_3_and_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real `repl bench` (N = 3, 50 Hz, 1 s): its own Table 1 group, and Tables 3–4 with the
    rows the report shows (describe/replication.py), in LaTeX, Markdown and CSV."""
    from jitterlab.describe.replication import replication_rows, table3_layout, table4_layout
    from jitterlab.store import ResultsStore

    store = tmp_path / "results"
    argv = ["repl", "bench", "--clients", "3", "--rate", "50", "--duration", "1s", "--warmup", "0.3s"]
    code, _, err = run_main([*argv, "--store", str(store)], capsys)
    assert code == 0, err
    make_run(store, latency_clusters(9, 5_000), technique="mutex")
    out = tmp_path / "paper"
    code, _, err = run_main(["paper", "-o", str(out), "--store", str(store)], capsys)
    assert code == 0, err
    runs, _ = ResultsStore(store).scan()
    rows = replication_rows(runs)
    assert len(rows) == 1
    for name, layout in (("replication-table3", table3_layout), ("replication-table4", table4_layout)):
        _headers, body = layout(rows)
        with (out / "tables" / f"{name}.csv").open() as f:
            got = list(csv.reader(f))[1:]
        assert got == body
        assert (out / "tables" / f"{name}.tex").read_text().count(r"\\") >= 2
        md = (out / "tables" / f"{name}.md").read_text()
        assert all(cell.replace("|", "\\|") in md for cell in body[0])
    assert (out / "tables" / "table1-2.csv").is_file()  # the repl run is not beside the mutex run


def test_build_reads_and_sorts_each_run_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparisons use the runs as their descriptions held them: every run's samples
    are read once and sorted once (the paper read and sorted each compared run twice), and
    the verdicts are those of ``compare_runs`` of the runs read afresh."""
    import jitterlab.store.run as store_run
    from jitterlab.describe.compare import compare_runs
    from jitterlab.describe.paper.build import DEFAULT_PERCENTILES, build, describe_for_paper
    from jitterlab.store import ResultsStore

    store = tmp_path / "results"
    for k, (technique, pairs) in enumerate((("mutex", 1), ("mutex", 1), ("spin", 1), ("spin", 1))):
        make_run(store, latency_clusters(k + 1, 20_000) + 300 * k, technique=technique, pairs=pairs)
    runs, _ = ResultsStore(store).scan()
    reads: list[str] = []
    real = store_run._read_samples

    def counted(run: store_run.Run) -> object:
        reads.append(run.id)
        return real(run)

    monkeypatch.setattr(store_run, "_read_samples", counted)
    sorts = 0
    real_sort = np.sort

    def counted_sort(a: np.ndarray, *args: object, **kwargs: object) -> np.ndarray:
        nonlocal sorts
        sorts += np.asarray(a).size > 10_000  # a whole run (the tests subsample nothing here)
        return real_sort(a, *args, **kwargs)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(np, "sort", counted_sort)
    for run in runs:  # the descriptions alone
        describe_for_paper(run, DEFAULT_PERCENTILES, None, None, None)
    describing, sorts = sorts, 0
    reads.clear()
    data = build(runs, None, None)
    assert len(data.comparisons) == 2
    assert sorted(reads) == sorted(r.id for r in runs)  # once each
    assert sorts == describing  # the comparisons sort nothing again
    monkeypatch.undo()
    for rc in data.comparisons:
        a, b = (next(r for r in ResultsStore(store).scan()[0] if r.id == x.id) for x in (rc.a, rc.b))
        fresh = compare_runs(a, b).result
        mine = [repr((d.verdict, d.relative, d.ci_low, d.ci_high)) for d in rc.result.percentiles]
        assert mine == [repr((d.verdict, d.relative, d.ci_low, d.ci_high)) for d in fresh.percentiles]
        assert rc.result.ks_statistic == fresh.ks_statistic  # from the held sorts; scipy's there

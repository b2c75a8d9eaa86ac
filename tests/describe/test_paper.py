"""``jitterlab paper``: every table number equals describe/compare --json, the LaTeX compiles
with a real TeX and renders, the figures are vector with text as text and fonts embedded,
and a folder that is not a paper's is refused (issue 39)."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import socket
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

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


def test_unresolved_level_is_printed_as_describe_prints_it_in_every_format() -> None:
    """An unresolved level is "≥ x" (its interval's lower end) or "not resolved", as
    describe/tables.py ``level_cell`` prints it, never its value; the CSV leaves the value
    empty and says false in ``_resolved`` (issue 38's rule in the paper)."""
    from jitterlab.describe.paper.tables import csv_text, markdown
    from jitterlab.describe.tables import level_cell
    from jitterlab.stats.quantile_ci import QuantileInterval

    t = Table("t", "caption", [Column("level", "text"), Column("p99.99", "ns", 1, interval=True)])
    t.rows = [["a", Estimate(12_345.0, 12_000.0, None, resolved=False)], ["b", Estimate(12_500.0)]]
    assert shown(t, t.columns[1], 12_345.0) == "12.3"
    tex, md, text = latex(t), markdown(t), csv_text(t)
    assert "12.3" not in tex and "12.3" not in md and "12345" not in text
    assert r"\multicolumn{1}{c}{$\geq$ 12.0}" in tex
    assert "[12.0, —)" in tex.replace("---", "—")
    assert "| ≥ 12.0 |" in md
    q = QuantileInterval(99.99, 12_345.0, 12_000.0, None, False, "binomial")
    assert level_cell(12_345.0, 20_000, 99.99, q).startswith("≥ ")  # describe prints the bound too
    rows = list(csv.DictReader(text.splitlines()))
    assert rows[0]["p99.99_ns"] == "" and rows[0]["p99.99_resolved"] == "false"
    assert rows[0]["p99.99_ci_low_ns"] == "12000.0"
    assert rows[1]["p99.99_ns"] == "12500.0" and rows[1]["p99.99_resolved"] == "true"
    bare = Table("u", "caption", [Column("p99", "ns", 1, resolved=True)], [[Estimate(5.0, resolved=False)]])
    assert "not resolved" in markdown(bare) and "not resolved" in latex(bare)
    assert list(csv.DictReader(csv_text(bare).splitlines())) == [{"p99_ns": "", "p99_resolved": "false"}]


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
    provenance = _csv(out / "runs.csv")
    assert [(r["run"], r["id"]) for r in provenance] == [("#1", sample.id), ("#2", hist_id)]
    import hashlib

    stored = hashlib.sha256((store / hist_id / "histogram.hlog").read_bytes()).hexdigest()
    assert provenance[1]["sha256"] == stored and "histogram" in provenance[1]["sha256_of"]
    assert provenance[1]["command"].startswith("(imported from ") and "host.hlog" in provenance[1]["command"]
    assert int(provenance[1]["samples"]) == chosen["summary"]["count"]
    index = (out / "paper.md").read_text()
    assert "tables/histograms" in index and "holds a histogram only" in index
    assert sample.id not in index.split("## Left out")[-1]


def test_replication_runs_get_seed_003_tables_3_and_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real `repl bench` (N = 3, 50 Hz, 1 s): its own Table 1 group, and Tables 3–4 with the
    rows the report shows (describe/replication.py), in LaTeX, Markdown and CSV."""
    from jitterlab.describe.replication import replication_rows
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
    for name in ("replication-table3", "replication-table4"):
        assert (out / "tables" / f"{name}.tex").read_text().count(r"\\") >= 2
        md = (out / "tables" / f"{name}.md").read_text()
        assert md.count("\n|") >= 3
    assert (out / "tables" / "table1-2.csv").is_file()  # the repl run is not beside the mutex run
    _check_replication_csv(out, runs)


def _check_replication_csv(out: Path, runs: list[Any]) -> None:
    """Tables 3–4's CSV hold numbers equal to ``repl bench --json``'s rows (describe/
    replication.py ``replication_json``: ms; KB/s = bytes/s / 1000), an unresolved level
    empty with ``_resolved`` false."""
    from jitterlab.core.percentiles import is_resolved
    from jitterlab.core.tidy import tidy_float, tidy_json
    from jitterlab.describe.replication import replication_json

    (raw,) = replication_json(runs)["rows"]
    j = tidy_json(raw)  # as --json prints it (12 significant digits)
    (t3,) = _csv(out / "tables" / "replication-table3.csv")
    (t4,) = _csv(out / "tables" / "replication-table4.csv")
    assert int(t3["N"]) == j["clients"]
    for prefix, key in (("interval", "update_interval_ms"), ("latency", "update_latency_ms")):
        s = j[key]
        assert float(t3[f"{prefix}_mean_ms"]) == s["mean"] and float(t3[f"{prefix}_SD_ms"]) == s["std"]
        for level, name in ((50.0, "p50"), (99.0, "p99"), (99.9, "p99_9")):
            col = f"{prefix}_p{level:g}"
            resolved = is_resolved(s["count"], level)
            assert t3[f"{col}_resolved"] == str(resolved).lower()
            assert t3[f"{col}_ms"] == (repr(s[name]) if resolved else "")
    assert float(t4["server_fps_1/s"]) == j["server_ticks_per_s"]
    assert float(t4["ping_mean_ms"]) == j["ping_ms"]["mean"]
    rates = raw["rates_bytes_per_s"]
    assert float(t4["server_out_KB/s"]) == tidy_float(rates["server_out"] / 1000)
    assert float(t4["client_in_KB/s"]) == tidy_float(rates["client_in_avg"] / 1000)


GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "store"
OTHER_KINDS = (
    "20261128-132826-mtp-frames-fd72",  # mtp ingest of a frame log
    "20261128-132829-monitor-golden-18938-2337",  # monitor serve, two trials, no baseline
    "20261128-132800-net-ping-udp-9341",  # net bench --scenario ping
    "20261128-132813-repl-n3-90hz-b07f",  # repl bench, N = 3
)


@pytest.fixture(scope="module")
def other_kinds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The golden corpus's real mtp, monitor, net and repl runs (copied), written by ``paper``."""
    root = tmp_path_factory.mktemp("kinds")
    store = root / "results"
    for run_id in OTHER_KINDS:
        shutil.copytree(GOLDEN / run_id, store / run_id)
    out = root / "paper"
    from jitterlab.cli.main import main

    assert main(["paper", *OTHER_KINDS, "-o", str(out), "--store", str(store), "--percentiles", LEVELS]) == 0
    return store, out


def _describe_json(store: Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, stdout, err = run_main(["describe", run_id, "--json", "--store", str(store)], capsys)
    assert code == 0, err
    return dict(json.loads(stdout))


def _num(cell: str) -> float | None:
    return float(cell) if cell else None


def _assert_levels_as_described(row: dict[str, str], d: dict[str, Any]) -> None:
    """The row's levels (LEVELS: median, p99, p99.9, p99.99) are describe --json's: value,
    interval, resolved and the interval's method."""
    levels = {q["level"]: q for q in d["percentiles"]}
    for key, level in (("median", 50.0), ("p99", 99.0), ("p99.9", 99.9), ("p99.99", 99.99)):
        q = levels[level]
        assert _num(row[f"{key}_ns"]) == q["value"]
        assert _num(row[f"{key}_ci_low_ns"]) == q["ci_low"] and _num(row[f"{key}_ci_high_ns"]) == q["ci_high"]
        assert row[f"{key}_resolved"] == str(q["resolved"]).lower() and row[f"{key}_ci_method"] == q["method"]


def test_mtp_runs_get_their_estimators_and_windows_as_describe_gives_them(
    other_kinds: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store, out = other_kinds
    run_id = OTHER_KINDS[0]
    d = _describe_json(store, run_id, capsys)
    (row,) = _csv(out / "tables" / "mtp.csv")
    assert row["method"] == "frame-log" and row["estimator"] == "median of the frames"
    assert float(row["latency_ms"]) == d["summary"]["latency_ns"]["p50"] / 1e6
    windows = _csv(out / "tables" / "mtp-windows.csv")
    expected = d["windows"]["rows"]
    assert len(windows) == len(expected) == 20
    for got, w in zip(windows, expected, strict=True):
        assert float(got["start_s"]) == w["start_ns"] / 1e9 and int(got["n"]) == w["count"]
        assert float(got["mean_ns"]) == w["mean_ns"] and float(got["max_ns"]) == w["max_ns"]
        assert _num(got["median_ns"]) == w["p50_ns"]
        assert _num(got["p99_ns"]) == w["p99_ns"] is None and got["p99_resolved"] == "false"
    md = (out / "tables" / "mtp-windows.md").read_text()
    assert md.count("| not resolved |") == 20  # describe prints "not resolved" for each window's p99
    assert "56.25" in (out / "tables" / "mtp.md").read_text()


def test_net_runs_get_seed_004_tables_with_describes_numbers(
    other_kinds: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store, out = other_kinds
    run_id = OTHER_KINDS[2]
    d = _describe_json(store, run_id, capsys)
    (row,) = _csv(out / "tables" / "net-table6.csv")
    s = d["summary"]["latency_ns"]
    assert row["transport"] == "udp" and int(row["pings"]) == s["count"]
    assert (float(row["mean_ns"]), float(row["SD_ns"]), float(row["max_ns"])) == (
        s["mean"],
        s["std"],
        s["max"],
    )
    meta = json.loads((store / run_id / "run.json").read_text())
    assert int(row["lost"]) == meta["net"]["measured_lost"]
    _assert_levels_as_described(row, d)
    assert not {q["level"]: q for q in d["percentiles"]}[99.99]["resolved"]  # "≥ x" in the text tables
    assert "≥ " in (out / "tables" / "net-table6.md").read_text()
    assert r"$\geq$" in (out / "tables" / "net-table6.tex").read_text()


def test_monitor_runs_get_their_trials(other_kinds: tuple[Path, Path]) -> None:
    """A run served without a baseline: its trials with their sample counts, not screened
    (``monitor trials`` refuses such a run: nothing to screen against)."""
    store, out = other_kinds
    meta = json.loads((store / OTHER_KINDS[1] / "run.json").read_text())
    rows = _csv(out / "tables" / "monitor-trials.csv")
    assert [(r["trial"], int(r["n"])) for r in rows] == [
        (t["tag"], t["samples"]) for t in meta["monitor"]["trials"]
    ]
    assert {r["verdict"] for r in rows} == {"not screened"}
    assert "without --baseline" in (out / "tables" / "monitor-trials.md").read_text()


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="TeX (texlive) is installed by scripts/setup.sh")
def test_other_kinds_tables_compile(other_kinds: tuple[Path, Path], tmp_path: Path) -> None:
    _store, out = other_kinds
    names = ["mtp", "mtp-windows", "net-table6", "monitor-trials", "replication-table3", "replication-table4"]
    doc = "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage[T1]{fontenc}\usepackage{booktabs}\usepackage{dcolumn}\usepackage{graphicx}",
            r"\usepackage{textcomp}\usepackage[margin=2cm]{geometry}",
            r"\begin{document}",
            *[rf"\input{{{out}/tables/{n}.tex}}" for n in names],
            r"\end{document}",
        ]
    )
    (tmp_path / "doc.tex").write_text(doc)
    r = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stdout[-3000:]
    text = subprocess.run(
        ["pdftotext", "-layout", str(tmp_path / "doc.pdf"), "-"], capture_output=True, text=True, check=True
    ).stdout
    assert "56.25" in text and "not screened" in text and "not resolved" in text


def test_a_bench_run_records_its_load_and_the_checklist_states_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real bench run records /proc/loadavg before and after (environment.load_average);
    the checklist marks "system load" done with the figure and says recorded is not idle,
    the methods paragraph states it."""
    from conftest import run_cli
    from jitterlab.store import ResultsStore

    store = tmp_path / "results"
    result = run_cli("bench", "--technique", "mutex", "--samples", "3000", "--store", str(store))
    assert result.returncode == 0, result.stderr
    (run,) = ResultsStore(store).runs()
    load = run.meta["environment"]["load_average"]
    assert set(load) == {"before", "after"}
    assert all(isinstance(load[k]["load1"], float) and load[k]["entities"] > 0 for k in load)
    out = tmp_path / "paper"
    code, _, err = run_main(["paper", run.id, "-o", str(out), "--store", str(store)], capsys)
    assert code == 0, err
    checklist = (out / "checklist.md").read_text()
    (line,) = [x for x in checklist.splitlines() if "System load" in x]
    assert line.startswith("- [x]") and f"{load['before']['load1']:.2f} before" in line
    assert "not the same as an idle machine" in line
    methods = (out / "methods.md").read_text()
    assert f"{load['after']['load1']:.2f} after each measurement" in methods


def test_monitor_trials_screened_against_a_baseline_as_monitor_trials_gives_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real `monitor serve --baseline` with two trials written through jitterlab.Monitor
    (one clean, one with spikes): the paper's rows equal `monitor trials --json`."""
    from jitterlab import Monitor
    from jitterlab.monitor import recorder
    from jitterlab.monitor.launch import start_serve, wait_stored

    store = tmp_path / "results"
    rng = np.random.default_rng(39)
    baseline = make_run(store, rng.normal(20_000, 1_000, 20_000).astype(np.int64), technique="mutex")
    channel = f"paper-{os.getpid()}"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        proc = start_serve(channel, store, f"127.0.0.1:{port}", "--baseline", baseline.id, "--duration", "4s")
        clean = rng.normal(20_000, 1_000, 2_000).astype(np.int64)
        spiky = np.concatenate([clean[:1_800], np.full(200, 400_000)])
        with Monitor(channel) as m:
            for tag, values in (("clean", clean), ("spiky", spiky)):
                with m.trial(tag):
                    for v in values:
                        m.record(int(v))
        run_id = wait_stored(proc, timeout=120)
    finally:
        recorder.unlink(channel)
        Path(f"/dev/shm/jitterlab-monitor-{channel}.serve.lock").unlink(missing_ok=True)
    code, stdout, err = run_main(["monitor", "trials", run_id, "--json", "--store", str(store)], capsys)
    assert code == 0, err
    trials = json.loads(stdout)
    out = tmp_path / "paper"
    code, _, err = run_main(["paper", run_id, "-o", str(out), "--store", str(store)], capsys)
    assert code == 0, err
    rows = _csv(out / "tables" / "monitor-trials.csv")
    assert [r["trial"] for r in rows] == [t["trial"] for t in trials] == ["clean", "spiky"]
    for row, t in zip(rows, trials, strict=True):
        assert (int(row["n"]), int(row["outliers"])) == (t["samples"], t["outliers"])
        assert float(row["outlier_share"]) == t["outlier_share"] and float(row["max_ns"]) == t["max_ns"]
        assert float(row["p"]) == t["p_value"] and row["reason"] == t["reason"]
        assert row["verdict"] == ("contaminated" if t["contaminated"] else "clean")
        assert row["by_category"] == "/".join(str(c) for c in t["category_counts"])
    assert [r["verdict"] for r in rows] == ["clean", "contaminated"]


@pytest.mark.slow
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="network namespaces need root and iproute2"
)
def test_net_stream_open_loop_and_frame_tables_equal_describe_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real `net bench` of stream, open loop and frame-sync (udp, 1 s each, ~40 s): seed
    004's Table 5, the open-loop table and Tables 3–4 hold the numbers of describe --json
    and of the runs' net blocks."""
    from jitterlab.store import ResultsStore
    from jitterlab.store.reader import LOCAL
    from jitterlab.store.runs import verified_samples_path

    store = tmp_path / "results"
    argv = ["net", "bench", "--scenario", "stream,open-loop,frame-sync", "--transport", "udp"]
    code, _, err = run_main([*argv, "--duration", "1s", "--warmup", "0.2s", "--store", str(store)], capsys)
    assert code == 0, err
    out = tmp_path / "paper"
    code, _, err = run_main(["paper", "-o", str(out), "--store", str(store), "--percentiles", LEVELS], capsys)
    assert code == 0, err
    runs = {r.config["scenario"] + str(r.config.get("sync", "")): r for r in ResultsStore(store).runs()}
    for r in runs.values():  # /proc/loadavg before and after each run (the checklist's load)
        assert {"before", "after"} <= set(r.meta["environment"]["load_average"])
    for name, scenario in (("net-table5", "stream"), ("net-open-loop", "open-loop")):
        (row,) = _csv(out / "tables" / f"{name}.csv")
        run = runs[scenario]
        d = _describe_json(store, run.id, capsys)
        _assert_levels_as_described(row, d)
        net = run.meta["net"]
        if scenario == "stream":
            assert float(row["throughput_msg/s"]) == pytest.approx(net["msg_per_s"], rel=1e-11)
            assert int(row["received"]) == d["summary"]["latency_ns"]["count"]
            assert float(row["max_ns"]) == d["summary"]["latency_ns"]["max"]
        else:
            raw = LOCAL.summary(verified_samples_path(run), "t_actual_send_ns")
            assert row["uncorrected_p99_resolved"] == "true"
            assert float(row["uncorrected_p99_ns"]) == pytest.approx(raw.p99, rel=1e-11)
            assert float(row["late_sends"]) == pytest.approx(net["late_share"], rel=1e-11)
            assert int(row["max_lag_ns"]) == net["max_lag_ns"]
    frames = _csv(out / "tables" / "net-tables3-4.csv")
    assert [r["sync"] for r in frames] == ["sync", "no sync"]
    for row, key in zip(frames, ("frame-syncTrue", "frame-syncFalse"), strict=True):
        net = runs[key].meta["net"]
        assert float(row["frame_rate_fps"]) == pytest.approx(net["fps"], rel=1e-11)
        assert int(row["render_nodes"]) == net["render_nodes"]


def test_a_video_mtp_runs_estimators_equal_mtp_analyze_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real `mtp analyze` of a synthetic video (tests/mtp's small spec): the paper's MTP
    table has one row per estimator with the latency, trust and windows of its --json."""
    from jitterlab.mtp import synth

    spec = synth.SynthSpec(
        fps=60.0, latency_s=0.0333, duration_s=4.0, width=320, height=240, noise=2.0, seed=1
    )
    video = tmp_path / "v.mp4"
    synth.write_video(video, spec)
    store = tmp_path / "results"
    code, stdout, err = run_main(["mtp", "analyze", str(video), "--json", "--store", str(store)], capsys)
    assert code == 0, err
    result = json.loads(stdout)
    out = tmp_path / "paper"
    code, _, err = run_main(["paper", result["run"], "-o", str(out), "--store", str(store)], capsys)
    assert code == 0, err
    rows = _csv(out / "tables" / "mtp.csv")
    assert [r["estimator"].removesuffix(" (headline)") for r in rows] == list(result["estimators_ms"])
    for r in rows:
        name = r["estimator"].removesuffix(" (headline)")
        assert float(r["latency_ms"]) == pytest.approx(result["estimators_ms"][name], rel=1e-11)
        assert r["estimator"].endswith("(headline)") == (name == result["headline"])
        assert r["method"] == "video-sine" and r["trust"] == result["trust"]
        w = result["windows"]
        assert int(r["windows"]) == w["count"] and float(r["window_s"]) == w["window_s"]
        assert float(r["windows_mean_ms"]) == pytest.approx(w["mean_ms"], rel=1e-11)
        assert float(r["windows_SD_ms"]) == pytest.approx(w["sd_ms"], rel=1e-11)


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


def test_a_run_the_memory_bound_refuses_is_not_blamed_on_its_sample_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    ids = [make_run(store, latency_clusters(seed, 3_000), technique="mutex").id for seed in (1, 2)]
    monkeypatch.setenv("JITTERLAB_MEMORY_LIMIT_MB", "0.05")  # 3 000 samples take 0.24 MB
    code, _, err = run_main(
        ["paper", *ids, "--from", "0.001", "-o", str(tmp_path / "p"), "--store", str(store)], capsys
    )
    assert code == 2
    assert_one_line_error(err.splitlines()[-1])
    last = err.strip().splitlines()[-1]
    assert "MB available" in last and "0.05 MB" in last, last
    assert "16,777,216" not in last, last

"""Side by side against the code before (issue 37's "same speed or better"): what scale.py,
analysis_speed.py, report_speed.py and cluster.py measure, run by this tree and by an older
revision on the same files, in one command, with one table at the end.

The older revision's Python package is taken from git (``git archive REV src/jitterlab``, as
benchmarks/report_speed.py does; the default REV is 3dbcc49, main before issue 37's
redesign) into a temporary folder; both trees use this checkout's C++ core (its
``bin``/``lib``), unless ``--then-native PKG`` names the package folder of REV's own build.
Every command runs as its own process with its tree's ``src`` first on PYTHONPATH,
alternately and in turn first (then, now; now, then; …), so a load that changes meanwhile
weighs on both alike; wall seconds and the peak RSS of the whole process tree come from
benchmarks/treemem.py.

The cases (``--sets``, default all four):

- ``scale`` (benchmarks/scale.py's run and commands) at each of ``--sizes`` (default 1e8,1e9):
  ``show --json`` (stored summary, the file checked), ``show --recompute --percentiles
  50,99,99.9,99.99 --json``, ``describe --json --window 1s``, and below 10⁹ also ``compare
  --json`` of two runs and ``export --format hgrm``; at 10⁹ only show --recompute and describe
  (the others read the same passes), and describe's issue-37 target is checked: ≤ 30 s, ≤ 300 MB;
- ``analysis`` (benchmarks/analysis_speed.py's jitterlab contender: summary, stacked z and 1 s
  windows over in-memory chunks, in a child process) on ``--analysis-samples`` (default 1e8);
- ``report`` (benchmarks/report_speed.py's store: the main job's shape, ``--runs`` runs of
  ``--report-samples`` samples per pair, default 28 × 200 000): ``report --store S -o PAGE``;
- ``cluster`` (benchmarks/cluster.py's commands): ``show --recompute`` and ``describe`` of a
  run of ``--cluster-samples`` (default 1e7) with ``--cluster local:2``.

The generated files are made once by this tree's store code. With ``--reuse DIR`` they are
kept in DIR (``DIR/scale-1e9``, ``DIR/analysis-1e8``, …: stores and arrays) and reused the next
time: the 10⁹ run is 2.2 GB and takes about 3 minutes to make. Without it they go to a temporary
folder that is removed at the end.

Answers: JSON outputs are compared without their ``context`` block (a difference is named by
its first differing path: issue 38 changed some answers on purpose, tests/golden/EXCEPTIONS.md
lists them), hgrm and analysis results as they are, the report's page without the minute it
was generated in: its text, then its plots (against 3dbcc49 the plots differ on purpose: issue
38 item 6 gave every figure one palette, 3fef412).

Printed: a line per case as it finishes (``  NAME: now/then R× time, M× memory; same answer
…``, read by benchmarks/figures.toml), then the table: command, then median (range), now
median (range), ratio now/then (below 1: faster now), the verdict (``slower`` only when every
repeat of now is slower than every repeat of then, ``faster`` the other way round, else
``noise``; ``n/a`` under 3 repeats), the CPU seconds' ratio now/then (the command and the
children it waited for: less sensitive to the load than the wall time), peak MB then/now,
same answer; with the host CPU, the CPU count and the load before and after.

Expected duration at the defaults (3 repeats, so 6 runs of each command; ``--reuse`` with the
files already made; a quiet 2-vCPU host): about 10–15 minutes, an estimate: now's times from
docs/results/scale.md (describe 10⁹ ~25 s, show --recompute 10⁹ ~11 s a run; the 10⁸
analysis, the 28-run report and each cluster command ~6–10 s) and then's from one loaded
repeat at 10⁸ (2026-11-28, load 14–20: then's show ~12× and describe ~4× now's), so describe
of 10⁹ alone may take ~6 minutes. ``--sizes 1e8`` leaves 10⁹ out; ``--only NAMES`` runs only
the commands of those names (as the table prints them: ``--sets scale --sizes 1e9 --only
'describe 1e9'`` is describe's issue-37 target alone). Making the files the
first time adds about 5 minutes quiet (the 10⁹ run: ~3; it took 13 at load 13 and nice 15);
``--make-only`` makes them without timing.

Usage: python benchmarks/engine_against.py [--against REV] [--sets scale,analysis,report,cluster]
       [--sizes 1e8,1e9] [--analysis-samples 1e8] [--runs 28] [--report-samples 200000]
       [--cluster-samples 1e7] [--repeats 3] [--reuse DIR [--make-only]] [--then-native PKG]
       [--only 'describe 1e9,…']
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkout import native_dir_of_installed
from report_speed import extract_before, make_store
from scale import kept, size_name
from treemem import median_range, run_measured

REPO = Path(__file__).resolve().parents[1]
BEFORE = "3dbcc49"
LEVELS = "50,99,99.9,99.99"
SETS = ("scale", "analysis", "report", "cluster")
HEAVY = 10**9  # from this size on, only show --recompute and describe
DESCRIBE_TARGET_S, DESCRIBE_TARGET_MB = 30.0, 300.0  # issue 37: describe of 10⁹


@dataclass(frozen=True)
class Case:
    """One command measured on both trees: its name in the table, its argv after the
    interpreter, how its answers are compared (json, text, analysis, page) and, for a page,
    the file it writes."""

    name: str
    argv: list[str]
    form: str
    page: Path | None = None


def old_tree(rev: str, folder: Path, native: Path | None) -> Path:
    """REV's ``src`` folder, with a C++ core beside its package (this checkout's unless
    ``native``)."""
    src = extract_before(rev, folder)
    installed = native or Path(__import__("jitterlab").__file__).resolve().parent
    for name in ("bin", "lib", "include"):
        if (installed / name).exists():
            (src / "jitterlab" / name).symlink_to((installed / name).resolve())
    return src


def differences(then: Any, now: Any, path: str = "") -> list[str]:
    """Every place the two documents differ, by path (a key only one of them has is named
    ``PATH (only now)`` or ``PATH (only then)``)."""
    if isinstance(then, dict) and isinstance(now, dict):
        found = []
        for key in list(then) + [k for k in now if k not in then]:
            where = f"{path}.{key}".lstrip(".")
            if key not in then or key not in now:
                found.append(f"{where} (only {'now' if key in now else 'then'})")
            else:
                found += differences(then[key], now[key], where)
        return found
    if isinstance(then, list) and isinstance(now, list) and len(then) == len(now):
        return [
            d
            for i, (a, b) in enumerate(zip(then, now, strict=True))
            for d in differences(a, b, f"{path}[{i}]")
        ]
    return [] if then == now else [f"{path} ({str(then)[:30]} then, {str(now)[:30]} now)"]


IMAGE = re.compile(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+")


def same_answer(then: str, now: str, form: str) -> str:
    """yes; or, for JSON, "values yes" when now only adds keys (named); else NO with where
    the answers first differ. A report page: its text (the minute it was generated in left
    out), then its plots."""
    if form in ("json", "analysis"):

        def document(text: str) -> Any:
            value = json.loads(text.strip().splitlines()[-1] if form == "analysis" else text)
            if form == "analysis":
                return value["result"]
            return {k: v for k, v in value.items() if k != "context"} if isinstance(value, dict) else value

        found = differences(document(then), document(now))
        if not found:
            return "yes"
        if all(d.endswith("(only now)") for d in found):
            return "values yes; only now: " + ", ".join(d.removesuffix(" (only now)") for d in found)[:90]
        return f"NO ({len(found)}): {found[0]}"[:120]
    if form == "page":
        then, now = (re.sub(r"generated [0-9-]+ [0-9:]+ UTC", "", t) for t in (then, now))
        text = IMAGE.sub("", then) == IMAGE.sub("", now)
        plots = IMAGE.findall(then) == IMAGE.findall(now)
        return (
            "yes"
            if text and plots
            else f"text {'yes' if text else 'NO'}, plots {'yes' if plots else 'differ'}"
        )
    return "yes" if then == now else "NO"


def scale_cases(folder: Path, sizes: list[int], s2: dict[int, str]) -> list[Case]:
    """scale.py's commands on the run of each size (and compare of it with a second run)."""
    cases = []
    for n in sizes:
        store = folder / f"scale-{size_name(n)}"
        a, s = kept(store, n), ["--store", str(store)]
        tag = size_name(n)
        recompute = ["show", a, "--recompute", "--percentiles", LEVELS, "--json", *s]
        if n < HEAVY:
            cases.append(Case(f"show {tag}", ["show", a, "--json", *s], "json"))
        cases.append(Case(f"show --recompute {tag}", recompute, "json"))
        cases.append(Case(f"describe {tag}", ["describe", a, "--json", "--window", "1s", *s], "json"))
        if n < HEAVY:
            s2[n] = kept(store, n, seed=2026)
            cases.append(Case(f"compare {tag}", ["compare", a, s2[n], "--json", *s], "json"))
            export = ["export", a, "--format", "hgrm", "-o", "-", *s]
            cases.append(Case(f"export hgrm {tag}", export, "text"))
    return cases


def analysis_case(folder: Path, n: int) -> Case:
    """analysis_speed.py's jitterlab contender on its arrays of n samples (made once)."""
    from analysis_speed import make_data

    data = folder / f"analysis-{size_name(n)}"
    if not (data / "t_send.npy").is_file():  # written last
        data.mkdir(parents=True, exist_ok=True)
        make_data(n, data)
    script = str(Path(__file__).with_name("analysis_speed.py"))
    return Case(f"analysis {size_name(n)}", [script, "--child", "jitterlab", str(data)], "analysis")


def report_case(folder: Path, runs: int, per_pair: int, out: Path) -> Case:
    """report_speed.py's store (made once), rendered by the whole command."""
    store = folder / f"report-{runs}x{per_pair}"
    if not (store / ".made").is_file():
        shutil.rmtree(store, ignore_errors=True)
        make_store(store, runs, per_pair)
        (store / ".made").write_text("")
    page = out / "report.html"
    return Case(f"report ({runs} runs)", ["report", "--store", str(store), "-o", str(page)], "page", page)


def cluster_cases(folder: Path, n: int) -> list[Case]:
    """cluster.py's commands with ``--cluster local:2``."""
    store = folder / f"scale-{size_name(n)}"
    a, s = kept(store, n), ["--store", str(store), "--cluster", "local:2"]
    tag = f"{size_name(n)} local:2"
    return [
        Case(f"show --recompute {tag}", ["show", a, "--recompute", "--json", *s], "json"),
        Case(f"describe {tag}", ["describe", a, "--json", "--window", "1s", *s], "json"),
    ]


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def host() -> str:
    """The CPU's model name (with family/model, which a bare "AMD EPYC" lacks) and count."""
    info = Path("/proc/cpuinfo").read_text()
    field = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in info.splitlines()[:30])}
    return (
        f"{field.get('model name', '?')} (family {field.get('cpu family', '?')}, model "
        f"{field.get('model', '?')}), {os.cpu_count()} CPUs"
    )


def measure(case: Case, env: dict[str, dict[str, str]], repeats: int) -> dict[str, Any]:
    """Both trees, alternately, ``repeats`` times each: seconds, CPU seconds (the command and
    the children it waited for: on a loaded machine the wall time is this plus the wait for a
    CPU), peak MB and the last output."""
    seconds: dict[str, list[float]] = {"then": [], "now": []}
    cpu: dict[str, list[float]] = {"then": [], "now": []}
    peak = {"then": 0.0, "now": 0.0}
    printed: dict[str, str] = {}
    for repeat in range(repeats):
        for side in ("then", "now") if repeat % 2 == 0 else ("now", "then"):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            m = run_measured([sys.executable, *case.argv], env=env[side], interval=0.01)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[side].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            if m.returncode != 0:
                raise SystemExit(f"{case.name}: {side} failed ({m.returncode}): {m.stderr.strip()[-400:]}")
            seconds[side].append(m.seconds)
            peak[side] = max(peak[side], m.peak_tree_rss_bytes / 1e6)
            printed[side] = case.page.read_text() if case.page else m.stdout
    return {
        "seconds": seconds,
        "cpu": cpu,
        "peak": peak,
        "same": same_answer(printed["then"], printed["now"], case.form),
    }


def ratio(values: dict[str, list[float]]) -> float:
    """now/then of the medians."""
    return median_range(values["now"])[0] / median_range(values["then"])[0]


def verdict(then: list[float], now: list[float]) -> str:
    """slower / faster only when the two sets of repeats (at least 3 each) do not overlap;
    noise otherwise; n/a with fewer repeats (one repeat each never overlaps)."""
    if min(len(then), len(now)) < 3:
        return "n/a"
    if min(now) > max(then):
        return "slower"
    if max(now) < min(then):
        return "faster"
    return "noise"


def parse_size(text: str) -> int:
    return int(float(text))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default=BEFORE, metavar="REV", help=f"the older revision ({BEFORE})")
    parser.add_argument("--sets", default=",".join(SETS), help=f"of {','.join(SETS)} (all)")
    parser.add_argument("--sizes", default="1e8,1e9", help="scale's run sizes (1e8,1e9)")
    parser.add_argument("--analysis-samples", type=parse_size, default=10**8, help="(1e8)")
    parser.add_argument("--runs", type=int, default=28, help="runs in the report's store (28: the main job)")
    parser.add_argument("--report-samples", type=int, default=200_000, help="samples per pair of those")
    parser.add_argument("--cluster-samples", type=parse_size, default=10**7, help="(1e7)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--reuse", type=Path, metavar="DIR", help="keep the generated files in DIR, reuse them"
    )
    parser.add_argument("--make-only", action="store_true", help="make the files (with --reuse) and stop")
    parser.add_argument("--then-native", type=Path, default=None, metavar="PKG", help="REV's built package")
    parser.add_argument(
        "--only",
        default="",
        metavar="NAMES",
        help="only these commands, by name (e.g. 'describe 1e9'), comma-separated",
    )
    args = parser.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    except ValueError:
        sizes = []
    if (
        not sets
        or not set(sets) <= set(SETS)
        or ("scale" in sets and not sizes)
        or min([args.repeats, args.runs, args.report_samples, args.analysis_samples, *sizes]) < 1
        or min([args.cluster_samples, *sizes]) < 16
    ):
        print(
            f"engine_against.py: --sets of {','.join(SETS)}; --repeats, --runs and the sizes positive "
            "(runs ≥ 16 samples)",
            file=sys.stderr,
        )
        return 2

    root = Path(tempfile.mkdtemp(prefix="engine-against-"))
    try:
        folder = args.reuse.resolve() if args.reuse else root / "files"
        folder.mkdir(parents=True, exist_ok=True)
        then_src = old_tree(args.against, root / "then", args.then_native)
        now_src = REPO / "src"
        print(f"making (or finding in {folder}) the files…", file=sys.stderr)
        cases: list[Case] = []
        if "scale" in sets:
            cases += scale_cases(folder, sizes, {})
        if "analysis" in sets:
            cases.append(analysis_case(folder, args.analysis_samples))
        if "report" in sets:
            cases.append(report_case(folder, args.runs, args.report_samples, root))
        if "cluster" in sets:
            cases += cluster_cases(folder, args.cluster_samples)
        only = [o.strip() for o in args.only.split(",") if o.strip()]
        unknown = [o for o in only if o not in {c.name for c in cases}]
        if unknown:
            names = ", ".join(c.name for c in cases)
            print(
                f"engine_against.py: --only {', '.join(unknown)}: not a command of these sets ({names})",
                file=sys.stderr,
            )
            return 2
        if only:
            cases = [c for c in cases if c.name in only]
        if args.make_only:
            print(f"made: {', '.join(sorted(p.name for p in folder.iterdir() if p.is_dir()))} in {folder}")
            return 0
        base = {k: v for k, v in os.environ.items() if k not in ("JITTERLAB_STORE", "JITTERLAB_NATIVE_DIR")}
        # a checkout set up by pip install has its C++ core beside the installed package only
        native = native_dir_of_installed()
        core = {"JITTERLAB_NATIVE_DIR": native} if native else {}
        env = {
            "then": base | {"PYTHONPATH": str(then_src)} | ({} if args.then_native else core),
            "now": base | {"PYTHONPATH": str(now_src)} | core,
        }
        for case in cases:
            if case.form != "analysis":
                case.argv[:0] = ["-m", "jitterlab"]
        start_load = load()
        print(f"this tree ({now_src}) against {args.against}, alternately, {args.repeats} repeats")
        print(f"host: {host()}; load before: {start_load}")
        rows = []
        for case in cases:
            r = measure(case, env, args.repeats)
            print(
                f"  {case.name}: now/then {ratio(r['seconds']):.2f}× time, {r['peak']['now'] / r['peak']['then']:.2f}× memory;"
                f" same answer {r['same']} (CPU time now/then {ratio(r['cpu']):.2f}×, load {load()})",
                flush=True,
            )
            rows.append((case, r))
        print(f"\nthis tree against {args.against}: median (range) of {args.repeats}, seconds; peak tree RSS")
        print(
            f"{'command':<30}{'then s':>24}{'now s':>24}{'now/then':>9}{'verdict':>8}{'CPU n/t':>8}"
            f"{'MB then':>9}{'MB now':>8}  same answer"
        )
        for case, r in rows:
            cells = []
            for side in ("then", "now"):
                mid, lo, hi = median_range(r["seconds"][side])
                cells.append(f"{mid:.2f} ({lo:.2f}–{hi:.2f})")
            print(
                f"{case.name:<30}{cells[0]:>24}{cells[1]:>24}{ratio(r['seconds']):>8.2f}×"
                f"{verdict(r['seconds']['then'], r['seconds']['now']):>8}{ratio(r['cpu']):>7.2f}×"
                f"{r['peak']['then']:>9.0f}{r['peak']['now']:>8.0f}  {r['same']}"
            )
        for case, r in rows:
            if case.name == f"describe {size_name(HEAVY)}":
                s, mb = median_range(r["seconds"]["now"])[0], r["peak"]["now"]
                met = s <= DESCRIBE_TARGET_S and mb <= DESCRIBE_TARGET_MB
                print(
                    f"describe of 10⁹ now: {s:.1f} s, {mb:.0f} MB (target ≤ {DESCRIBE_TARGET_S:.0f} s, "
                    f"≤ {DESCRIBE_TARGET_MB:.0f} MB) {'met' if met else 'MISSED'}"
                )
        print(f"host: {host()}; load before {start_load}, after {load()}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The paper's prose and provenance from the runs' own facts: ``methods.md`` /
``methods.tex``, ``checklist.md``, ``runs.csv`` and ``references.bib``.

Every sentence is built from a field of the runs' run.json (or the description the tables
are made of); a fact no run records is said to be not recorded, never assumed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import shlex
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitterlab.core.units import format_ns
from jitterlab.describe.paper.build import HistogramRun, PaperData, RunData
from jitterlab.describe.paper.tables import latex_escape
from jitterlab.stats.quantile_ci import BLOCK, CONFIDENCE

REFERENCES = {
    "hyndman1996": (
        "@article{hyndman1996,\n  author = {Hyndman, Rob J. and Fan, Yanan},\n"
        "  title = {Sample Quantiles in Statistical Packages},\n  journal = {The American Statistician},\n"
        "  volume = {50},\n  number = {4},\n  pages = {361--365},\n  year = {1996},\n"
        "  doi = {10.1080/00031305.1996.10473566}\n}"
    ),
    "hahn2017": (
        "@book{hahn2017,\n  author = {Meeker, William Q. and Hahn, Gerald J. and Escobar, Luis A.},\n"
        "  title = {Statistical Intervals: A Guide for Practitioners and Researchers},\n"
        "  edition = {2},\n  publisher = {Wiley},\n  year = {2017},\n  doi = {10.1002/9781118594841}\n}"
    ),
    "iglewicz1993": (
        "@book{iglewicz1993,\n  author = {Iglewicz, Boris and Hoaglin, David C.},\n"
        "  title = {How to Detect and Handle Outliers},\n  series = {ASQC Basic References in Quality Control},\n"
        "  volume = {16},\n  publisher = {ASQC Quality Press},\n  year = {1993}\n}"
    ),
    "stauffert2016": (
        "@inproceedings{stauffert2016,\n  author = {Stauffert, Jan-Philipp and Niebling, Florian and Latoschik, Marc Erich},\n"
        "  title = {Towards Comparable Evaluation Methods and Measures for Timing Behavior of Virtual Reality Systems},\n"
        "  booktitle = {Proceedings of the 22nd ACM Conference on Virtual Reality Software and Technology (VRST)},\n"
        "  pages = {47--50},\n  year = {2016},\n  doi = {10.1145/2993369.2993402}\n}"
    ),
    "stauffert2020": (
        "@article{stauffert2020,\n  author = {Stauffert, Jan-Philipp and Niebling, Florian and Latoschik, Marc Erich},\n"
        "  title = {Latency and Cybersickness: Impact, Causes, and Measures. A Review},\n"
        "  journal = {Frontiers in Virtual Reality},\n  volume = {1},\n  pages = {582204},\n  year = {2020},\n"
        "  doi = {10.3389/frvir.2020.582204}\n}"
    ),
    "woodruff1952": (
        "@article{woodruff1952,\n  author = {Woodruff, Ralph S.},\n"
        "  title = {Confidence Intervals for Medians and Other Position Measures},\n"
        "  journal = {Journal of the American Statistical Association},\n  volume = {47},\n"
        "  number = {260},\n  pages = {635--646},\n  year = {1952},\n  doi = {10.1080/01621459.1952.10483443}\n}"
    ),
    "cochran1954": (
        "@article{cochran1954,\n  author = {Cochran, William G.},\n"
        "  title = {Some Methods for Strengthening the Common {$\\chi^2$} Tests},\n"
        "  journal = {Biometrics},\n  volume = {10},\n  number = {4},\n  pages = {417--451},\n"
        "  year = {1954},\n  doi = {10.2307/3001616}\n}"
    ),
    "massey1951": (
        "@article{massey1951,\n  author = {Massey, Frank J.},\n"
        "  title = {The {Kolmogorov-Smirnov} Test for Goodness of Fit},\n"
        "  journal = {Journal of the American Statistical Association},\n  volume = {46},\n"
        "  number = {253},\n  pages = {68--78},\n  year = {1951},\n  doi = {10.1080/01621459.1951.10500769}\n}"
    ),
}


def _distinct(values: Sequence[Any]) -> str:
    """``a`` when every run agrees, ``a (3 runs), b (1 run)`` when they differ."""
    known = [str(v) for v in values if v not in (None, "", [], {})]
    if not known:
        return ""
    counts = Counter(known)
    if len(counts) == 1 and len(known) == len(values):
        return known[0]
    parts = [f"{v} ({n} run{'s' if n > 1 else ''})" for v, n in counts.items()]
    missing = len(values) - len(known)
    if missing:
        parts.append(f"not recorded ({missing} run{'s' if missing > 1 else ''})")
    return ", ".join(parts)


def _get(meta: dict[str, Any], *path: str) -> Any:
    value: Any = meta
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _ns_range(values: Sequence[float | None]) -> str:
    known = [float(v) for v in values if isinstance(v, (int, float))]
    if not known:
        return ""
    lo, hi = min(known), max(known)
    return format_ns(lo) if lo == hi else f"{format_ns(lo)} to {format_ns(hi)}"


def _pinned(meta: dict[str, Any]) -> str | None:
    placements = _get(meta, "obtained", "placements")
    if not isinstance(placements, list) or not placements:
        return None
    one = sum(1 for p in placements if isinstance(p.get("cpus"), list) and len(p["cpus"]) == 1)
    return f"{one} of {len(placements)} threads pinned to one CPU"


def _load1(meta: dict[str, Any], when: str) -> Any:
    """The 1-minute load average run.json records ``before`` or ``after`` the measurement."""
    return _get(meta, "environment", "load_average", when, "load1")


def _load_range(metas: Sequence[dict[str, Any]], when: str) -> str:
    values = [_load1(m, when) for m in metas]
    known = [float(v) for v in values if isinstance(v, (int, float))]
    if not known:
        return ""
    lo, hi = min(known), max(known)
    return f"{lo:.2f}" if lo == hi else f"{lo:.2f} to {hi:.2f}"


def _load_average(metas: Sequence[dict[str, Any]]) -> str:
    """The 1-minute load average recorded before and after the runs (run.json's
    ``environment.load_average``), with how many runs recorded it; empty when none did."""
    recorded = [m for m in metas if _load1(m, "before") is not None]
    if not recorded:
        return ""
    before, after = _load_range(recorded, "before"), _load_range(recorded, "after")
    runs = "every run" if len(recorded) == len(metas) else f"{len(recorded)} of {len(metas)} runs"
    return (
        f"{before} before and {after or 'not recorded'} after each measurement "
        f"(/proc/loadavg, 1 minute; {runs}; the whole machine's, the measurement's own threads included)"
    )


@dataclass(frozen=True)
class Fact:
    topic: str
    text: str  # empty: not recorded by any run


def facts(data: PaperData) -> list[Fact]:
    runs = data.runs
    metas = [r.run.meta for r in runs]
    cfg = [r.run.config for r in runs]
    out = [
        Fact("runs", f"{len(runs)} run(s) with samples: " + ", ".join(r.run.label for r in runs)),
        Fact("technique", _distinct([f"{c.get('runtime', 'native')}/{c.get('technique')}" for c in cfg])),
        Fact("pairs", _distinct([c.get("pairs") for c in cfg])),
        Fact(
            "samples",
            f"n per run from {min(r.summary.count for r in runs):,} to {max(r.summary.count for r in runs):,}; "
            "asked per pair: "
            + (_distinct([c.get("samples", c.get("samples_per_pair")) for c in cfg]) or "not recorded"),
        ),
        Fact("warm-up", _distinct([c.get("warmup") for c in cfg])),
        Fact(
            "pause between messages", _distinct([format_ns(c["pause_ns"]) for c in cfg if c.get("pause_ns")])
        ),
        Fact("clock", _distinct([_get(m, "samples", "clock") for m in metas])),
        Fact("clocksource", _distinct([_get(m, "environment", "clocksource") for m in metas])),
        Fact(
            "clock read cost (median)",
            _ns_range([_get(m, "floor", "clock_overhead_ns", "median") for m in metas]),
        ),
        Fact(
            "clock read cost (p99)", _ns_range([_get(m, "floor", "clock_overhead_ns", "p99") for m in metas])
        ),
        Fact(
            "machine floor (one-way cache-line transfer, median)",
            _ns_range(
                [
                    _get(m, "floor", "c2c_one_way_ns", "median")
                    for m in metas
                    if _get(m, "floor", "c2c_one_way_ns", "measured")
                ]
            ),
        ),
        Fact("policy asked", _distinct([r.run.policy_label for r in runs])),
        Fact(
            "policy obtained",
            _distinct(
                [
                    ", ".join(map(str, p)) if isinstance(p := _get(m, "obtained", "policies"), list) else None
                    for m in metas
                ]
            ),
        ),
        Fact("affinity obtained", _distinct([_pinned(m) for m in metas])),
        Fact("memory locked", _distinct([_get(m, "obtained", "mlock", "obtained") for m in metas])),
        Fact("CPU", _distinct([_get(m, "environment", "cpu_model") for m in metas])),
        Fact("logical CPUs", _distinct([_get(m, "environment", "logical_cpus") for m in metas])),
        Fact("kernel", _distinct([_get(m, "environment", "kernel") for m in metas])),
        Fact("PREEMPT_RT", _distinct([_get(m, "environment", "preempt_rt") for m in metas])),
        Fact("virtualisation", _distinct([_get(m, "environment", "virtualization") for m in metas])),
        Fact(
            "frequency governor",
            _distinct(
                [
                    ", ".join(sorted({str(g) for g in (_get(m, "environment", "governors") or {}).values()}))
                    or None
                    for m in metas
                ]
            ),
        ),
        Fact("isolcpus", _distinct([_get(m, "environment", "isolcpus") for m in metas])),
        Fact("load generated", _distinct([_get(m, "load", "spec") or "none" for m in metas])),
        Fact("load average", _load_average(metas)),
        Fact("jitterlab version", _distinct([_get(m, "tool", "version") for m in metas])),
        Fact("jitterlab commit", _distinct([_get(m, "tool", "git_commit") for m in metas])),
    ]
    return out


def _statistics(data: PaperData, cite: Callable[[str], str]) -> list[str]:
    tests = sorted({r.test for r in data.runs})
    lines = [
        f"Percentiles are type 7 of Hyndman and Fan {cite('hyndman1996')} (linear interpolation between "
        "order statistics, numpy's default), computed exactly over every sample.",
        f"Each percentile's {CONFIDENCE:.0%} interval lies between two order statistics: their ranks "
        f"come from the binomial distribution {cite('hahn2017')} where the samples are independent, and "
        f"from batch means over about sqrt(n) time blocks (Woodruff's interval {cite('woodruff1952')}) "
        f"where the index-of-dispersion test of the blocks' counts {cite('cochran1954')} finds them "
        f"dependent at the 5 % level ({_methods_used(data)}). A level is marked unresolved when fewer "
        "than 10 samples are expected beyond it; its interval then has a lower end only.",
        f"Outlier categories come from the {', '.join(tests)} test (stacked modified z-scores "
        f"{cite('iglewicz1993')} as in Stauffert et al. {cite('stauffert2016')}); no sample was removed.",
    ]
    if data.comparisons:
        c = data.comparisons[0].result
        lines.append(
            f"Runs measuring the same technique and number of pairs are compared percentile by percentile "
            f"with a {c.confidence:.0%} interval of each relative change and a noise threshold of "
            f"±{c.noise_threshold:.0%}; the distributions are also compared by the two-sample "
            f"Kolmogorov-Smirnov {cite('massey1951')}, Anderson-Darling and Mann-Whitney tests."
        )
    if data.span != (None, None):
        lo, hi = data.span
        lines.append(
            f"Only the samples sent from {lo or 0:g} s to {'the end' if hi is None else f'{hi:g} s'} after each run's start are described."
        )
    return lines


def _methods_used(data: PaperData) -> str:
    """How many of the tables' intervals each method gave, e.g. ``block 40 of 112``."""
    estimates = [e for r in data.runs for e in r.levels.values() if e.method is not None]
    if not estimates:
        return "no interval: the runs were read in row groups"
    block = sum(1 for e in estimates if e.method == BLOCK)
    return f"the block method for {block} of the {len(estimates)} intervals in the tables"


def methods(data: PaperData, tex: bool) -> str:
    """The methods paragraph: what was measured, how, on what, and with which statistics."""
    cite = (lambda key: rf"\cite{{{key}}}") if tex else (lambda key: f"[{key}]")
    by_topic = {f.topic: f.text for f in facts(data)}

    def said(topic: str, template: str) -> str:
        value = by_topic.get(topic, "")
        return template.format(value) if value else f"The {topic} was not recorded."

    sentences = [
        said(
            "technique", "Latency was measured with jitterlab's n×(1:1) message-passing harness, technique {}"
        )
        + (f", with {by_topic['pairs']} sender/receiver pair(s)." if by_topic.get("pairs") else "."),
        "Samples: " + by_topic["samples"] + ".",
        said("warm-up", "Warm-up messages per pair before recording: {}."),
        said("clock", "Timestamps were taken with {}")
        + (f" (clocksource {by_topic['clocksource']})." if by_topic.get("clocksource") else "."),
        said(
            "clock read cost (median)",
            "Reading the clock cost {} (median of back-to-back reads at the start of each run)",
        )
        + (f", p99 {by_topic['clock read cost (p99)']}." if by_topic.get("clock read cost (p99)") else "."),
        said(
            "machine floor (one-way cache-line transfer, median)",
            "The machine floor, a one-way cache-line transfer between two pinned CPUs, was {}.",
        ),
        said("policy asked", "Scheduling policy asked: {}.")
        + " "
        + said("policy obtained", "Policies obtained: {}."),
        said("affinity obtained", "Affinity obtained: {}."),
        said("CPU", "The machine: {}")
        + (f", {by_topic['logical CPUs']} logical CPUs" if by_topic.get("logical CPUs") else "")
        + (f", kernel {by_topic['kernel']}" if by_topic.get("kernel") else "")
        + (f" (PREEMPT_RT: {by_topic['PREEMPT_RT']})" if by_topic.get("PREEMPT_RT") else "")
        + (f", virtualisation {by_topic['virtualisation']}" if by_topic.get("virtualisation") else "")
        + (
            f", frequency governor {by_topic['frequency governor']}"
            if by_topic.get("frequency governor")
            else ""
        )
        + ".",
        said("load generated", "Load generated during the runs: {}.")
        + " "
        + said("load average", "The machine's load average was {}."),
        *_statistics(data, cite),
        said("jitterlab version", "Runs were made with jitterlab {}")
        + (f" (commit {by_topic['jitterlab commit']})." if by_topic.get("jitterlab commit") else "."),
    ]
    if tex:
        body = " ".join(_tex_sentence(s) for s in sentences)
        return "% generated by jitterlab paper from the runs' run.json; see runs.csv\n" + body + "\n"
    return "# Methods\n\n" + " ".join(sentences) + "\n\n" + _references_md(sentences) + "\n"


def _tex_sentence(s: str) -> str:
    """Escape a sentence for LaTeX, keeping its \\cite commands."""
    parts = s.split(r"\cite{")
    out = latex_escape(parts[0])
    for part in parts[1:]:
        key, _, rest = part.partition("}")
        out += r"~\cite{" + key + "}" + latex_escape(rest)
    return out


def _references_md(sentences: Sequence[str]) -> str:
    cited = [k for k in REFERENCES if any(f"[{k}]" in s for s in sentences)]
    return "References: " + "; ".join(f"[{k}] see references.bib" for k in cited)


@dataclass(frozen=True)
class Item:
    what: str
    done: bool
    how: str  # done: where the paper shows it; missing: what to measure or record


def checklist(data: PaperData) -> list[Item]:
    """The reporting checklist of Stauffert et al. 2020 and seed 003 ch. 5, judged from the runs."""
    runs = data.runs
    metas = [r.run.meta for r in runs]
    intervals = [r for r in runs if all(e.ci_low is not None for k, e in r.levels.items() if k != "max")]
    unresolved = sorted({k for r in runs for k, e in r.levels.items() if not e.resolved})
    drawn = [r for r in runs if r.panels is not None]
    floors = [m for m in metas if _get(m, "floor", "clock_overhead_ns", "median") is not None]
    env = [m for m in metas if m.get("environment")]
    loads = [m for m in metas if m.get("load") or _load1(m, "before") is not None]
    averages = _load_average(metas)
    warm = [r for r in runs if r.run.config.get("warmup") is not None]
    hashed = [m for m in metas if _get(m, "samples", "sha256")]
    obtained = [m for m in metas if _get(m, "obtained", "policies")]

    def missing(items: Sequence[Any]) -> str:
        return f"{len(runs) - len(items)} of {len(runs)} runs lack it"

    return [
        Item(
            "Distribution and tails reported, not only the mean",
            True,
            "Table 1 (median, max, chosen percentiles), figure spectrum",
        ),
        Item(
            "Percentiles with intervals",
            len(intervals) == len(runs) and not unresolved,
            "Table 1, 95 % intervals (binomial, or batch means where the samples are dependent)"
            + (
                ""
                if len(intervals) == len(runs)
                else f"; {missing(intervals)} (read in row groups: rerun without --cluster)"
            )
            + (
                f"; unresolved levels: {', '.join(unresolved)} — record more samples (at least 10/(1 − p) for level p, so that 10 are expected beyond it)"
                if unresolved
                else ""
            ),
        ),
        Item(
            "Jitter over time",
            len(drawn) == len(runs),
            "figure timelines (samples above median + 2σ over each run)"
            + ("" if len(drawn) == len(runs) else f"; {missing(drawn)}"),
        ),
        Item(
            "Measurement method and its own error (clock read cost, machine floor)",
            len(floors) == len(runs),
            "methods: clock, clock read cost, machine floor"
            if len(floors) == len(runs)
            else f"{missing(floors)}: measure the clock read cost and the floor (runs of 'jitterlab bench' record them)",
        ),
        Item(
            "System configuration (CPU, kernel, virtualisation, governor, policy and affinity obtained)",
            len(env) == len(runs) and len(obtained) == len(runs),
            "methods"
            if len(env) == len(runs) and len(obtained) == len(runs)
            else f"{missing(env if len(env) < len(obtained) else obtained)}: record the machine and what the scheduler granted (measure with jitterlab, not import)",
        ),
        Item(
            "System load during the measurement",
            len(loads) == len(runs),
            "methods: load generated"
            + (f"; load average {averages}" if averages else "")
            + " (recorded, which is not the same as an idle machine: compare it with the number of CPUs)"
            if len(loads) == len(runs)
            else f"{missing(loads)}: neither a load condition nor the load average recorded; state the load "
            "(e.g. 'jitterlab bench --load …'), measure again with this version (it records /proc/loadavg "
            "before and after each run) or measure an idle baseline",
        ),
        Item(
            "Sample size and warm-up",
            len(warm) == len(runs),
            "Table 1 (n per row), methods (warm-up)"
            + ("" if len(warm) == len(runs) else f"; warm-up: {missing(warm)}"),
        ),
        Item(
            "Outlier treatment stated",
            True,
            "methods: stacked test categories, no sample removed; figure histograms (category cuts)",
        ),
        Item(
            "Raw data available and checkable",
            len(hashed) == len(runs),
            "runs.csv (SHA-256 of every run's samples)"
            if len(hashed) == len(runs)
            else f"{missing(hashed)}: no checksum recorded",
        ),
    ]


def checklist_md(data: PaperData) -> str:
    items = checklist(data)
    lines = [
        "# Reporting checklist for latency",
        "",
        "After Stauffert, Niebling & Latoschik 2020 (review) and Stauffert et al. 2016 "
        "(towards comparable evaluation); each item judged from the runs' own facts.",
        "",
    ]
    for item in items:
        mark = "x" if item.done else " "
        lines.append(f"- [{mark}] **{item.what}** — {'done: ' if item.done else 'missing: '}{item.how}")
    done = sum(i.done for i in items)
    lines += ["", f"{done} of {len(items)} items done."]
    return "\n".join(lines) + "\n"


def command_of(r: RunData | HistogramRun) -> str:
    """The command run.json records for the run: the harness's argv, or the file imported."""
    meta = r.run.meta
    harness = meta.get("harness") or {}
    if harness.get("argv"):
        return shlex.join([str(harness.get("program", "")), *map(str, harness["argv"])])
    source = r.run.config.get("source")
    if source:
        return f"(imported from {source})"
    return "(not recorded)"


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def runs_csv(data: PaperData) -> str:
    """Every run of the paper, its tables' numbering: id, label, samples, the SHA-256 of
    its data file and what it hashes (a sample run's samples file as recorded at commit; a
    histogram-only run's stored histogram file, hashed now: its run.json records none),
    time, status and the command."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["run", "id", "label", "samples", "sha256", "sha256_of", "created_utc", "status", "command"])
    for r in data.runs:
        m = r.run.meta
        w.writerow(
            [
                f"#{r.number}",
                r.run.id,
                r.run.label,
                _get(m, "samples", "rows"),
                _get(m, "samples", "sha256") or "",
                "samples file (recorded)" if _get(m, "samples", "sha256") else "",
                m.get("created_utc", ""),
                m.get("status", ""),
                command_of(r),
            ]
        )
    for h in data.histograms:
        m = h.run.meta
        name = str(_get(m, "histogram", "file") or "")
        path = h.run.path / name
        w.writerow(
            [
                f"#{h.number}",
                h.run.id,
                h.run.label,
                h.summary.get("count", ""),
                _file_sha256(path) if name and path.is_file() else "",
                f"{name} (histogram, hashed now)" if name and path.is_file() else "",
                m.get("created_utc", ""),
                m.get("status", ""),
                command_of(h),
            ]
        )
    return out.getvalue()


def references_bib() -> str:
    return "\n\n".join(REFERENCES.values()) + "\n"

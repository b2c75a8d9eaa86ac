"""Re-run every published figure and flag the ones that drifted (issue 27 item 12).

benchmarks/figures.toml lists each benchmark, its command and how to read each of its
figures from the output. This script runs every benchmark ``--repeats`` times (default 3)
under benchmarks/treemem.py, so wall time and the whole process tree's peak RSS join its
figures; takes the median and the range (smallest, largest) of every figure; and compares
them with the published values of the same mode (quick or full) in
docs/results/figures.json. A figure whose median moved by more than its published range
(largest − smallest, at least 5 % of its median) is flagged DRIFT, and the exit code is 1.

The cross-core cost of a VM flips between regimes with the host's placement of the vCPUs
(on the development machine, c2c p50 ≈ 64 or ≈ 130 ns): the c2c floor is measured before
and after the benchmarks and recorded beside the figures, so a drift that is the regime's
shows as such.

``--update`` writes the new values (with machine, date, commit and regime) to
docs/results/figures.json and the table docs/results/figures.md.

Usage: python benchmarks/all.py [--quick] [--only NAME]... [--repeats 3] [--update] [--json FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from treemem import median_range, run_measured

REPO = Path(__file__).resolve().parents[1]
REGISTRY = REPO / "benchmarks" / "figures.toml"
PUBLISHED = REPO / "docs" / "results" / "figures.json"
TABLE = REPO / "docs" / "results" / "figures.md"
PLACEMENTS = REPO / "docs" / "results" / "harness-floor.json"  # harness_floor.py --publish
FAST_REGIME_BELOW_NS = 95.0  # between the two regimes seen here, ≈ 64 and ≈ 130 ns


@dataclass
class Bench:
    name: str
    command: str
    quick: str
    doc: str
    needs_root: bool
    patterns: dict[str, re.Pattern[str]]
    units: dict[str, str]
    targets: dict[str, str]
    optional: set[str] = field(default_factory=set)

    def argv(self, quick: bool) -> list[str]:
        words = shlex.split(self.command) + (shlex.split(self.quick) if quick else [])
        if words[0] == "python":
            words[0] = sys.executable
        return words

    def shown(self, quick: bool) -> str:
        return self.command + (f" {self.quick}" if quick and self.quick else "")


@dataclass
class Outcome:
    bench: Bench
    values: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def load_registry(path: Path = REGISTRY) -> list[Bench]:
    """The benchmarks of figures.toml, in file order."""
    doc = tomllib.loads(path.read_text())
    benches = []
    for name, b in doc["bench"].items():
        figures = b.get("figures", {})
        benches.append(
            Bench(
                name=name,
                command=b["command"],
                quick=b.get("quick", ""),
                doc=b.get("doc", ""),
                needs_root=bool(b.get("needs_root", False)),
                patterns={f: re.compile(spec["pattern"], re.MULTILINE) for f, spec in figures.items()},
                units={f: spec.get("unit", "") for f, spec in figures.items()},
                targets={f: spec.get("target", "") for f, spec in figures.items()},
                optional={f for f, spec in figures.items() if spec.get("optional")},
            )
        )
    return benches


def read_figures(bench: Bench, stdout: str) -> tuple[dict[str, float], list[str]]:
    """Every figure found in one run's output, and the names of those not found."""
    found, missing = {}, []
    for name, pattern in bench.patterns.items():
        match = pattern.search(stdout)
        if match is None:
            if name not in bench.optional:
                missing.append(name)
        else:
            found[name] = float(match.group(1).replace(",", ""))
    return found, missing


def c2c_floor_ns() -> float | None:
    """The c2c one-way p50 the harness measures at the start of a short run (None if unavailable)."""
    try:
        from jitterlab.core.programs import native_program

        with tempfile.TemporaryDirectory() as out:
            cmd = [str(native_program("jitterlab-bench")), "--technique", "c2c", "--samples", "20000"]
            subprocess.run([*cmd, "--out", out], check=True, capture_output=True, timeout=120)
            meta = json.loads((Path(out) / "harness.json").read_text())
        return float(meta["floor"]["c2c_one_way_ns"]["median"])
    except Exception as e:  # the figures are still worth having without the regime
        print(f"warning: c2c floor not measured ({e})", file=sys.stderr)
        return None


def regime(c2c_ns: float | None) -> str:
    if c2c_ns is None:
        return "unknown"
    return f"{'fast' if c2c_ns < FAST_REGIME_BELOW_NS else 'slow'} (c2c p50 {c2c_ns:.0f} ns)"


def run_bench(bench: Bench, quick: bool, repeats: int) -> Outcome:
    outcome = Outcome(bench)
    # the benchmarks call `jitterlab` and the native programs of this interpreter's environment
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for i in range(repeats):
        print(f"[{bench.name} {i + 1}/{repeats}] {bench.shown(quick)}", file=sys.stderr, flush=True)
        m = run_measured(bench.argv(quick), cwd=REPO, env=env)
        found, missing = read_figures(bench, m.stdout)
        # 1 = it ran, but a target was missed: its figures still count; a traceback never does
        if m.returncode not in (0, 1) or "Traceback (most recent call last)" in m.stderr:
            tail = (m.stderr.strip().splitlines() or ["no output"])[-1]
            outcome.failures.append(f"exit {m.returncode}: {tail}")
        if missing:
            outcome.failures.append(f"not in the output: {', '.join(missing)}")
        found["seconds"] = m.seconds
        found["peak_tree_mb"] = m.peak_tree_rss_bytes / 1e6
        for name, value in found.items():
            outcome.values.setdefault(name, []).append(value)
    return outcome


def summarize(outcomes: list[Outcome]) -> dict[str, dict[str, Any]]:
    """{bench: {figure: {median, min, max, repeats, unit, target}}} of this session."""
    out: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        figures = {}
        for name, values in o.values.items():
            med, lo, hi = median_range(values)
            unit = o.bench.units.get(name, {"seconds": "s", "peak_tree_mb": "MB"}.get(name, ""))
            figures[name] = {
                "median": med,
                "min": lo,
                "max": hi,
                "repeats": len(values),
                "unit": unit,
                "target": o.bench.targets.get(name, ""),
            }
        out[o.bench.name] = {"command": "", "figures": figures, "failures": sorted(set(o.failures))}
    return out


def drift(now: dict[str, Any], published: dict[str, Any]) -> str:
    """'' when the median stayed within the published range's width, else what moved. The
    width is at least 5 % of the published median: three repeats of a nearly deterministic
    figure (a peak RSS, a count) can span almost nothing."""
    width = max(published["max"] - published["min"], 0.05 * abs(published["median"]))
    moved = now["median"] - published["median"]
    if abs(moved) <= width:
        return ""
    return f"moved {moved:+.4g} {now['unit']} (allowed {width:.4g})"


def publish(
    section: dict[str, Any],
    now: dict[str, dict[str, Any]],
    measured: dict[str, Any],
    some_only: bool,
    benches: list[Bench],
) -> None:
    """Put this session's figures ``now`` into the published ``section`` of one mode.

    With ``some_only`` (``--only``) the section's machine, date and regime stay those of the
    other benchmarks and these carry their own. An optional figure this session did not
    print (the spsc/c2c ratio of the cross-core regime the machine was not in) keeps its
    published value, marked with the machine, date and regime it was measured in: a fast
    session must not erase the slow regime's figure. One printed by fewer than 3 of the
    repeats (the regime flipped between them) is published marked so.
    """
    by_name = {b.name: b for b in benches}
    for name, b in now.items():
        optional = by_name[name].optional if name in by_name else set()
        for fig, v in b["figures"].items():
            if fig in optional and v["repeats"] < 3:  # the regime flipped during the repeats
                v["few_repeats"] = f"printed by {v['repeats']} of the repeats"
    old_benches = section.get("benches", {})
    old_measured = {k: section[k] for k in ("machine", "regime_before", "regime_after") if k in section}
    for name, b in now.items():
        was = old_benches.get(name, {})
        optional = by_name[name].optional if name in by_name else set()
        for fig, v in was.get("figures", {}).items():
            if fig in optional and fig not in b["figures"]:
                b["figures"][fig] = {**v, "carried": v.get("carried") or was.get("measured") or old_measured}
    if some_only and section.get("machine"):
        for b in now.values():
            b["measured"] = measured
    else:
        section.update(measured)
        for b in section.setdefault("benches", {}).values():
            b.pop("measured", None)
    section.setdefault("benches", {}).update(now)


def machine() -> dict[str, str]:
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cpu": model,
        "cpus": str(os.cpu_count()),
        "kernel": platform.release(),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit or "unknown",
        # a busy machine inflates times and tails: say how busy it was when the run began
        "load": f"{os.getloadavg()[0]:.1f}",
    }


def fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def write_table(published: dict[str, Any], benches: list[Bench]) -> None:
    lines = [
        "# Published figures",
        "",
        "Generated by `python benchmarks/all.py --update` (full sizes) and `--quick --update`; every",
        "figure is the median of its repeats with the range (smallest – largest); `peak_tree_mb` is the",
        "peak of the summed RSS of the benchmark's whole process tree (benchmarks/treemem.py). Re-run with",
        "`python benchmarks/all.py [--quick]`: it flags a figure whose median moved by more than its range (at least 5 %).",
        "",
    ]
    by_name = {b.name: b for b in benches}
    for mode in ("full", "quick"):
        section = published.get(mode)
        if not section:
            continue
        m = section["machine"]
        lines += [
            f"## {mode} sizes",
            "",
            f"{m['date']}, commit {m['commit']}, {m['cpu']}, {m['cpus']} CPUs, Linux {m['kernel']}, "
            f"1-min load average at the start {m.get('load', 'not recorded')}; "
            f"cross-core regime before: {section['regime_before']}, after: {section['regime_after']}.",
            "",
            "| benchmark | figure | median | range | repeats | target |",
            "|---|---|---|---|---|---|",
        ]
        for name, b in section["benches"].items():
            bench = by_name.get(name)
            command = bench.shown(mode == "quick") if bench else b.get("command", "")
            for fig, v in b["figures"].items():
                unit = f" {v['unit']}" if v["unit"] else ""
                if "few_repeats" in v:
                    fig = f"{fig} ({v['few_repeats']})"
                if "carried" in v:  # not met this session: the value of the session that met it
                    c = v["carried"]
                    fig = f"{fig} (from {c['machine']['date']}, commit {c['machine']['commit']}, {c['regime_before']})"
                lines.append(
                    f"| `{command}` | {fig} | {fmt(v['median'])}{unit} | {fmt(v['min'])} – {fmt(v['max'])} "
                    f"| {v['repeats']} | {v['target']} |"
                )
            for failure in b.get("failures", []):
                lines.append(f"| `{command}` | (failure) | {failure} | | | |")
        lines.append("")
        apart = [(name, b["measured"]) for name, b in section["benches"].items() if b.get("measured")]
        if apart:
            lines += ["Measured apart from the rest (`--only`):", ""]
            for name, m in apart:
                mm = m["machine"]
                lines.append(
                    f"- {name}: {mm['date']}, commit {mm['commit']}, 1-min load average at the start "
                    f"{mm.get('load', 'not recorded')}; cross-core regime before: {m['regime_before']}, "
                    f"after: {m['regime_after']}."
                )
            lines.append("")
    lines += placement_table(json.loads(PLACEMENTS.read_text())["rows"] if PLACEMENTS.exists() else [])
    TABLE.write_text("\n".join(lines))


def placement_table(rows: list[dict[str, Any]]) -> list[str]:
    """The harness floor by placement: every row harness_floor.py --publish kept, oldest first.

    The ratio means something only within one placement of the vCPUs, so each row carries
    its host CPU and its own c2c floor (issue 43 item 7)."""
    if not rows:
        return []

    def ns(v: float | None) -> str:
        return "not recorded" if v is None else f"{v:g} ns"

    lines = [
        "## Harness floor by placement",
        "",
        "spsc one-way p50 ÷ c2c one-way p50 in pure-channel mode (`--pairs 1 --block-ints 0 --pin spread`),",
        "one row per cross-core regime a session met (target ≤ 1.3 in each); appended by",
        "`python benchmarks/harness_floor.py --publish` to docs/results/harness-floor.json.",
        "",
        "| date | commit | host CPU | load | regime | c2c p50 | spsc p50 | ratio (range) | repeats | verdict | source |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = r["ratio"]
        load = "not recorded" if r.get("load") is None else f"{r['load']:g}"
        source = r.get("source") or f"`{r['command']}`"
        lines.append(
            f"| {r['date']} | {r['commit']} | {r['cpu']} | {load} | {r['regime']} | {ns(r['c2c_p50_ns'])} "
            f"| {ns(r['spsc_p50_ns'])} | {ratio['median']:.2f} ({ratio['min']:.2f} – {ratio['max']:.2f}) "
            f"| {r['repeats']} | {r['verdict']} | {source} |"
        )
    lines.append("")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="the benchmarks' small sizes (minutes, not hours)"
    )
    parser.add_argument("--only", action="append", help="this benchmark only (repeatable)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--update", action="store_true", help="publish these values (figures.json, figures.md)"
    )
    parser.add_argument("--json", type=Path, help="also write this session's values here")
    args = parser.parse_args()
    if args.repeats < 3 and args.update:
        print("error: published figures are medians of at least 3 repeats (--repeats ≥ 3)", file=sys.stderr)
        return 2
    benches = load_registry()
    unknown = set(args.only or ()) - {b.name for b in benches}
    if unknown:
        print(f"error: no benchmark named {', '.join(sorted(unknown))} in {REGISTRY.name}", file=sys.stderr)
        return 2
    chosen = [b for b in benches if not args.only or b.name in args.only]
    mode = "quick" if args.quick else "full"

    at_start = machine()  # the load average said is the one when the benchmarks began
    before = c2c_floor_ns()
    outcomes = []
    for bench in chosen:
        if bench.needs_root and os.geteuid() != 0:
            print(f"skipped {bench.name}: needs root (network namespaces)", file=sys.stderr)
            continue
        outcomes.append(run_bench(bench, args.quick, args.repeats))
    after = c2c_floor_ns()
    now = summarize(outcomes)
    for o in outcomes:
        now[o.bench.name]["command"] = o.bench.shown(args.quick)

    published = json.loads(PUBLISHED.read_text()) if PUBLISHED.exists() else {}
    old = published.get(mode, {}).get("benches", {})
    print(
        f"figures ({mode} sizes, {args.repeats} repeats); regime before {regime(before)}, after {regime(after)}"
    )
    drifted = 0
    for name, b in now.items():
        print(f"{name}: {b['command']}")
        for fig, v in b["figures"].items():
            was = old.get(name, {}).get("figures", {}).get(fig)
            status = "new" if was is None else (drift(v, was) or "ok")
            if status not in ("new", "ok"):
                drifted += 1
                status = f"DRIFT: {status}"
            unit = f" {v['unit']}" if v["unit"] else ""
            print(
                f"  {fig:<32}{fmt(v['median']):>12}{unit:<10} [{fmt(v['min'])} – {fmt(v['max'])}]  {status}"
            )
        for failure in b["failures"]:
            print(f"  FAILED: {failure}")
    failed = sum(bool(b["failures"]) for b in now.values())
    if args.json:
        args.json.write_text(json.dumps(now, indent=2))
    if args.update:
        section = published.setdefault(mode, {"benches": {}})
        measured = {"machine": at_start, "regime_before": regime(before), "regime_after": regime(after)}
        publish(section, now, measured, some_only=bool(args.only), benches=chosen)
        PUBLISHED.write_text(json.dumps(published, indent=2) + "\n")
        write_table(published, benches)
        print(f"published to {PUBLISHED.relative_to(REPO)} and {TABLE.relative_to(REPO)}")
    print(
        f"{drifted} figure(s) drifted, {failed} benchmark(s) failed"
        if drifted or failed
        else "no figure drifted; every benchmark ran"
    )
    spread = [b["figures"]["seconds"]["median"] for b in now.values() if "seconds" in b["figures"]]
    if spread:
        print(f"({statistics.fsum(spread) * args.repeats / 60:.0f} min of benchmarks)")
    return 1 if drifted or failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

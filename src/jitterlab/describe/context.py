"""The context block (google/benchmark's habit): the machine a run was measured on, its
kernel and the doctor's warnings, heading the text, the JSON and the HTML alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jitterlab.store import Run

# Facts that make two runs' latencies hard to compare when they differ.
COMPARABILITY_KEYS = ("host", "cpu_model", "kernel", "preempt_rt", "virtualization", "clocksource")


def context_block(run: Run) -> dict[str, Any]:
    """Where and with what ``run`` was measured (an import says where it came from)."""
    if run.meta.get("environment") is None:
        tool = run.meta.get("tool") or {}
        return source_context(run.config.get("source"), run.config.get("source_format"), tool.get("version"))
    return machine_context(run.meta)


def machine_context(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The block of the machine that run metadata ``meta`` describes (its ``environment``,
    ``doctor`` and ``tool`` blocks): a measured run's, or the machine's now for a measuring
    command that stored no run (``measure.jobs.common_meta`` gives the blocks)."""
    env = meta.get("environment") or {}
    tool = meta.get("tool") or {}
    governors = sorted({g for g in (env.get("governors") or {}).values() if g})
    return {
        "measured_here": True,
        "host": env.get("host"),
        "cpu_model": env.get("cpu_model"),
        "logical_cpus": env.get("logical_cpus"),
        "smt_active": env.get("smt_active"),
        "kernel": env.get("kernel"),
        "preempt_rt": env.get("preempt_rt"),
        "clocksource": env.get("clocksource"),
        "governors": governors,
        "isolcpus": env.get("isolcpus"),
        "virtualization": env.get("virtualization"),
        "doctor_warnings": [d["check"] for d in meta.get("doctor") or [] if d.get("status") == "warn"],
        "tool_version": tool.get("version"),
        "git_commit": tool.get("git_commit"),
    }


def source_context(source: Any, source_format: Any, tool_version: Any = None) -> dict[str, Any]:
    """The block of figures computed here from data measured elsewhere (an import, a video,
    sensor logs): where they came from (``tool_version`` None: this jitterlab's)."""
    if tool_version is None:
        from jitterlab.core.version import __version__ as tool_version
    return {
        "measured_here": False,
        "source": None if source is None else str(source),
        "source_format": source_format,
        "tool_version": tool_version,
    }


def command_context(runs: Sequence[Run]) -> dict[str, Any]:
    """The ``context`` object heading a command's JSON output (measuring commands included):
    the block of the machine ``runs`` were measured on. Runs of one invocation share the
    machine, so it is the first run's block, with the doctor's warnings of every run."""
    if not runs:
        raise ValueError("command_context needs at least one run")
    block = context_block(runs[0])
    if block.get("measured_here"):
        warned = [w for run in runs for w in context_block(run).get("doctor_warnings") or []]
        block["doctor_warnings"] = list(dict.fromkeys(warned))
    return block


def contexts(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """The distinct context blocks of ``runs``, in order of first appearance."""
    seen: list[dict[str, Any]] = []
    for run in runs:
        block = context_block(run)
        if block not in seen:
            seen.append(block)
    return seen


def context_lines(block: dict[str, Any]) -> list[str]:
    """The block as two short lines of text."""
    if not block.get("measured_here"):
        return [f"imported from {block.get('source')} ({block.get('source_format')}); not measured here"]
    cpus = f"{block.get('logical_cpus')} CPUs" + (", SMT" if block.get("smt_active") else "")
    rt = "PREEMPT_RT" if block.get("preempt_rt") else "not PREEMPT_RT"
    governors = ",".join(block.get("governors") or [])
    vm = f", {block['virtualization']} guest" if block.get("virtualization") else ""
    first = f"{block.get('host')}: {block.get('cpu_model')} ({cpus}{vm})"
    frequency = f"governor {governors}" if governors else "cpufreq not exposed"
    second = f"kernel {block.get('kernel')} ({rt}), clocksource {block.get('clocksource')}, {frequency}"
    warned = block.get("doctor_warnings") or []
    if warned:
        second += f"; doctor warned about {', '.join(warned)}"
    return [first, second]


def context_header(runs: Sequence[Run]) -> str:
    """The heading of a command's text output: one block per distinct machine."""
    return header_of(contexts(runs))


def header_of(blocks: Sequence[dict[str, Any]]) -> str:
    """Context blocks as the ``context  …`` lines that head a text output."""
    return "\n".join(f"context  {line}" for block in blocks for line in context_lines(block))


def differences(a: Run, b: Run) -> list[str]:
    """The facts in which two runs' machines differ, as "key: A vs B"."""
    ea, eb = a.meta.get("environment") or {}, b.meta.get("environment") or {}
    if not ea or not eb:
        return []
    return [f"{k}: {ea.get(k)} vs {eb.get(k)}" for k in COMPARABILITY_KEYS if ea.get(k) != eb.get(k)]

"""The closed set of warnings a run can carry (hyperfine's habit): each a code that tools can
reason about, with the detail a person reads and the fix. Harnesses in every language write
``{"code", "detail"}`` into harness.json (schema: store/schemas/harness.schema.json); the
run keeps them in ``run.json`` → ``obtained.warnings``.
"""

from __future__ import annotations

from typing import Any

# code -> what to do about it
CODES: dict[str, str] = {
    "policy-refused": "run as root, or grant real-time priority ('@realtime - rtprio 95' in limits.conf)",
    "affinity-refused": "pin only CPUs in the process's allowed set (taskset, cgroup cpuset)",
    "mlock-refused": "raise the memlock limit (ulimit -l unlimited) or run as root",
    "spin-fallback": "give each spinning thread a CPU of its own (--pin spread on enough CPUs)",
    "buffer-full": "raise the tool's buffer (--max-gaps) or shorten the run",
    "journal-failed": "make the journal folder writable and give it free space",
    "datagrams-lost": "lower the rate, raise the socket buffers, or look at the proxy's drops",
    "object-lost": "track a larger or higher-contrast region, or give the regions by hand (--roi-physical/--roi-rendered)",
    "estimators-disagree": "look at the traces, fits and residuals in --report; a motion that is not a damped sine favours xcorr",
    "latency-aliasing": "latencies near the code modulus × step time wrap around: use a larger --modulus or a slower motor",
    "pm-qos-refused": "run as root so the tool can hold /dev/cpu_dma_latency at 0 (as cyclictest does)",
    "generator-limited": "the load generator fell behind its schedule: fewer clients per machine, or pin it to an idle CPU",
    "unclassified": "a warning from a run stored before warnings had codes",
}


def normalized(entries: Any) -> list[dict[str, str]]:
    """Stored warnings as ``{code, detail}``: older runs stored bare strings."""
    if not isinstance(entries, list):
        return []
    out = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("detail"), str):
            out.append({"code": str(entry.get("code", "unclassified")), "detail": entry["detail"]})
        elif isinstance(entry, str):
            out.append({"code": "unclassified", "detail": entry})
    return out

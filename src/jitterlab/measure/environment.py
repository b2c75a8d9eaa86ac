"""Facts about the machine a run was measured on (GUIDE §3), read through one root path.

Every function takes ``root`` so that tests can point it at recorded /proc and /sys trees.
"""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path
from typing import Any


def read_text(root: Path, relative: str) -> str | None:
    """The stripped text of ``root/relative``, or None when it cannot be read."""
    try:
        return (root / relative.lstrip("/")).read_text(errors="replace").strip()
    except OSError:
        return None


def parse_cpu_list(text: str | None) -> list[int]:
    """Parse a kernel CPU list such as ``"0-3,8,10-11"``."""
    cpus: list[int] = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return cpus


def cmdline_value(cmdline: str, key: str) -> str | None:
    """The value of ``key=...`` on a kernel command line, or None."""
    for token in cmdline.split():
        if token.startswith(key + "="):
            return token.split("=", 1)[1]
    return None


def cpu_model(root: Path) -> str | None:
    for line in (read_text(root, "/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return None


def virtualization(root: Path) -> str | None:
    """The hypervisor, when the CPU says it runs under one (None on bare metal)."""
    cpuinfo = read_text(root, "/proc/cpuinfo") or ""
    flags = next((line for line in cpuinfo.splitlines() if line.startswith("flags")), "")
    if " hypervisor" not in flags:
        return None
    vendor = read_text(root, "/sys/class/dmi/id/sys_vendor") or ""
    product = read_text(root, "/sys/class/dmi/id/product_name") or ""
    clocksources = read_text(root, "/sys/devices/system/clocksource/clocksource0/available_clocksource") or ""
    # microVMs (Firecracker) have no DMI tables; the paravirtual clock still names KVM
    if "QEMU" in vendor or "KVM" in product or "KVM" in vendor or "kvm-clock" in clocksources:
        return "kvm"
    if "hyperv_clocksource" in clocksources or "Microsoft" in vendor:
        return "hyper-v"
    if "xen" in clocksources:
        return "xen"
    return (vendor or "unknown hypervisor").lower()


def is_preempt_rt(root: Path, kernel_version: str) -> bool:
    return read_text(root, "/sys/kernel/realtime") == "1" or "PREEMPT_RT" in kernel_version


def governors(root: Path) -> dict[str, str]:
    """Frequency governor per CPU, empty where cpufreq is not exposed (common in VMs)."""
    out: dict[str, str] = {}
    base = root / "sys/devices/system/cpu"
    for gov in sorted(base.glob("cpu[0-9]*/cpufreq/scaling_governor")):
        out[gov.parent.parent.name] = gov.read_text().strip()
    return out


def smt_active(root: Path) -> bool | None:
    value = read_text(root, "/sys/devices/system/cpu/smt/active")
    return None if value is None else value == "1"


def isolation(root: Path) -> dict[str, str]:
    """isolcpus, nohz_full and rcu_nocbs: what the kernel reports, else the command line."""
    cmdline = read_text(root, "/proc/cmdline") or ""
    return {
        "isolcpus": read_text(root, "/sys/devices/system/cpu/isolated")
        or cmdline_value(cmdline, "isolcpus")
        or "",
        "nohz_full": read_text(root, "/sys/devices/system/cpu/nohz_full")
        or cmdline_value(cmdline, "nohz_full")
        or "",
        "rcu_nocbs": cmdline_value(cmdline, "rcu_nocbs") or "",
    }


def loadavg(root: Path = Path("/")) -> dict[str, Any] | None:
    """/proc/loadavg read now: the 1, 5 and 15 minute load averages and the runnable and
    total scheduling entities (``{"load1": 0.52, …, "runnable": 2, "entities": 312}``), or
    None when it cannot be read. A figure of the whole machine: it says how busy the machine
    was, not which work made it busy."""
    parts = (read_text(root, "/proc/loadavg") or "").split()
    try:
        runnable, entities = parts[3].split("/", 1)
        return {
            "load1": float(parts[0]),
            "load5": float(parts[1]),
            "load15": float(parts[2]),
            "runnable": int(runnable),
            "entities": int(entities),
        }
    except (IndexError, ValueError):
        return None


def load_during(before: dict[str, Any] | None, root: Path = Path("/")) -> dict[str, Any]:
    """The environment's ``load_average`` block of a measurement: /proc/loadavg read before
    it started (``before``) and now, after it ended."""
    return {"before": before, "after": loadavg(root)}


def collect(root: Path = Path("/")) -> dict[str, Any]:
    """The environment block stored in every run's metadata."""
    uname = platform.uname()
    kernel_version = f"{uname.release} {uname.version}"
    return {
        "host": socket.gethostname(),
        "cpu_model": cpu_model(root),
        "logical_cpus": os.cpu_count(),
        "allowed_cpus": sorted(os.sched_getaffinity(0)),
        "smt_active": smt_active(root),
        "kernel": uname.release,
        "kernel_version": uname.version,
        "preempt_rt": is_preempt_rt(root, kernel_version),
        "clocksource": read_text(root, "/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "governors": governors(root),
        **isolation(root),
        "virtualization": virtualization(root),
        "sched_rt_runtime_us": read_text(root, "/proc/sys/kernel/sched_rt_runtime_us"),
        "python": platform.python_version(),
    }

"""`jitterlab doctor`: what on this machine shapes latency, and how to fix it.

Each check reads /proc and /sys through one root path (tests point it at recorded
trees) and returns a status (ok / warn / info), what it found, the evidence it read and
the exact command that would change it. The same findings go into every run's metadata.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jitterlab.core.tidy import counted
from jitterlab.measure.environment import isolation, parse_cpu_list, read_text

CAP_IPC_LOCK = 14
CAP_SYS_NICE = 23


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "ok", "warn" or "info"
    finding: str
    fix: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cpus(root: Path) -> list[str]:
    base = root / "sys/devices/system/cpu"
    return sorted((p.name for p in base.glob("cpu[0-9]*")), key=lambda n: int(n[3:]))


def _cpu_count(root: Path) -> int:
    return len(_cpus(root)) or len(parse_cpu_list(read_text(root, "/sys/devices/system/cpu/online") or "0"))


def check_frequency(root: Path) -> Check:
    governors: dict[str, str] = {}
    for cpu in _cpus(root):
        governor = read_text(root, f"/sys/devices/system/cpu/{cpu}/cpufreq/scaling_governor")
        if governor:
            governors[cpu] = governor
    driver = read_text(root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver")
    evidence = {"governors": governors, "driver": driver}
    if not governors:
        return Check(
            "cpu frequency",
            "info",
            "cpufreq is not exposed: the frequency is set by the host or firmware "
            "(usual in a virtual machine)",
            evidence=evidence,
        )
    slow = sorted(c for c, g in governors.items() if g != "performance")
    if not slow:
        return Check(
            "cpu frequency", "ok", f"every CPU uses the performance governor ({driver})", evidence=evidence
        )
    return Check(
        "cpu frequency",
        "warn",
        f"{counted(len(slow), 'CPU')} not on the performance governor "
        f"({', '.join(sorted(set(governors[c] for c in slow)))}, driver {driver}): the clock ramps up and "
        "down under the measurement",
        "sudo cpupower frequency-set -g performance",
        evidence,
    )


def check_idle_states(root: Path) -> Check:
    states: list[dict[str, Any]] = []
    for state in sorted((root / "sys/devices/system/cpu/cpu0/cpuidle").glob("state[0-9]*")):
        name = read_text(root, str(state.relative_to(root) / "name"))
        latency = read_text(root, str(state.relative_to(root) / "latency"))
        disabled = read_text(root, str(state.relative_to(root) / "disable"))
        states.append({"name": name, "exit_latency_us": int(latency or 0), "disabled": disabled == "1"})
    has_dma = (root / "dev/cpu_dma_latency").exists()
    evidence = {"states": states, "cpu_dma_latency": has_dma}
    if not states:
        return Check(
            "idle states",
            "info",
            "no cpuidle states exposed: idle is the hypervisor's or a plain halt; "
            "waking an idle vCPU still costs microseconds",
            evidence=evidence,
        )
    deep = [s for s in states if int(s["exit_latency_us"]) > 10 and not s["disabled"]]
    if not deep:
        return Check(
            "idle states",
            "ok",
            "no idle state with an exit latency above 10 µs is enabled",
            evidence=evidence,
        )
    worst = max(int(s["exit_latency_us"]) for s in deep)
    return Check(
        "idle states",
        "warn",
        f"{counted(len(deep), 'deep idle state')} enabled, exit latency up to {worst} µs",
        "sudo cpupower idle-set -D 10   (or hold /dev/cpu_dma_latency open with the value 0 while measuring)",
        evidence,
    )


def check_smt(root: Path) -> Check:
    active = read_text(root, "/sys/devices/system/cpu/smt/active")
    control = read_text(root, "/sys/devices/system/cpu/smt/control")
    evidence = {"active": active, "control": control}
    if active is None:
        return Check("smt", "info", "SMT state not exposed", evidence=evidence)
    if active == "1":
        return Check(
            "smt",
            "warn",
            "hyperthreads are on: a busy sibling thread slows the measured one",
            "echo off | sudo tee /sys/devices/system/cpu/smt/control   (or keep the siblings idle)",
            evidence,
        )
    return Check("smt", "ok", f"SMT off (control: {control})", evidence=evidence)


def check_isolation(root: Path) -> Check:
    evidence = isolation(root)
    if evidence["isolcpus"] and evidence["nohz_full"] and evidence["rcu_nocbs"]:
        return Check(
            "cpu isolation",
            "ok",
            f"isolated CPUs {evidence['isolcpus']} (nohz_full, rcu_nocbs set)",
            evidence=evidence,
        )
    n = _cpu_count(root)
    spare = f"{n // 2}-{n - 1}" if n // 2 < n - 1 else str(n - 1)  # the upper half of the CPUs
    missing = [k for k, v in evidence.items() if not v]
    return Check(
        "cpu isolation",
        "warn" if n > 2 else "info",
        f"not set: {', '.join(missing)}; the scheduler, timer ticks and RCU callbacks may run on the measured "
        "CPUs",
        f"add 'isolcpus={spare} nohz_full={spare} rcu_nocbs={spare}' to GRUB_CMDLINE_LINUX, "
        "sudo update-grub, reboot; then --pin CPUs from that set",
        evidence,
    )


def _processes(root: Path) -> list[str]:
    names = []
    for comm in (root / "proc").glob("[0-9]*/comm"):
        try:
            names.append(comm.read_text().strip())
        except OSError:
            continue
    return names


def check_irqs(root: Path) -> Check:
    running = "irqbalance" in _processes(root)
    evidence = {
        "irqbalance_running": running,
        "default_smp_affinity": read_text(root, "/proc/irq/default_smp_affinity"),
    }
    if running:
        return Check(
            "irq affinity",
            "warn",
            "irqbalance is running: it moves interrupts onto any CPU, including measured ones",
            "sudo systemctl stop irqbalance && for f in /proc/irq/*/smp_affinity_list; do "
            "echo 0 | sudo tee $f; done",
            evidence,
        )
    return Check("irq affinity", "ok", "irqbalance is not running", evidence=evidence)


def check_thp(root: Path) -> Check:
    enabled = read_text(root, "/sys/kernel/mm/transparent_hugepage/enabled") or ""
    evidence = {"enabled": enabled}
    if "[always]" in enabled:
        return Check(
            "transparent huge pages",
            "warn",
            "THP always on: khugepaged compaction can stall a thread",
            "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled",
            evidence,
        )
    if not enabled:
        return Check("transparent huge pages", "info", "THP setting not exposed", evidence=evidence)
    return Check("transparent huge pages", "ok", f"THP {enabled}", evidence=evidence)


def check_swap(root: Path) -> Check:
    meminfo = read_text(root, "/proc/meminfo") or ""
    total = next((int(line.split()[1]) for line in meminfo.splitlines() if line.startswith("SwapTotal:")), 0)
    evidence = {"swap_total_kib": total}
    if total > 0:
        return Check(
            "swap",
            "warn",
            f"{total // 1024} MiB of swap: unlocked pages can be swapped out",
            "sudo swapoff -a   (jitterlab locks its own buffers with mlockall)",
            evidence,
        )
    return Check("swap", "ok", "no swap", evidence=evidence)


def check_numa(root: Path) -> Check:
    nodes = sorted(p.name for p in (root / "sys/devices/system/node").glob("node[0-9]*"))
    evidence = {"nodes": nodes}
    if len(nodes) > 1:
        first = read_text(root, f"/sys/devices/system/node/{nodes[0]}/cpulist")
        return Check(
            "numa",
            "info",
            f"{len(nodes)} NUMA nodes: cross-node messages cost more",
            f"keep a run on one node, e.g. --pin {first}",
            evidence,
        )
    return Check("numa", "ok", "one NUMA node" if nodes else "NUMA not exposed (one node)", evidence=evidence)


def check_clocksource(root: Path) -> Check:
    base = "/sys/devices/system/clocksource/clocksource0"
    current = read_text(root, f"{base}/current_clocksource") or ""
    available = (read_text(root, f"{base}/available_clocksource") or "").split()
    evidence = {"current": current, "available": available}
    if current == "tsc":
        return Check(
            "clocksource", "ok", "tsc: clock reads cost tens of nanoseconds (vDSO)", evidence=evidence
        )
    fix = f"echo tsc | sudo tee {base}/current_clocksource" if "tsc" in available else ""
    if current == "kvm-clock":
        return Check(
            "clocksource",
            "info",
            "kvm-clock: paravirtual and fast, though tsc is cheaper where stable",
            fix,
            evidence,
        )
    return Check(
        "clocksource",
        "warn",
        f"{current or 'unknown'}: every clock read may be a slow hardware access",
        fix,
        evidence,
    )


def check_preempt_rt(root: Path) -> Check:
    version = read_text(root, "/proc/sys/kernel/version") or ""
    realtime = read_text(root, "/sys/kernel/realtime") == "1" or "PREEMPT_RT" in version
    evidence = {"kernel_version": version, "realtime": realtime}
    if realtime:
        return Check(
            "preempt_rt", "ok", "PREEMPT_RT kernel: scheduling latency is bounded", evidence=evidence
        )
    return Check(
        "preempt_rt",
        "info",
        f"not a PREEMPT_RT kernel ({version or 'version unknown'}): worst-case "
        "scheduling latency is not bounded",
        "install and boot a real-time kernel (Debian: sudo apt-get install linux-image-rt-amd64)",
        evidence,
    )


def check_rt_throttling(root: Path) -> Check:
    runtime = read_text(root, "/proc/sys/kernel/sched_rt_runtime_us")
    period = read_text(root, "/proc/sys/kernel/sched_rt_period_us")
    evidence = {"sched_rt_runtime_us": runtime, "sched_rt_period_us": period}
    if runtime is None or period is None:
        return Check("rt throttling", "info", "RT throttling settings not exposed", evidence=evidence)
    if int(runtime) < 0:
        return Check(
            "rt throttling",
            "info",
            "RT throttling off: a runaway real-time thread can hang the machine",
            evidence=evidence,
        )
    stall_ms = (int(period) - int(runtime)) / 1000
    return Check(
        "rt throttling",
        "warn",
        f"real-time threads that use every CPU are stopped for {stall_ms:g} ms "
        f"every {int(period) / 1000:g} ms (a {stall_ms:g} ms spike)",
        "sudo sysctl kernel.sched_rt_runtime_us=-1   (only while measuring: nothing then stops a runaway "
        "RT thread)",
        evidence,
    )


def _steal_fraction(root: Path) -> float | None:
    stat = read_text(root, "/proc/stat") or ""
    fields = next((line.split()[1:] for line in stat.splitlines() if line.startswith("cpu ")), [])
    if len(fields) < 8:
        return None
    values = [int(v) for v in fields[:8]]
    return values[7] / max(sum(values), 1)


def check_virtualization(root: Path) -> Check:
    from jitterlab.measure.environment import virtualization

    hypervisor = virtualization(root)
    steal = _steal_fraction(root)
    evidence = {"hypervisor": hypervisor, "steal_fraction_since_boot": steal}
    if hypervisor is None:
        return Check("virtualization", "ok", "bare metal", evidence=evidence)
    steal_text = "" if steal is None else f", {steal:.2%} of CPU time stolen by the host since boot"
    return Check(
        "virtualization",
        "warn",
        f"virtual machine ({hypervisor}){steal_text}: host preemption and slow "
        "cross-core wake-ups add jitter",
        "measure on bare metal, or have the host pin the vCPUs to dedicated cores",
        evidence,
    )


def check_timer_slack(root: Path) -> Check:
    slack = read_text(root, "/proc/self/timerslack_ns")
    evidence = {"timerslack_ns": slack}
    if slack is None:
        return Check("timer slack", "info", "timer slack not exposed", evidence=evidence)
    if int(slack) <= 1000:
        return Check("timer slack", "ok", f"timer slack {slack} ns", evidence=evidence)
    return Check(
        "timer slack",
        "info",
        f"timer slack {int(slack) / 1000:g} µs: sleeps of SCHED_OTHER threads may "
        "overshoot by that much (real-time threads have none)",
        "use --policy fifo or rr, or prctl(PR_SET_TIMERSLACK, 1) in your program",
        evidence,
    )


def _capabilities(root: Path) -> int:
    status = read_text(root, "/proc/self/status") or ""
    effective = next((line.split()[1] for line in status.splitlines() if line.startswith("CapEff:")), "0")
    return int(effective, 16)


def _limit(root: Path, name: str) -> str | None:
    for line in (read_text(root, "/proc/self/limits") or "").splitlines():
        if line.startswith(name):
            return line[len(name) :].split()[0]
    return None


def check_rt_permission(root: Path) -> Check:
    caps = _capabilities(root)
    rtprio = _limit(root, "Max realtime priority")
    evidence = {"cap_sys_nice": bool(caps >> CAP_SYS_NICE & 1), "rlimit_rtprio": rtprio}
    if evidence["cap_sys_nice"] or (rtprio not in (None, "0")):
        return Check(
            "sched_fifo permission", "ok", "this user may use SCHED_FIFO/SCHED_RR", evidence=evidence
        )
    return Check(
        "sched_fifo permission",
        "warn",
        "this user may not use SCHED_FIFO/SCHED_RR: --policy fifo/rr will be refused (recorded, not fatal)",
        "add '@realtime - rtprio 95' to /etc/security/limits.conf and log in again, or run as root",
        evidence,
    )


def check_mlock_permission(root: Path) -> Check:
    caps = _capabilities(root)
    memlock = _limit(root, "Max locked memory")
    evidence = {"cap_ipc_lock": bool(caps >> CAP_IPC_LOCK & 1), "rlimit_memlock": memlock}
    if (
        evidence["cap_ipc_lock"]
        or memlock == "unlimited"
        or ((memlock or "0").isdigit() and int(memlock or 0) >= 1 << 30)
    ):
        return Check(
            "mlock permission", "ok", "this user may lock the sample buffers in memory", evidence=evidence
        )
    return Check(
        "mlock permission",
        "warn",
        f"mlock is limited to {memlock} bytes: large runs cannot lock their buffers and may take page faults",
        "ulimit -l unlimited   (memlock in /etc/security/limits.conf)",
        evidence,
    )


def check_tracing(root: Path) -> Check:
    perf = shutil.which("perf")
    paranoid = read_text(root, "/proc/sys/kernel/perf_event_paranoid")
    caps = _capabilities(root)
    admin = bool(caps >> 21 & 1) or bool(caps >> 38 & 1)  # CAP_SYS_ADMIN or CAP_PERFMON
    evidence = {"perf": perf, "perf_event_paranoid": paranoid, "privileged": admin}
    if perf and (admin or (paranoid is not None and int(paranoid) <= -1)):
        return Check(
            "tracing",
            "ok",
            "perf can record scheduler and IRQ tracepoints: hiccups get attributed",
            evidence=evidence,
        )
    reason = (
        "perf is not installed"
        if not perf
        else f"perf_event_paranoid is {paranoid} and this user is not privileged"
    )
    return Check(
        "tracing",
        "info",
        f"spike attribution unavailable: {reason}",
        "sudo apt-get install linux-perf; run as root or sudo sysctl kernel.perf_event_paranoid=-1",
        evidence,
    )


CHECKS = (
    check_frequency,
    check_idle_states,
    check_smt,
    check_isolation,
    check_irqs,
    check_thp,
    check_swap,
    check_numa,
    check_clocksource,
    check_preempt_rt,
    check_rt_throttling,
    check_virtualization,
    check_timer_slack,
    check_rt_permission,
    check_mlock_permission,
    check_tracing,
)


def run_checks(root: Path = Path("/")) -> list[Check]:
    """Every check, in a fixed order."""
    return [check(root) for check in CHECKS]


def doctor_facts(root: Path = Path("/")) -> list[dict[str, str]]:
    """The findings in the compact form stored with every run."""
    return [{"check": c.name, "status": c.status, "finding": c.finding} for c in run_checks(root)]

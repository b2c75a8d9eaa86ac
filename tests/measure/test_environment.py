"""Environment facts read through one root path, so recorded /proc and /sys trees work."""

from __future__ import annotations

from pathlib import Path

from jitterlab.measure import environment


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_kvm_microvm_without_dmi(tmp_path: Path) -> None:
    write(
        tmp_path, "proc/cpuinfo", "model name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse2 hypervisor\n"
    )
    write(
        tmp_path,
        "sys/devices/system/clocksource/clocksource0/available_clocksource",
        "kvm-clock tsc acpi_pm\n",
    )
    write(tmp_path, "sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc\n")
    write(tmp_path, "proc/cmdline", "console=ttyS0 isolcpus=1 nohz_full=1\n")
    facts = environment.collect(tmp_path)
    assert facts["virtualization"] == "kvm"
    assert facts["cpu_model"] == "Intel(R) Xeon(R) Processor"
    assert facts["clocksource"] == "tsc"
    assert facts["isolcpus"] == "1" and facts["nohz_full"] == "1"
    assert facts["governors"] == {}


def test_bare_metal_with_governors_and_rt_kernel(tmp_path: Path) -> None:
    write(tmp_path, "proc/cpuinfo", "model name\t: AMD Ryzen\nflags\t\t: fpu sse2\n")
    write(tmp_path, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n")
    write(tmp_path, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance\n")
    write(tmp_path, "sys/kernel/realtime", "1\n")
    write(tmp_path, "sys/devices/system/cpu/smt/active", "1\n")
    facts = environment.collect(tmp_path)
    assert facts["virtualization"] is None
    assert facts["governors"] == {"cpu0": "powersave", "cpu1": "performance"}
    assert facts["preempt_rt"] is True
    assert facts["smt_active"] is True


def test_cpu_lists() -> None:
    assert environment.parse_cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert environment.parse_cpu_list("") == []


def test_loadavg_is_read_and_an_unreadable_one_is_none(tmp_path: Path) -> None:
    write(tmp_path, "proc/loadavg", "3.52 2.10 1.75 4/312 98765\n")
    assert environment.loadavg(tmp_path) == {
        "load1": 3.52,
        "load5": 2.1,
        "load15": 1.75,
        "runnable": 4,
        "entities": 312,
    }
    before = environment.loadavg(tmp_path)
    write(tmp_path, "proc/loadavg", "5.00 2.50 1.80 2/300 98800\n")
    assert environment.load_during(before, tmp_path) == {
        "before": before,
        "after": {"load1": 5.0, "load5": 2.5, "load15": 1.8, "runnable": 2, "entities": 300},
    }
    write(tmp_path, "proc/loadavg", "garbage\n")
    assert environment.loadavg(tmp_path) is None
    assert environment.loadavg(tmp_path / "nowhere") is None

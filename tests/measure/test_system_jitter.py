"""doctor on recorded trees, hiccup and pipeline runs, stress-ng load, spike attribution."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_one_line_error, run_cli, run_main
from jitterlab.describe import attribution
from jitterlab.measure import tracing
from jitterlab.measure.doctor import run_checks
from jitterlab.measure.load import LoadSpec, parse_load, running_load
from jitterlab.store import ResultsStore

FIXTURES = Path(__file__).parents[1] / "fixtures" / "doctor"


def statuses(tree: str) -> dict[str, str]:
    return {c.name: c.status for c in run_checks(FIXTURES / tree)}


def test_doctor_on_a_laptop_in_powersave() -> None:
    s = statuses("laptop-powersave")
    for name in (
        "cpu frequency",
        "idle states",
        "smt",
        "irq affinity",
        "transparent huge pages",
        "swap",
        "rt throttling",
        "sched_fifo permission",
        "mlock permission",
    ):
        assert s[name] == "warn", name
    assert s["virtualization"] == "ok"
    assert s["preempt_rt"] == "info"


def test_doctor_on_an_rt_kernel() -> None:
    s = statuses("rt-kernel")
    for name in (
        "cpu frequency",
        "idle states",
        "smt",
        "cpu isolation",
        "transparent huge pages",
        "swap",
        "preempt_rt",
        "clocksource",
        "sched_fifo permission",
        "mlock permission",
        "virtualization",
    ):
        assert s[name] == "ok", name
    assert s["rt throttling"] == "info"  # switched off: said, with its risk


def test_doctor_on_the_recorded_kvm_guest() -> None:
    checks = {c.name: c for c in run_checks(FIXTURES / "kvm-vm")}
    assert checks["virtualization"].status == "warn"
    assert checks["virtualization"].evidence["hypervisor"] == "kvm"
    assert checks["cpu frequency"].status == "info"
    assert checks["preempt_rt"].status == "info"
    assert checks["rt throttling"].status == "warn" and "50 ms" in checks["rt throttling"].finding


def test_every_warning_names_its_fix() -> None:
    for tree in ("laptop-powersave", "rt-kernel", "kvm-vm"):
        warned = [c for c in run_checks(FIXTURES / tree) if c.status == "warn"]
        # the laptop and the VM are recorded untuned machines: they must trip some checks
        assert warned or tree == "rt-kernel", f"{tree}: the fixture is meant to trip some checks, none warned"
        assert [c.name for c in warned if not c.fix] == [], f"{tree}: warnings without a fix"


def test_doctor_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(["doctor", "--json", "--root", str(FIXTURES / "laptop-powersave")], capsys)
    assert code == 0
    checks = json.loads(out)
    assert len(checks) >= 16 and {"name", "status", "finding", "fix", "evidence"} <= set(checks[0])


def test_hiccup_report_holds_the_run_it_stored(store: Path, tmp_path: Path) -> None:
    """`hiccup --report` (issue 28 item 2): the HTML report of the run just made, the one
    `bench --report` and `jitterlab report` write; an unwritable path is refused first."""
    page = tmp_path / "hiccup.html"
    args = ("hiccup", "--duration", "0.5s", "--cpus", "0", "--store", str(store))
    result = run_cli(*args, "--json", "--report", str(page))
    assert result.returncode == 0, result.stderr
    run_id = json.loads(result.stdout)["id"]
    text = page.read_text()
    assert text.startswith("<!doctype html>") and f"run <code>{run_id}</code>" in text
    refused = run_cli(*args, "--report", str(tmp_path / "no-such-folder" / "r.html"))
    assert refused.returncode == 2 and "--report" in refused.stderr
    assert len(ResultsStore(store).runs()) == 1  # refused before measuring


def test_hiccup_run_is_a_run_like_any_other(store: Path) -> None:
    result = run_cli("hiccup", "--duration", "1s", "--store", str(store), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    (run,) = ResultsStore(store).runs()
    assert run.config["technique"] == "hiccup"
    assert run.config["pairs"] == len(os.sched_getaffinity(0)) == len(data["per_cpu"])
    assert (run.latency_ns > data["threshold_ns"]).all()
    assert set(run.pair.tolist()) <= set(os.sched_getaffinity(0))
    assert "doctor" in run.meta and run.meta["hiccup"]["per_cpu"]
    for row in data["per_cpu"]:
        assert 0 <= row["time_lost_fraction"] < 1 and row["interruptions"] >= 0
    assert run_cli("describe", run.id, "--store", str(store)).returncode == 0


def test_pipeline_stores_four_series(store: Path) -> None:
    result = run_cli("bench", "--scenario", "pipeline", "--samples", "20000", "--store", str(store))
    assert result.returncode == 0, result.stderr
    for column in ("99.9999%", "count", "accumulator-transit", "journaller-inter-message"):
        assert column in result.stdout
    runs = ResultsStore(store).runs()
    assert sorted(r.config["series"] for r in runs) == sorted(
        ["accumulator-transit", "accumulator-inter-message", "journaller-transit", "journaller-inter-message"]
    )
    for run in runs:
        expected = 20_000 if run.config["series"].endswith("transit") else 19_999
        assert run.latency_ns.size == expected and (run.latency_ns > 0).all()
        assert run.meta["pipeline"]["journal_bytes"] == 8 * 21_000  # every transit latency, warm-up included
    inter = next(r for r in runs if r.config["series"] == "accumulator-inter-message")
    # The producer spins 10 µs between publications, so messages arrive at least that far
    # apart on average. Not the median: a consumer descheduled on a busy 2-vCPU machine
    # drains a burst back to back (inter-message times near 0), which is real jitter.
    assert 8_000 < inter.latency_ns.mean() < 1_000_000


def stress_ng_running(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_load_starts_and_stops_stress_ng_without_strays() -> None:
    with running_load(LoadSpec("cpu", 1)) as info:
        assert info is not None
        assert stress_ng_running(info["pid"])
        workers = subprocess.run(
            ["pgrep", "-g", str(info["pid"])], capture_output=True, text=True
        ).stdout.split()
        assert len(workers) >= 2, "stress-ng and its worker"
    assert info["stopped_cleanly"]
    assert not stress_ng_running(info["pid"])


def test_load_is_recorded_with_the_run(store: Path) -> None:
    result = run_cli("hiccup", "--duration", "1s", "--load", "memory:1", "--store", str(store))
    assert result.returncode == 0, result.stderr
    (run,) = ResultsStore(store).runs()
    load = run.meta["load"]
    assert load["kind"] == "memory" and load["workers"] == 1 and load["command"][0] == "stress-ng"
    assert load["stopped_cleanly"] is True  # known only after the run was stored: amended on disk
    assert not stress_ng_running(load["pid"])


@pytest.mark.parametrize(
    "args",
    [
        ["hiccup", "--duration", "0"],
        ["hiccup", "--duration", "soon"],
        ["hiccup", "--cpus", "x"],
        ["hiccup", "--policy", "batch"],
        ["hiccup", "--threshold", "fast"],
        ["hiccup", "--load", "gpu"],
        ["hiccup", "--load", "cpu:0"],
        ["bench", "--scenario", "pipeline", "--pin-producer", "x"],
        ["bench", "--scenario", "pipeline", "--policy", "deadline"],
        ["doctor", "--color"],
    ],
)
def test_bad_flags(args: list[str], store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra = ["--store", str(store)] if args[0] != "doctor" else []
    code, _, err = run_main([*args, *extra], capsys)
    assert code == 2
    assert_one_line_error(err)


def test_parse_load() -> None:
    assert parse_load(None) is None and parse_load("none") is None
    assert parse_load("io:3") == LoadSpec("io", 3)
    assert parse_load("mixed").workers == (os.cpu_count() or 1)


# Lines as `perf script --ns -F comm,pid,tid,cpu,time,event,trace` printed them on this VM.
PERF_LINES = """\
 jitterlab-hiccu 23600/23602 [001]  3537.445897099:       sched:sched_switch: prev_comm=jitterlab-hiccu prev_pid=23602 prev_prio=120 prev_state=R ==> next_comm=kworker/1:1 next_pid=77 next_prio=120
     kworker/1:1    77/77    [001]  3537.445903011:       sched:sched_switch: prev_comm=kworker/1:1 prev_pid=77 prev_prio=120 prev_state=I ==> next_comm=jitterlab-hiccu next_pid=23602 next_prio=120
         swapper     0/0     [000]  3537.446000000:   irq:irq_handler_entry: irq=11 name=virtio0
 jitterlab-hiccu 23600/23601 [000]  3537.447000000:       irq:softirq_entry: vec=1 [action=TIMER]
 jitterlab-hiccu 23600/23601 [000]  3537.448000000: irq_vectors:local_timer_entry: vector=236
"""


def test_perf_lines_become_causes() -> None:
    events = tracing.parse_perf_script(PERF_LINES)
    assert events.counts["sched:sched_switch"] == 2
    assert events.causes[1] == ["task kworker"]  # only the switch away from our thread counts
    assert events.causes[0] == ["irq virtio0", "softirq TIMER", "timer tick"]
    t0 = 3537 * 1_000_000_000
    result = attribution.attribute(
        events,
        cpus=np.array([1, 0, 0]),
        starts=np.array([t0 + 445_890_000, t0 + 446_990_000, t0 + 449_000_000]),
        ends=np.array([t0 + 445_910_000, t0 + 448_010_000, t0 + 449_100_000]),
        in_vm=True,
    )
    causes = {c["cause"]: c["spikes"] for c in result["causes"]}
    assert causes == {
        "task kworker": 1,
        "softirq TIMER": 1,
        "timer tick": 1,
        "no guest event (host or hypervisor)": 1,
    }
    assert result["attributed"] == 2 and result["spikes"] == 3


def test_tracing_unavailable_is_detected_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracing.shutil, "which", lambda name: None)
    ok, reason = tracing.tracing_status()
    assert not ok and "linux-perf" in reason
    with tracing.tracing(True) as trace:
        assert trace == {"available": False, "reason": reason}


# A known interruption: a task named jl-intruder on the last CPU that spins 2 ms every 20 ms
INTRUDER = """
import os, sys, time
with open("/proc/self/comm", "w") as f:
    f.write("jl-intruder")
os.sched_setaffinity(0, {os.cpu_count() - 1})
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    busy = time.monotonic() + 0.002
    while time.monotonic() < busy:
        pass
    time.sleep(0.02)
"""


@pytest.mark.skipif(not tracing.tracing_status()[0], reason="perf tracing is not permitted on this machine")
def test_hiccup_with_tracing_attributes_every_spike(store: Path) -> None:
    intruder = subprocess.Popen([sys.executable, "-c", INTRUDER, "4"])
    try:
        result = run_cli("hiccup", "--duration", "2s", "--threshold", "5us", "--trace", "--store", str(store))
    finally:
        intruder.kill()
        intruder.wait()
    assert result.returncode == 0, result.stderr
    (run,) = ResultsStore(store).runs()
    block = attribution.spike_attribution(run)
    assert block is not None
    assert block["available"] and block["spikes"] == run.latency_ns.size
    assert sum(c["spikes"] for c in block["causes"]) >= block["spikes"]  # a spike can have several causes
    # the interruption the test caused is named: its task took the measuring thread's CPU
    caused = {c["cause"]: c["spikes"] for c in block["causes"]}
    assert caused.get("task jl-intruder", 0) >= 3, caused
    assert "spike causes" in result.stdout


def test_isolation_fix_names_the_upper_half_of_the_cpus() -> None:
    laptop = {c.name: c for c in run_checks(FIXTURES / "laptop-powersave")}["cpu isolation"]
    assert "isolcpus=4-7 " in laptop.fix
    vm = {c.name: c for c in run_checks(FIXTURES / "kvm-vm")}["cpu isolation"]
    assert "isolcpus=1 " in vm.fix


def test_attribution_follows_the_outlier_test_chosen_when_describing(tmp_path: Path) -> None:
    from conftest import make_run
    from jitterlab.core.fileio import atomic_write_json
    from jitterlab.describe.analysis import describe_run
    from jitterlab.store import load_run
    from jitterlab.store.trace import TRACE_FILE, TraceEvents, write_trace_events

    latency = np.random.default_rng(5).lognormal(10, 0.6, 5_000).astype(np.int64)  # a continuous tail
    run = make_run(tmp_path / "s", latency)
    # one "timer tick" on CPU 3 inside every sample: every spike has a cause
    starts = run.t_send_ns
    events = TraceEvents({3: np.sort(starts + 1)}, {3: ["timer tick"] * starts.size}, {"irq": starts.size})
    write_trace_events(run.path / TRACE_FILE, events)
    run.meta["trace"] = {
        "available": True,
        "tool": "perf",
        "events": events.counts,
        "file": TRACE_FILE,
        "in_vm": True,
        "spike_cpu": {"available": True, "from": "receiver", "cpu_of_pair": [3]},
    }
    atomic_write_json(run.path / "run.json", run.meta)
    stored = load_run(run.path)
    for test in ("stacked-z", "gesd"):
        d = describe_run(stored, test)
        assert d.attribution is not None and d.attribution["available"]
        above_main = int(np.sum(latency > d.categories.thresholds[0]))
        assert d.attribution["spikes"] == above_main == d.attribution["attributed"]
        assert d.attribution["causes"][0]["cause"] == "timer tick"
    loose, strict = describe_run(stored), describe_run(stored, threshold=6.0)
    assert loose.attribution is not None and strict.attribution is not None
    assert strict.attribution["spikes"] == int(np.sum(latency > strict.categories.thresholds[0]))
    assert strict.attribution["spikes"] < loose.attribution["spikes"]

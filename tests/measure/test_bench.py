"""The measurement core end to end: real harness processes, real threads, real store."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_one_line_error, run_cli
from jitterlab import load_run
from jitterlab.measure.techniques import native_techniques
from jitterlab.store import ResultsStore

ALL = ["mutex", "spin", "spsc", "futex", "pipe", "unix", "caf"]
SAMPLES = 10_000


@pytest.fixture(scope="module")
def matrix_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One bench call over every technique with 2 pairs x 10k samples."""
    store = tmp_path_factory.mktemp("matrix") / "results"
    techniques = [t for t in ALL if t != "caf" or caf_built()]
    result = run_cli(
        "bench",
        "--technique",
        ",".join(techniques),
        "--pairs",
        "2",
        "--samples",
        str(SAMPLES),
        "--warmup-samples",
        "100",
        "--store",
        str(store),
    )
    assert result.returncode == 0, result.stderr
    return store


def caf_built() -> bool:
    return any(t.name == "caf" and t.available for t in native_techniques())


def test_caf_is_built_on_this_machine() -> None:
    # setup.sh installs libcaf-dev, so the harness must have been built with CAF here.
    caf = next(t for t in native_techniques() if t.name == "caf")
    assert caf.available, caf.description


def test_every_technique_stores_exactly_the_requested_samples(matrix_store: Path) -> None:
    runs = ResultsStore(matrix_store).runs()
    techniques = [t for t in ALL if t != "caf" or caf_built()]
    assert sorted(r.config["technique"] for r in runs) == sorted(techniques)
    for run in runs:
        assert run.meta["status"] == "complete", run.meta["partial_reason"]
        latency = run.latency_ns
        assert latency.size == 2 * SAMPLES
        assert (latency > 0).all(), f"{run.label}: non-positive latency"
        for pair in (0, 1):
            seq = run.seq[run.pair == pair]
            assert np.array_equal(seq, np.arange(SAMPLES)), f"{run.label}: pair {pair} sequence numbers"
        # senders of the same round send after the previous round was received
        t_send = run.t_send_ns[run.pair == 0]
        assert (np.diff(t_send) > 0).all()


def test_metadata_is_complete(matrix_store: Path) -> None:
    run = ResultsStore(matrix_store).runs()[0]
    meta = run.meta
    for key in (
        "schema_version",
        "id",
        "created_utc",
        "status",
        "config",
        "obtained",
        "environment",
        "tool",
        "floor",
        "samples",
        "summary",
        "timing",
    ):
        assert key in meta, key
    env = meta["environment"]
    for key in (
        "host",
        "cpu_model",
        "logical_cpus",
        "kernel",
        "preempt_rt",
        "clocksource",
        "virtualization",
        "isolcpus",
        "nohz_full",
        "governors",
        "smt_active",
    ):
        assert key in env, key
    assert meta["tool"]["version"]
    assert meta["obtained"]["policies"] == ["other"]
    assert len(meta["obtained"]["placements"]) >= 4
    floor = meta["floor"]
    assert floor["clock_overhead_ns"]["median"] > 0
    assert floor["c2c_one_way_ns"]["measured"] == ((os.cpu_count() or 1) >= 2)
    assert meta["samples"]["rows"] == 2 * SAMPLES
    assert meta["summary"]["latency_ns"]["count"] == 2 * SAMPLES


def test_spinning_with_more_threads_than_cpus_falls_back_and_says_so(matrix_store: Path) -> None:
    if (os.cpu_count() or 1) >= 4:
        pytest.skip("needs fewer than 4 CPUs to oversubscribe 2 spinning pairs")
    run = next(r for r in ResultsStore(matrix_store).runs() if r.config["technique"] == "spin")
    assert run.meta["obtained"]["spin_mode"] == "yield"
    assert "spinning threads" in run.meta["obtained"]["spin_fallback_reason"]


def test_load_run_by_prefix_gives_arrays_and_dataframe(matrix_store: Path) -> None:
    run = ResultsStore(matrix_store).runs()[0]
    prefix = run.id.rsplit("-", 1)[0]  # without the random suffix: unique in this store
    loaded = load_run(prefix, store=matrix_store)
    assert loaded.id == run.id
    df = loaded.dataframe()
    assert list(df.columns) == ["pair", "seq", "t_send_ns", "t_recv_ns", "latency_ns"]
    assert len(df) == loaded.latency_ns.size == 2 * SAMPLES
    assert (df["latency_ns"].to_numpy() == loaded.latency_ns).all()


def test_runs_and_show_read_the_store(matrix_store: Path) -> None:
    listing = run_cli("runs", "--store", str(matrix_store))
    assert listing.returncode == 0
    assert "p99" in listing.stdout and "mutex" in listing.stdout
    run = ResultsStore(matrix_store).runs()[0]
    shown = run_cli("show", run.id, "--store", str(matrix_store), "--json")
    summary = json.loads(shown.stdout)["summary_ns"]
    assert summary["count"] == 2 * SAMPLES
    assert summary["min"] <= summary["p50"] <= summary["p99"] <= summary["p99_99"] <= summary["max"]
    text = run_cli("show", run.id, "--store", str(matrix_store)).stdout
    for word in ("count", "min", "mean", "median", "p90", "p99", "p99.9", "p99.99", "max", "std", "floor"):
        assert word in text


def test_c2c_runs_on_its_own(store: Path) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("core-to-core needs two CPUs")
    result = run_cli("bench", "--technique", "c2c", "--samples", "5000", "--store", str(store))
    assert result.returncode == 0, result.stderr
    (run,) = ResultsStore(store).runs()
    assert run.latency_ns.size == 5000
    assert (run.latency_ns > 0).all()


def test_every_run_records_the_floor_it_met_before_and_after(store: Path) -> None:
    """Issue 27 item 11: the cross-core cost flips between regimes on this VM; every run keeps
    the core-to-core floor measured before and after it, and the default command says which
    flags give the pure-channel figure comparable with it."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("core-to-core needs two CPUs")
    result = run_cli("bench", "--technique", "spsc", "--samples", "3000", "--store", str(store))
    assert result.returncode == 0, result.stderr
    (run,) = ResultsStore(store).runs()
    floor = run.meta["floor"]
    before, after = floor["c2c_one_way_ns"], floor["c2c_end_one_way_ns"]
    assert before["measured"] and after["measured"]
    assert 0 < before["median"] < 100_000 and 0 < after["median"] < 100_000
    assert "--block-ints 0 --pin spread" in result.stderr
    shown = run_cli("show", run.id, "--store", str(store)).stdout
    assert "after it" in shown
    pure = run_cli(
        "bench",
        "--technique",
        "spsc",
        "--samples",
        "3000",
        "--block-ints",
        "0",
        "--pin",
        "spread",
        "--store",
        str(store),
    )
    assert pure.returncode == 0 and "pure-channel figures" in pure.stderr, pure.stderr


def wait_until_recording(proc: subprocess.Popen[str]) -> int:
    """The pid of the harness ``proc`` (a jitterlab bench) started, once it records: main,
    driver, sender and receiver threads exist (the floor's two ping-pong threads come and go
    before them; on a busy machine the floor takes seconds), plus half a second of samples.
    The harness is found as jitterlab's child (its --out is the staging folder's descriptor,
    /proc/self/fd/N, since issue 42: no store path in its command line)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = subprocess.run(
            ["pgrep", "-P", str(proc.pid), "-f", "jitterlab-bench"], capture_output=True, text=True
        )
        pids = found.stdout.split()
        if pids and Path(f"/proc/{pids[0]}/task").is_dir() and len(os.listdir(f"/proc/{pids[0]}/task")) >= 4:
            time.sleep(0.5)
            return int(pids[0])
        time.sleep(0.05)
    raise AssertionError("the harness never started recording")


def test_sigint_keeps_a_readable_partial_run(store: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jitterlab",
            "bench",
            "--technique",
            "mutex",
            "--pairs",
            "1",
            "--samples",
            "50000000",
            "--store",
            str(store),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until_recording(proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    (run,) = ResultsStore(store).runs()
    assert run.meta["status"] == "partial"
    assert "SIGINT" in run.meta["partial_reason"]
    assert 0 < run.latency_ns.size < 50_000_000
    assert np.array_equal(run.seq, np.arange(run.latency_ns.size))


def test_truncated_samples_file_is_named_as_corrupt(store: Path) -> None:
    assert run_cli("bench", "--technique", "spsc", "--samples", "2000", "--store", str(store)).returncode == 0
    (run,) = ResultsStore(store).runs()
    samples = run.path / "samples.parquet"
    os.truncate(samples, samples.stat().st_size // 2)
    result = run_cli("show", run.id, "--store", str(store))
    assert result.returncode == 2
    assert_one_line_error(result.stderr)
    assert "samples.parquet" in result.stderr and "corrupt" in result.stderr


def test_damaged_run_json_is_named(store: Path) -> None:
    assert run_cli("bench", "--technique", "pipe", "--samples", "500", "--store", str(store)).returncode == 0
    (run,) = ResultsStore(store).runs()
    (run.path / "run.json").write_text('{"id": "x", "schema_')
    result = run_cli("show", str(run.path))
    assert result.returncode == 2
    assert_one_line_error(result.stderr)
    assert "run.json" in result.stderr


def test_unwritable_store_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store should be")
    result = run_cli("bench", "--technique", "mutex", "--samples", "100", "--store", str(blocker))
    assert result.returncode == 2
    assert_one_line_error(result.stderr)
    assert "cannot write to results store" in result.stderr


@pytest.mark.skipif(
    shutil.which("setpriv") is None, reason="setpriv (util-linux) is needed to drop CAP_SYS_NICE"
)
def test_refused_policy_warns_records_and_goes_on(store: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "jitterlab",
        "bench",
        "--technique",
        "mutex",
        "--samples",
        "1000",
        "--policy",
        "fifo",
        "--priority",
        "80",
        "--store",
        str(store),
    ]
    if os.geteuid() == 0:
        # root may always use SCHED_FIFO: take that right away, as an unprivileged user has it
        cmd = ["setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice", *cmd]
    result = subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, env=os.environ | {"PYTHONUNBUFFERED": "1"}
    )
    if result.returncode != 0 and "setpriv" in result.stderr:
        pytest.skip(f"setpriv cannot drop capabilities here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    assert "refused" in result.stderr
    (run,) = ResultsStore(store).runs()
    assert run.config["policy"] == "fifo"
    assert run.meta["obtained"]["policies"] == ["other"]
    assert all(p["policy_error"] for p in run.meta["obtained"]["placements"])
    assert "policy-refused" in {w["code"] for w in run.meta["obtained"]["warnings"]}
    assert run.meta["status"] == "complete"


@pytest.mark.skipif(
    shutil.which("setpriv") is None, reason="setpriv (util-linux) is needed to drop CAP_SYS_NICE"
)
def test_a_refused_rr_90_is_stored_and_labelled_as_what_it_got(store: Path) -> None:
    """Issue 38 item 1: the id, the label, `runs` and the stored line name the policy the
    kernel granted, and the refusal ("other — rr 90 refused"), never a bare "rr 90"."""
    cmd = [sys.executable, "-m", "jitterlab", "bench", "--technique", "mutex", "--samples", "1000"]
    cmd += ["--policy", "rr", "--priority", "90", "--store", str(store)]
    if os.geteuid() == 0:  # as an unprivileged user: without CAP_SYS_NICE
        cmd = ["setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice", *cmd]
    result = subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, env=os.environ | {"PYTHONUNBUFFERED": "1"}
    )
    if result.returncode != 0 and "setpriv" in result.stderr:
        pytest.skip(f"setpriv cannot drop capabilities here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    (run,) = ResultsStore(store).runs()
    assert "-mutex-p1-other-rr90-refused-" in run.id
    assert run.label == "mutex ×1 other — rr 90 refused"
    assert "rr 90 refused" in result.stdout  # the bench table
    listed = run_cli("runs", "--store", str(store))
    assert listed.returncode == 0 and "other — rr 90 refused" in listed.stdout


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting to be reaped does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def start_long_bench(store: Path) -> tuple[subprocess.Popen[str], int]:
    """A bench that would run for minutes, in its own session as a script would start it;
    returns (it, its harness's pid) once it is recording."""
    argv = [sys.executable, "-m", "jitterlab", "bench", "--technique", "mutex", "--samples", "50000000"]
    proc = subprocess.Popen(
        [*argv, "--store", str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    return proc, wait_until_recording(proc)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_keep_a_partial_run_like_sigint(store: Path, signum: int) -> None:
    proc, _ = start_long_bench(store)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    (run,) = ResultsStore(store).runs()
    assert run.meta["status"] == "partial"
    assert signal.Signals(signum).name in run.meta["partial_reason"]
    assert 0 < run.latency_ns.size < 50_000_000
    assert not [p for p in (store / ".staging").iterdir()], "nothing may stay behind in .staging"


def test_a_killed_bench_leaves_a_harness_that_stops_and_a_run_recover_stores(store: Path) -> None:
    proc, harness = start_long_bench(store)
    proc.kill()  # SIGKILL to jitterlab alone: its harness must not run on unwatched
    proc.wait(timeout=10)
    deadline = time.monotonic() + 30
    while _alive(harness):
        assert time.monotonic() < deadline, "the harness outlived jitterlab"
        time.sleep(0.1)
    assert ResultsStore(store).runs() == []
    listed = run_cli("runs", "--store", str(store))
    assert "jitterlab recover" in listed.stderr
    recovered = run_cli("recover", "--store", str(store))
    assert recovered.returncode == 0, recovered.stderr
    (run,) = ResultsStore(store).runs()
    assert run.meta["status"] == "partial" and "recovered" in run.meta["partial_reason"]
    assert run.config["technique"] == "mutex"
    assert 0 < run.latency_ns.size < 50_000_000
    assert np.array_equal(run.seq, np.arange(run.latency_ns.size))
    assert ResultsStore(store).leftovers() == []


def test_each_stored_line_is_printed_as_the_run_is_stored(tmp_path: Path) -> None:
    """stderr to a pipe (a log): the first run's 'stored' line comes a whole run (3000 samples
    paced 1 ms apart) before the second's, not both at the end."""
    import subprocess
    import sys
    import time

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jitterlab",
            "bench",
            "--technique",
            "pipe",
            "--pairs",
            "1,2",
            "--samples",
            "3000",
            "--pause",
            "1ms",
            "--store",
            str(tmp_path / "s"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    arrivals = [time.monotonic() for line in proc.stderr if line.startswith("stored ")]
    assert proc.wait() == 0
    assert len(arrivals) == 2 and arrivals[1] - arrivals[0] > 1.5

"""Live monitoring: the recorder from Python and C, `monitor serve` with a real Prometheus
scraping it, trial screening equal to `describe --baseline`, recovery, SSQ scoring."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from conftest import assert_matches_schema, assert_one_line_error, make_run, run_cli, run_main
from jitterlab import Monitor
from jitterlab.monitor import recorder, server
from jitterlab.monitor.launch import start_serve, wait_stored
from jitterlab.stats import stacked_z_test
from jitterlab.stats.screening import baseline_of, screen
from jitterlab.stats.ssq import ITEMS, score

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def channel() -> Iterator[str]:
    name = f"pytest-{os.getpid()}-{time.monotonic_ns() % 10**9}"
    yield name
    recorder.unlink(name)
    Path(f"/dev/shm/jitterlab-monitor-{name}.serve.lock").unlink(missing_ok=True)  # a SIGKILLed server's


def serve(channel: str, store: Path, *extra: str) -> tuple[subprocess.Popen[str], int]:
    """Start `monitor serve` on a free port and wait until it drains."""
    port = free_port()
    return start_serve(channel, store, f"127.0.0.1:{port}", *extra), port


def finish(proc: subprocess.Popen[str]) -> str:
    """The id of the run the server stored once it ended."""
    return wait_stored(proc, timeout=120)


# --- the recorder -------------------------------------------------------------------


def test_python_records_spans_and_trials_in_order(channel: str) -> None:
    reader = recorder.Reader(channel)
    with Monitor(channel) as m:
        assert m.record(1500)
        with m.trial("cond-A/p07"):
            assert m.span(10, 30)
        with pytest.raises(Exception, match="longer than 32 bytes"), m.trial("x" * 33):
            pass
    events = reader.drain()
    assert [int(k) for k in events["kind"]] == [0, 1, 0, 2]
    assert int(events["t_recv_ns"][0] - events["t_send_ns"][0]) == 1500
    assert bytes(events["tag"][1])[: events["tag_len"][1]] == b"cond-A/p07"
    assert int(events["t_send_ns"][2]) == 10
    reader.close()


WRITER = """
import sys, time
from jitterlab import Monitor
channel, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Monitor(channel) as m:
    for trial in ("t0", "t1"):
        with m.trial(trial):
            for k in range(n):
                m.record(1_000 + k)
                if k % 500 == 0:
                    time.sleep(0.001)  # let the other writers in: their samples interleave
        for _ in range(100):
            m.record(50)  # between trials: in no trial
"""


def test_trials_belong_to_their_writer(
    tmp_path: Path, store: Path, channel: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24 item 11: 4 writers with 2 trials each gave trials of 10 005 ... 4 872 696
    samples (each writer had ~1.19 M per trial), samples in no trial, and /metrics repeated
    {trial="t0"} four times; trial samples were counted only with --baseline."""
    import sys

    n = 20_000
    proc, port = serve(channel, store, "--duration", "30s")
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, channel, f"w{k}", str(n)], stderr=subprocess.PIPE)
        for k in range(4)
    ]
    assert all(w.wait(timeout=60) == 0 for w in writers)
    deadline = time.monotonic() + 10
    lines: list[str] = []
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
        lines = [x for x in text.splitlines() if x.startswith("jitterlab_monitor_trial_samples{")]
        if len(lines) == 8 and all(float(x.rsplit(" ", 1)[1]) == n for x in lines):
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    run_id = finish(proc)
    assert len(lines) == 8 and len({x.rsplit(" ", 1)[0] for x in lines}) == 8, lines  # unique label sets
    from jitterlab import load_run

    run = load_run(run_id, store)
    # under heavy load a writer preempted for > 1 s between claiming and publishing a slot
    # has that sample counted as dropped (recorded = stored + dropped): every trial holds its
    # own writer's samples and nothing else, and what it lacks the run counts as dropped
    dropped = run.meta["monitor"]["ring_dropped"]
    served = [float(x.rsplit(" ", 1)[1]) for x in lines]
    assert all(c <= n for c in served) and 8 * n - sum(served) <= dropped, (lines, dropped)
    trials = run.meta["monitor"]["trials"]
    assert sorted(t["tag"] for t in trials) == ["t0"] * 4 + ["t1"] * 4
    assert len({t["writer"] for t in trials}) == 4
    assert all(t["samples"] <= n for t in trials) and sum(n - t["samples"] for t in trials) <= dropped
    column = run.column("trial")
    for index in range(8):
        values = run.latency_ns[column == index].tolist()
        assert len(values) == trials[index]["samples"] and len(set(values)) == len(values)
        assert set(values) <= set(range(1_000, 1_000 + n))  # this writer's trial values only
    between = np.count_nonzero(column == -1)  # the samples between trials
    assert 4 * 2 * 100 - dropped <= between <= 4 * 2 * 100
    if dropped == 0:  # the usual case: every trial complete
        assert all(c == n for c in served) and all(t["samples"] == n for t in trials)
    code, _, err = run_main(["monitor", "trials", run_id, "--json", "--store", str(store)], capsys)
    assert code == 2 and "without a baseline" in err  # screening needs a baseline; counts do not


def test_a_client_without_a_server_keeps_running_and_counts_drops(channel: str) -> None:
    with Monitor(channel, capacity=64) as m:
        results = [m.record(1000) for _ in range(200)]
        assert results.count(False) == 136 == m.dropped


# --- serve, end to end ----------------------------------------------------------------


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example application, built with CMake against the installed SDK (not the source tree)."""
    build = tmp_path_factory.mktemp("example")
    cmakedir = run_cli("sdk", "--cmakedir").stdout.strip()
    assert Path(cmakedir, "jitterlabConfig.cmake").is_file()
    subprocess.run(
        [
            "cmake",
            "-S",
            str(REPO / "examples" / "monitor"),
            "-B",
            str(build),
            f"-DCMAKE_PREFIX_PATH={cmakedir}",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    return build / "frame_loop"


def test_the_example_also_builds_with_pkg_config(tmp_path: Path) -> None:
    env = os.environ | {"PKG_CONFIG_PATH": run_cli("sdk", "--pkgconfigdir").stdout.strip()}
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", "jitterlab-monitor", "jitterlab-inject"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    out = tmp_path / "frame_loop"
    subprocess.run(
        ["cc", str(REPO / "examples" / "monitor" / "frame_loop.c"), "-o", str(out), *flags], check=True
    )
    usage = subprocess.run([str(out)], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage" in usage.stderr


def _prometheus(tmp_path: Path, target_port: int) -> tuple[subprocess.Popen[bytes], int]:
    binary = shutil.which("prometheus")
    assert binary, "Debian's prometheus is needed (scripts/setup.sh installs it)"
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: jitterlab\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
    )
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, port


def _wait_ready(port: int, within_s: float = 60) -> None:
    """Until Prometheus answers its readiness probe (it starts slowly on a loaded machine)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"prometheus not ready within {within_s} s")
        time.sleep(0.2)


def _query(port: int, expr: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?query={urllib.request.quote(expr)}"
    with urllib.request.urlopen(url, timeout=5) as response:
        return list(json.load(response)["data"]["result"])


def test_serve_screens_trials_and_prometheus_scrapes_it(
    tmp_path: Path, store: Path, channel: str, example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean, spiky = tmp_path / "clean.json", tmp_path / "spiky.json"
    assert (
        run_cli("model", "make", "-o", str(clean), "--normal", "2ms,0.3ms", "--spikes", "6ms@3").returncode
        == 0
    )
    assert (
        run_cli(
            "model",
            "make",
            "-o",
            str(spiky),
            "--normal",
            "2ms,0.3ms",
            "--spikes",
            "6ms@3",
            "--spikes",
            "30ms@5",
        ).returncode
        == 0
    )
    # a baseline session of the clean condition
    proc, _ = serve(channel, store, "--duration", "2s")
    subprocess.run(
        [str(example), "--scheduled", channel, "3000", f"baseline={clean}"], check=True, capture_output=True
    )
    baseline = finish(proc)
    # the study: a clean trial and one with injected spikes, scraped by a real Prometheus,
    # started (and ready) before the server, so a slow start under load costs no scrapes
    port = free_port()
    prometheus, prom_port = _prometheus(tmp_path, port)
    try:
        _wait_ready(prom_port)
        proc = start_serve(channel, store, f"127.0.0.1:{port}", "--baseline", baseline, "--duration", "9s")
        subprocess.run(
            [str(example), "--scheduled", channel, "1000", f"clean-trial={clean}", f"spiky-trial={spiky}"],
            check=True,
            capture_output=True,
        )
        contaminated: dict[str, str] = {}
        deadline = time.monotonic() + 7
        while time.monotonic() < deadline and len(contaminated) < 2:
            time.sleep(0.5)
            try:
                contaminated = {
                    r["metric"]["trial"]: r["value"][1]
                    for r in _query(prom_port, "jitterlab_monitor_trial_contaminated")
                }
            except OSError:
                continue  # prometheus still starting
        assert contaminated == {"clean-trial": "0", "spiky-trial": "1"}
        samples = _query(prom_port, "jitterlab_monitor_samples_total")
        assert float(samples[0]["value"][1]) == 2000
    finally:
        prometheus.terminate()
        prometheus.wait(timeout=30)
    run_id = finish(proc)
    code, out, err = run_main(["monitor", "trials", run_id, "--json", "--store", str(store)], capsys)
    assert code == 0, err
    assert_matches_schema(json.loads(out), "monitor-trials")
    verdicts = {t["trial"]: t for t in json.loads(out)}
    assert not verdicts["clean-trial"]["contaminated"]
    assert verdicts["spiky-trial"]["contaminated"] and "top cut" in verdicts["spiky-trial"]["reason"]
    # the same samples, described offline against the same baseline, give the same verdicts
    from jitterlab import load_run

    run = load_run(run_id, store)
    for index, trial in enumerate(run.meta["monitor"]["trials"]):
        rows = run.column("trial") == index
        single = make_run(store, run.latency_ns[rows], t_send=run.t_send_ns[rows], technique=trial["tag"])
        code, out, err = run_main(
            ["describe", single.id, "--baseline", baseline, "--json", "--store", str(store)], capsys
        )
        assert code == 0, err
        assert json.loads(out)["screening"] == {
            k: v
            for k, v in verdicts[trial["tag"]].items()
            if k not in ("trial", "writer", "t_begin_ns", "t_end_ns")
        }
    # each participant's sickness beside the latency their trial actually had
    answers = tmp_path / "ssq.csv"
    _ssq_csv(
        answers,
        [
            ("p1", "pre", "clean-trial", 0),
            ("p1", "post", "clean-trial", 1),
            ("p2", "pre", "spiky-trial", 0),
            ("p2", "post", "spiky-trial", 2),
        ],
    )
    code, out, err = run_main(
        [
            "ssq",
            "score",
            str(answers),
            "--pre-post",
            "--trial-column",
            "group",
            "--trials",
            run_id,
            "--json",
            "--store",
            str(store),
        ],
        capsys,
    )
    assert code == 0, err
    joined = {p["group"]: p for p in json.loads(out)["participants"]}
    assert joined["spiky-trial"]["latency_contaminated"] and not joined["clean-trial"]["latency_contaminated"]
    assert joined["spiky-trial"]["latency_p99_ms"] > joined["clean-trial"]["latency_p99_ms"]


def test_sigterm_stores_the_run_and_a_killed_server_is_recovered(
    store: Path, channel: str, capsys: pytest.CaptureFixture[str]
) -> None:
    proc, _ = serve(channel, store)
    with Monitor(channel) as m:
        for i in range(5000):
            m.record(1000 + i)
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    run = json.loads((store / finish(proc) / "run.json").read_text())
    assert run["samples"]["rows"] == 5000 and run["monitor"]["stopped_by"] == "SIGTERM"
    # killed outright: the parts written so far come back as a partial run
    proc, _ = serve(channel, store)
    with Monitor(channel) as m:
        for _ in range(3000):
            m.record(2000)
    time.sleep(server.PART_SECONDS + 2)  # a part is written at least this often
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    code, _, err = run_main(["recover", "--store", str(store)], capsys)
    assert code == 0, err
    code, out, _ = run_main(["runs", "--json", "--store", str(store)], capsys)
    recovered = [r for r in json.loads(out) if r["status"] == "partial"]
    assert len(recovered) == 1 and recovered[0]["count"] == 3000


def test_serve_refuses_bad_input(
    tmp_path: Path, store: Path, channel: str, capsys: pytest.CaptureFixture[str]
) -> None:
    small = make_run(store, np.full(50, 1000, dtype=np.int64))
    flat = make_run(store, np.full(500, 1000, dtype=np.int64))
    for ref, needle in ((small.id, "at least 100"), (flat.id, "no outlier categories")):
        code, _, err = run_main(
            ["monitor", "serve", "--channel", channel, "--baseline", ref, "--store", str(store)], capsys
        )
        assert code == 2 and needle in err
        assert_one_line_error(err)
    proc, _ = serve(channel, store)
    try:
        code, _, err = run_main(["monitor", "serve", "--channel", channel, "--store", str(store)], capsys)
        assert code == 2 and "already served" in err
    finally:
        proc.send_signal(signal.SIGINT)
        _, served = proc.communicate(timeout=120)
    assert "no writer recorded" in served  # no writer came: no run (issue 41 item 5)
    assert not Path(f"/dev/shm/jitterlab-monitor-{channel}.serve.lock").exists()  # released and removed
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("")
    code, _, err = run_main(["monitor", "serve", "--channel", channel, "--store", str(not_a_folder)], capsys)
    assert code == 2 and "cannot write" in err
    code, _, err = run_main(["monitor", "serve", "--channel", "bad/name", "--store", str(store)], capsys)
    assert code == 2 and "channel name" in err
    code, _, err = run_main(
        ["monitor", "serve", "--channel", channel, "--listen", "nowhere", "--store", str(store)], capsys
    )
    assert code == 2 and "HOST:PORT" in err


def test_screening_p_value_matches_scipy_binomtest() -> None:
    rng = np.random.default_rng(4)
    reference = np.concatenate([rng.normal(1e6, 3e4, 5000), rng.normal(3e6, 1e5, 60)])
    base = baseline_of(reference, stacked_z_test(reference))
    trial = np.concatenate([rng.normal(1e6, 3e4, 900), rng.normal(3e6, 1e5, 30)])
    verdict = screen(trial, base)
    expected = binomtest(verdict.outliers, verdict.samples, base.outlier_share, alternative="greater").pvalue
    assert verdict.p_value == pytest.approx(expected, rel=1e-9)
    assert verdict.contaminated and "binomial" in verdict.reason
    assert not screen(rng.normal(1e6, 3e4, 500), base).contaminated


# --- SSQ --------------------------------------------------------------------------------


def _ssq_csv(path: Path, rows: list[tuple[str, str, str, int]]) -> None:
    names = [n for n, _ in ITEMS]
    lines = ["participant,phase,group," + ",".join(names)]
    lines += [f"{p},{phase},{g}," + ",".join([str(v)] * 16) for p, phase, g, v in rows]
    path.write_text("\n".join(lines) + "\n")


def test_ssq_known_answers() -> None:
    all3 = score(np.full((1, 16), 3))
    assert [round(float(all3[k][0]), 2) for k in ("nausea", "oculomotor", "disorientation", "total")] == [
        200.34,
        159.18,
        292.32,
        235.62,
    ]
    assert all(float(v[0]) == 0 for v in score(np.zeros((1, 16))).values())


def test_ssq_score_pre_post_by_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "ssq.csv"
    _ssq_csv(
        csv,
        [
            ("p1", "pre", "NL", 0),
            ("p1", "post", "NL", 1),
            ("p2", "pre", "L", 0),
            ("p2", "post", "L", 3),
            ("p3", "pre", "L", 1),
            ("p3", "post", "L", 2),
            ("p4", "pre", "L", 3),
            ("p4", "post", "L", 3),
        ],
    )
    code, out, err = run_main(
        ["ssq", "score", str(csv), "--pre-post", "--group", "group", "--exclude-pre-above", "100", "--json"],
        capsys,
    )
    assert code == 0, err
    result = json.loads(out)
    # the documented shape: docs/schemas/ssq-score.schema.json
    assert_matches_schema(result, "ssq-score")
    assert result["excluded"] == ["p4"]
    total_l = next(g for g in result["groups"] if g["scale"] == "total" and g["group"] == "L")
    # numbers as numbers (they were strings: "n": "2")
    assert total_l["n"] == 2 and total_l["label"] == "SSQ"
    assert total_l["pre_mean"] == pytest.approx(3.74 * 21 / 2, abs=0.01)
    # p2: 0 → all 3 (235.62); p3: all 1 (21 raw points) → all 2 (42): 78.54
    assert total_l["delta_mean"] == pytest.approx((235.62 + 3.74 * 21) / 2, abs=0.01)
    assert total_l["delta_sd"] == pytest.approx(abs(235.62 - 3.74 * 21) / 2**0.5, abs=0.01)
    total_nl = next(g for g in result["groups"] if g["scale"] == "total" and g["group"] == "NL")
    assert total_nl["n"] == 1 and total_nl["pre_sd"] is None
    assert {p["participant"]: p["total_delta"] for p in result["participants"]} == pytest.approx(
        {"p1": 3.74 * 21, "p2": 235.62, "p3": 3.74 * 21}, abs=0.01
    )
    # the text output has a row per participant beside the group table
    code, out, err = run_main(["ssq", "score", str(csv), "--pre-post", "--group", "group"], capsys)
    assert code == 0, err
    rows = {
        line.split()[0]: line.split() for line in out.splitlines() if line[:2] in ("p1", "p2", "p3", "p4")
    }
    assert set(rows) == {"p1", "p2", "p3", "p4"} and rows["p2"][1] == "L"
    assert float(rows["p2"][-1]) == pytest.approx(235.62, abs=0.01)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda t: t.replace(",3,3,3,3\n", ",3,3,3,4\n", 1), "not an SSQ rating"),
        (lambda t: t.replace(",3,3,3,3\n", ",3,3,3,\n", 1), "not an SSQ rating"),
        (lambda t: t.replace(",burping", ",burp"), "unknown column 'burp'"),
        (lambda t: t.replace(",vertigo", ""), "missing column 'vertigo'"),
        (lambda t: t.replace("p1,pre", "p9,pre"), "post questionnaire without a pre"),
    ],
)
def test_ssq_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], edit, needle: str) -> None:  # type: ignore[no-untyped-def]
    csv = tmp_path / "ssq.csv"
    _ssq_csv(csv, [("p1", "pre", "NL", 3), ("p1", "post", "NL", 3)])
    text = csv.read_text()
    if needle == "missing column 'vertigo'":
        header, *rest = text.splitlines()
        names = header.split(",")
        drop = names.index("vertigo")
        text = (
            "\n".join(
                ",".join(v for i, v in enumerate(line.split(",")) if i != drop) for line in [header, *rest]
            )
            + "\n"
        )
    else:
        text = edit(text)
    csv.write_text(text)
    code, _, err = run_main(["ssq", "score", str(csv), "--pre-post", "--group", "group"], capsys)
    assert code == 2, err
    assert_one_line_error(err)
    assert needle in err


def test_the_baseline_an_application_names_is_used_by_serve(store: Path, channel: str) -> None:
    from conftest import latency_clusters

    reference = make_run(store, latency_clusters(7, 5_000))
    with Monitor(channel, baseline=reference.id) as m:  # serve started without --baseline
        proc, _ = serve(channel, store, "--duration", "1s")
        m.record(10_000)
    run = json.loads((store / finish(proc) / "run.json").read_text())
    assert run["monitor"]["baseline"] == reference.id and run["monitor"]["thresholds_ns"]


@pytest.mark.parametrize(
    ("rows", "extra", "needle"),
    [
        (
            [("p1", "pre", "NL", 1), ("p1", "post", "NL", 2)],
            ["--exclude-pre-above", "0"],
            "all 1 were left out",
        ),
        ([("p1", "pre", "NL", 1), ("p2", "pre", "NL", 2)], [], "none has both"),
        ([("p1", "pre", "NL", 1), ("p1", "post", "NL", 2)], ["--trial-column", "Group"], "both name column"),
    ],
)
def test_ssq_corner_cases_are_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    rows: list[tuple[str, str, str, int]],
    extra: list[str],
    needle: str,
) -> None:
    """Issue 24 item 12: no participant left, only pre rows and one column named twice were
    internal errors (KeyError) or silent; each is one line, exit 2."""
    csv = tmp_path / "ssq.csv"
    _ssq_csv(csv, rows)
    code, _, err = run_main(["ssq", "score", str(csv), "--pre-post", "--group", "group", *extra], capsys)
    assert code == 2 and needle in err, err
    assert_one_line_error(err)


def test_ssq_an_item_given_by_number_and_by_name_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "ssq.csv"
    _ssq_csv(csv, [("p1", "pre", "NL", 1)])
    header, row = csv.read_text().splitlines()
    csv.write_text(f"{header},q1\n{row},1\n")  # q1 is general_discomfort
    code, _, err = run_main(["ssq", "score", str(csv), "--group", "group"], capsys)
    assert code == 2 and "given twice" in err, err
    assert_one_line_error(err)


def test_metrics_serve_chosen_percentiles(store: Path, channel: str) -> None:
    """`monitor serve --percentiles` (issue 26 item 5): /metrics has the latency at each
    level, equal to HdrHistogram's (3 digits) of the samples the server stored."""
    from jitterlab import load_run
    from jitterlab.store.hdr.histogram import Histogram

    proc, port = serve(channel, store, "--duration", "3s", "--percentiles", "50,99.9,max")
    latencies = np.random.default_rng(3).integers(1_000, 5_000_000, 500)
    with Monitor(channel) as m:
        for v in latencies.tolist():
            assert m.record(int(v))
    text = ""
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline and not any(
        line.startswith("jitterlab_monitor_samples_total{") and line.endswith(" 500.0")
        for line in text.splitlines()
    ):
        time.sleep(0.3)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    run = load_run(finish(proc), store)
    assert run.latency_ns.size == 500
    served = {
        line.split('percentile="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("jitterlab_monitor_latency_percentile_seconds{")
    }
    h = Histogram.auto(3)
    distinct, counts = np.unique(run.latency_ns, return_counts=True)
    h.record(distinct, counts)
    assert served == {
        k: h.value_at_percentile(p) / 1e9 for k, p in (("50", 50.0), ("99.9", 99.9), ("100", 100.0))
    }
    assert served["100"] >= int(latencies.max()) / 1e9


def test_serve_json_names_the_stored_run_and_counts_its_samples(store: Path, channel: str) -> None:
    """`monitor serve --json` (issue 28 item 2): one document at the end, valid against its
    schema, headed by the context block, naming the run it stored with the samples the
    application recorded, stored and dropped, and its trials."""
    from conftest import latency_clusters

    reference = make_run(store, latency_clusters(7, 5_000))
    proc = start_serve(
        channel,
        store,
        f"127.0.0.1:{free_port()}",
        *("--duration", "2s", "--baseline", reference.id, "--json"),
        stdout=subprocess.PIPE,
    )
    recorded = 0
    with Monitor(channel) as m:
        for tag in ("a", "b"):
            with m.trial(tag):
                for k in range(150):
                    recorded += 1
                    m.record(2_000 + k)
                    if k % 50 == 0:
                        time.sleep(0.002)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    document = json.loads(out)
    assert_matches_schema(document, "monitor-serve")
    assert document["context"]["measured_here"] is True
    assert document["reason"] is None
    (row,) = document["runs"]
    stored_line = next(line for line in err.splitlines() if line.startswith("stored "))
    assert stored_line.split()[1].rstrip(":") == row["id"]
    from jitterlab import load_run

    run = load_run(row["id"], store)
    assert row["samples_stored"] == run.latency_ns.size == recorded - row["samples_dropped"]
    assert row["samples_recorded"] == recorded == 300
    assert (row["trials"], row["baseline"], row["channel"]) == (2, reference.id, channel)
    assert (row["status"], row["stopped_by"], row["backlog_skipped"]) == ("complete", "--duration", 0)


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (("--baseline", "no-such-run"), "no-such-run"),  # refused once the channel is held
        (("--listen", "127.0.0.1:0"), "--listen"),  # refused before anything starts
    ],
)
def test_serve_json_with_no_run_stored_still_prints_its_object(
    store: Path, channel: str, extra: tuple[str, ...], needle: str
) -> None:
    """`monitor serve --json` that stored no run (issue 28): stdout still holds one object,
    valid against the schema, with no runs, the reason and the machine's context now; the
    error line goes to stderr alone and the exit code is the one without --json (2)."""
    args = ("monitor", "serve", "--channel", channel, "--duration", "1s", "--store", str(store))
    args += ("--listen", f"127.0.0.1:{free_port()}", *extra)
    plain, done = run_cli(*args), run_cli(*args, "--json")
    assert done.returncode == plain.returncode == 2
    assert_one_line_error(done.stderr)
    assert done.stderr == plain.stderr and plain.stdout == ""
    document = json.loads(done.stdout)
    assert_matches_schema(document, "monitor-serve")
    assert document["runs"] == []
    assert needle in document["reason"] and document["reason"] in done.stderr
    assert document["context"]["measured_here"] is True and document["context"]["host"]
    assert not store.exists() or not [p for p in store.iterdir() if not p.name.startswith(".")]


def test_a_trial_tag_with_control_characters_is_served_escaped(store: Path, channel: str) -> None:
    """A tag is outside input (issue 24 item 12): an ESC or a newline in it reaches /metrics
    and the stored run as a visible escape, never as the control character itself."""
    from jitterlab import load_run

    proc, port = serve(channel, store, "--duration", "3s")
    with Monitor(channel) as m, m.trial("red\x1b[31m\nx"):
        for v in range(1_000, 1_100):
            assert m.record(v)
    text = ""
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline and "jitterlab_monitor_trial_samples" not in text:
        time.sleep(0.3)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    run = load_run(finish(proc), store)
    assert "\x1b" not in text and 'trial="red\\\\x1b[31m\\\\nx"' in text, text[-2000:]
    assert [t["tag"] for t in run.meta["monitor"]["trials"]] == ["red\\x1b[31m\\nx"]

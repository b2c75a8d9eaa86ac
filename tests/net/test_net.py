"""Across nodes (seed 004): real namespaces, veth pairs, a router, the real agents over udp,
tcp and CAF's io, NFQUEUE impairment, an sshd in a namespace for the ssh launcher, and every
bad input. Every test removes what it made; the last one checks nothing is left."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_matches_schema, assert_one_line_error, run_cli, sshd_in_namespace, sshd_logs
from jitterlab.core.errors import JitterlabError
from jitterlab.core.warnings import CodedWarning, Warn
from jitterlab.describe.network import network_text, ping_rows
from jitterlab.measure.runner import run_plan
from jitterlab.net import topo
from jitterlab.net.agents import Agent, Launcher
from jitterlab.net.bench import Case, NetOptions, bench_plan, jvm_agent
from jitterlab.net.impair import parse as parse_impairment
from jitterlab.net.nodes import Nodes, from_topology
from jitterlab.store import ResultsStore, Run
from jitterlab.store.rawfile import NET_RECORD_DTYPE, read_raw_samples

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="network namespaces need root and iproute2"
)


def run_bench(
    store: ResultsStore, o: NetOptions, nodes: Nodes, cases: list[Case], warn: Warn
) -> tuple[list[Run], bool]:
    """The cases as one plan on ``nodes`` (set up by the test)."""
    outcome = run_plan(bench_plan(o, cases, lambda: nullcontext(nodes)), store, warn)
    return outcome.runs, outcome.interrupted


def _quiet(_w: CodedWarning) -> None:
    pass


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One real `net bench` of every scenario over udp and caf-io on 3 namespaces."""
    store = tmp_path_factory.mktemp("net") / "results"
    done = run_cli(
        *("net", "bench", "--scenario", "ping,open-loop,stream,frame-sync", "--transport", "udp,caf-io"),
        *("--nodes", "3", "--duration", "1s", "--warmup", "0.3s", "--samples", "20000", "--steps", "2"),
        *("--rate", "500", "--store", str(store)),
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return store, done.stdout


def test_every_scenario_and_transport_is_a_run_with_nodes_and_times(bench: tuple[Path, str]) -> None:
    store, out = bench
    runs = ResultsStore(store).runs()
    got = sorted((r.config["scenario"], r.config["transport"], r.config.get("sync")) for r in runs)
    assert got == sorted(
        [(s, t, None) for s in ("ping", "open-loop", "stream") for t in ("udp", "caf-io")]
        + [("frame-sync", t, sync) for t in ("udp", "caf-io") for sync in (True, False)]
    )
    for run in runs:
        assert run.meta["samples"]["columns"][4:] == [
            "t_intended_ns",
            "t_actual_send_ns",
            "src_node",
            "dst_node",
        ]
        assert run.latency_ns.size > 0 and run.latency_ns.min() > 0
        assert run.meta["clock"]["mode"] == "shared"
        assert run.meta["topology"]["kind"] == "netns"
        assert run.meta["net"]["lost"] == 0, run.meta["net"]
    assert "Table 6 layout" in out and "Table 5 layout" in out and "open loop" in out


def test_ping_round_trips_go_from_node_0_to_node_1(bench: tuple[Path, str]) -> None:
    run = next(r for r in ResultsStore(bench[0]).runs() if r.config["scenario"] == "ping")
    assert set(run.column("src_node")) == {0} and set(run.column("dst_node")) == {1}
    assert run.meta["net"]["answered"] > run.latency_ns.size  # warm-up pings are not stored
    # Table 6 counts what is stored (issue 27 item 13: it showed the warm-up's pings too)
    _, rows = ping_rows([run])
    assert rows[0][6] == run.latency_ns.size and rows[0][7] == run.meta["net"]["measured_lost"] == 0
    assert np.array_equal(run.t_send_ns, run.column("t_actual_send_ns"))


def test_open_loop_latency_counts_from_the_intended_send_time(bench: tuple[Path, str]) -> None:
    run = next(r for r in ResultsStore(bench[0]).runs() if r.config["scenario"] == "open-loop")
    intended, actual = run.column("t_intended_ns"), run.column("t_actual_send_ns")
    assert np.array_equal(run.t_send_ns, intended)  # coordinated omission corrected
    assert (actual >= intended).all()
    gaps = np.diff(np.sort(intended))
    assert np.allclose(gaps, 2_000_000, atol=1)  # 500/s on a fixed schedule, not on replies
    assert run.meta["net"]["sent"] == pytest.approx(500 * 1.3, abs=2)


def test_stream_counts_every_message_one_way_at_the_receiver(bench: tuple[Path, str]) -> None:
    for run in (r for r in ResultsStore(bench[0]).runs() if r.config["scenario"] == "stream"):
        net = run.meta["net"]
        assert [s["received"] for s in net["steps"]] == [20000, 20000]
        assert run.table.num_rows == 40000 and net["msg_per_s"] > 0
        assert run.meta["net"]["one_way"] is True
        assert set(run.column("dst_node")) == {1}


def test_frame_sync_records_every_render_node_and_the_skew(bench: tuple[Path, str]) -> None:
    for run in (r for r in ResultsStore(bench[0]).runs() if r.config["scenario"] == "frame-sync"):
        net = run.meta["net"]
        assert set(run.pair) == {1, 2} and net["render_nodes"] == 2
        assert net["frames_complete"] == net["frames"] > 0
        assert net["fps"] > 0 and set(net["skew"]["per_node"]) == {"1", "2"}


def ours(name: str) -> list[str]:
    """The namespaces of topology ``name`` on the machine. Other engineers' suites make their
    own `jl-` namespaces on the same machine at the same time: a test asserts only about the
    namespaces it made (issue 24: "no jl- namespace machine-wide" failed under them)."""
    return [ns for ns in topo.namespaces() if ns.startswith(f"{name}-")]


def _topology_of(store: Path) -> str:
    """The topology the runs in ``store`` were measured on (every run names it)."""
    (name,) = {r.meta["topology"]["name"] for r in ResultsStore(store).runs()}
    return str(name)


def test_the_bench_left_no_namespace_behind(bench: tuple[Path, str]) -> None:
    name = _topology_of(bench[0])
    assert name.startswith("jl-") and ours(name) == []


def test_net_json_matches_its_schemas_headed_by_the_context_block(store: Path) -> None:
    """`net bench` and `net check-impair`: --json as docs/schemas/ documents it, and the
    context block of the machine first in their text and JSON output (issue 28 item 4)."""
    args = (
        "net",
        "bench",
        "--scenario",
        "ping",
        "--transport",
        "udp",
        "--duration",
        "1s",
        "--warmup",
        "0.3s",
    )
    done = run_cli(*args, "--json", "--store", str(store), timeout=120)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert_matches_schema(rows, "net-bench")
    assert len(rows) == 1 and rows[0]["context"]["measured_here"] is True
    assert 0 < rows[0]["summary"]["latency_ns"]["count"] <= rows[0]["net"]["answered"]
    text = run_cli(*args, "--store", str(store), timeout=120)
    assert text.returncode == 0, text.stderr
    assert [line.startswith("context  ") for line in text.stdout.splitlines()[:3]] == [True, True, False]
    check = run_cli("net", "check-impair", "--duration", "1s", "--json", "--store", str(store), timeout=120)
    assert check.returncode in (0, 1), check.stderr  # 1: the check failed, still a full document
    verdict = json.loads(check.stdout)
    assert_matches_schema(verdict, "net-check-impair")
    assert verdict["context"]["measured_here"] is True and verdict["round_trip_expected_ns"] == 10_000_000


@pytest.mark.slow
def test_net_bench_and_check_impair_report_the_runs_they_made(store: Path, tmp_path: Path) -> None:
    """`net bench --report` and `net check-impair --report` (issue 28 item 2): the HTML report
    of every run the command stored, the one `bench --report` writes."""
    page = tmp_path / "net.html"
    done = run_cli(
        *("net", "bench", "--scenario", "ping", "--duration", "1s", "--warmup", "0.3s", "--json"),
        *("--report", str(page), "--store", str(store)),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    assert (
        page.read_text().startswith("<!doctype html>") and f"run <code>{row['id']}</code>" in page.read_text()
    )
    check_page = tmp_path / "check.html"
    before = {r.id for r in ResultsStore(store).runs()}
    check = run_cli(
        *("net", "check-impair", "--duration", "1s", "--report", str(check_page), "--store", str(store)),
        timeout=120,
    )
    assert check.returncode in (0, 1), check.stderr  # 1: the check failed, its runs still stored
    made = {r.id for r in ResultsStore(store).runs()} - before
    assert len(made) == 2  # the ping without and with the impairment
    text = check_page.read_text()
    assert all(f"run <code>{run_id}</code>" in text for run_id in made)
    refused = run_cli("net", "bench", "--duration", "1s", "--report", str(tmp_path / "none" / "r.html"))
    assert refused.returncode == 2 and "--report" in refused.stderr


def test_pekko_artery_between_namespaces_is_the_same_kind_of_run(store: Path) -> None:
    """The JVM agent (Pekko classic actors over Artery TCP) speaks the native agents' protocol."""
    t = topo.up(2, router=True)
    try:
        o = NetOptions(duration_s=1.5, warmup_s=1.0, messages=20_000, steps=2)
        runs, _ = run_bench(
            ResultsStore(store),
            o,
            from_topology(t),
            [Case("ping", "pekko-artery"), Case("stream", "pekko-artery")],
            _quiet,
        )
    finally:
        topo.down(t.name)
    ping, stream = runs
    assert ping.config["runtime"] == "jvm" and ping.config["technique"] == "pekko-artery"
    assert ping.latency_ns.size > 10 and ping.meta["net"]["lost"] == 0
    pom = (Path(__file__).resolve().parents[2] / "jvm" / "pom.xml").read_text()
    pekko = re.search(r"<pekko\.version>([^<]+)</pekko\.version>", pom)
    assert pekko and ping.meta["net"]["runtime_versions"]["pekko"] == pekko.group(1)  # the version built
    assert [s["received"] for s in stream.meta["net"]["steps"]] == [
        20000,
        20000,
    ]  # nothing dropped on the way
    assert stream.table.num_rows == 40000


def test_topology_up_list_and_down(tmp_path: Path) -> None:
    up = run_cli("net", "topo", "up", "--nodes", "3", "--router", "--shape", "rate=10mbit")
    assert up.returncode == 0, up.stderr
    name = up.stdout.strip()
    try:
        assert sorted(ours(name)) == sorted([f"{name}-n0", f"{name}-n1", f"{name}-n2", f"{name}-r"])
        listed = run_cli("net", "topo", "list")
        assert name in listed.stdout and "yes" in listed.stdout
        # a node reaches another through the router
        t = topo.load(name)
        ping = subprocess.run(
            ["ip", "netns", "exec", t.nodes[0], "ping", "-c1", "-W2", t.address(0, 2)],
            capture_output=True,
            check=False,
        )
        assert ping.returncode == 0 or shutil.which("ping") is None
        qdisc = subprocess.run(
            ["ip", "netns", "exec", t.nodes[1], "tc", "qdisc", "show", "dev", "v1"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert "tbf" in qdisc.stdout and "10Mbit" in qdisc.stdout
    finally:
        down = run_cli("net", "topo", "down", name)
    assert down.returncode == 0 and ours(name) == []


def test_a_link_through_the_router_carries_the_model_delay(store: Path) -> None:
    t = topo.up(2, router=True)
    try:
        nodes = from_topology(t)
        o = NetOptions(duration_s=2.0, warmup_s=0.3)
        impaired = parse_impairment("delay=5ms")
        runs, _ = run_bench(
            ResultsStore(store),
            o,
            nodes,
            [Case("ping", "tcp"), Case("ping", "tcp", impairment=impaired)],
            _quiet,
        )
    finally:
        topo.down(t.name)
    base, through = runs
    check = through.meta["impairment"]["check"]
    # every packet held about 5 ms each way (timer wake-ups add tens of µs, host stalls more)
    assert 5_000_000 <= check["realised_p50_ns"] < 5_600_000
    assert check["packets"] >= 2 * through.meta["net"]["sent"]
    added = float(np.median(through.latency_ns) - np.median(base.latency_ns))
    assert 9_500_000 < added < 12_000_000
    assert "impairment delay=5ms" in network_text(runs)


def test_loss_on_the_link_is_counted_and_makes_the_run_partial(store: Path) -> None:
    t = topo.up(2, router=True)
    try:
        o = NetOptions(duration_s=2.0, warmup_s=0.2, timeout_s=0.02)
        runs, _ = run_bench(
            ResultsStore(store),
            o,
            from_topology(t),
            [Case("ping", "udp", impairment=parse_impairment("loss=20%"))],
            _quiet,
        )
    finally:
        topo.down(t.name)
    run = runs[0]
    check, net = run.meta["impairment"]["check"], run.meta["net"]
    # each packet dropped with probability 0.2, whichever way it goes: within 4 binomial SDs
    assert abs(check["dropped_share"] - 0.2) < 4 * (0.2 * 0.8 / check["packets"]) ** 0.5
    assert net["lost"] > 0 and run.partial and "lost" in run.meta["partial_reason"]


def _udp_datagrams_in(pid: int) -> int:
    """InDatagrams of the namespace `pid` lives in (/proc/PID/net/snmp: a header and a value line)."""
    rows = [
        line.split()
        for line in Path(f"/proc/{pid}/net/snmp").read_text().splitlines()
        if line.startswith("Udp:")
    ]
    return int(rows[1][rows[0].index("InDatagrams")])


def test_a_stream_receiver_that_waits_for_a_cpu_loses_nothing(store: Path) -> None:
    """The cause of the old flaky stream tests: udp has no flow control, so a receiver that
    waited for a CPU overflowed its socket buffer and the kernel dropped silently. Here the
    receiving agent is stopped outright for 0.4 s mid-burst (SIGSTOP); the sender must wait
    for its credit rather than send into a full buffer."""
    t = topo.up(2)
    stopped = threading.Event()

    def stop_the_receiver_mid_burst() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not stopped.is_set():
            pids = [
                int(p)
                for p in subprocess.run(
                    ["ip", "netns", "pids", t.nodes[1]], capture_output=True, text=True
                ).stdout.split()
            ]
            if pids and _udp_datagrams_in(pids[0]) > 30_000:
                for pid in pids:
                    os.kill(pid, signal.SIGSTOP)
                time.sleep(0.4)
                for pid in pids:
                    os.kill(pid, signal.SIGCONT)
                stopped.set()
            time.sleep(0.002)

    watcher = threading.Thread(target=stop_the_receiver_mid_burst, daemon=True)
    watcher.start()
    try:
        o = NetOptions(duration_s=1.0, warmup_s=0.1, messages=100_000, steps=3)
        runs, _ = run_bench(ResultsStore(store), o, from_topology(t), [Case("stream", "udp")], _quiet)
    finally:
        stopped.set()  # ends the watcher if the run ended first
        watcher.join()
        topo.down(t.name)
    net = runs[0].meta["net"]
    assert [s["received"] for s in net["steps"]] == [100_000] * 3, net["steps"]
    assert net["lost"] == 0 and net["credit_timeouts"] == 0
    assert runs[0].table.num_rows == 300_000


def test_a_stream_over_a_lossy_link_counts_the_loss_and_keeps_every_step(store: Path) -> None:
    """A lost start or end token no longer loses (or mixes up) a whole step: both are sent
    again until answered; what the link dropped is counted lost, step by step."""
    t = topo.up(2, router=True)
    try:
        o = NetOptions(duration_s=1.0, warmup_s=0.1, messages=2_000, steps=4, timeout_s=0.2)
        case = Case("stream", "udp", impairment=parse_impairment("loss=5%"))
        runs, _ = run_bench(ResultsStore(store), o, from_topology(t), [case], _quiet)
    finally:
        topo.down(t.name)
    run = runs[0]
    net = run.meta["net"]
    received = [s["received"] for s in net["steps"]]
    assert len(received) == 4 and all(1_500 < r < 2_000 for r in received), received  # ~1 900 each
    assert net["lost"] == 8_000 - sum(received) == net["sent"] - net["answered"]
    assert run.table.num_rows == sum(received) and run.partial


@pytest.mark.slow
def test_100ms_each_way_takes_synchronised_rendering_to_5_fps_and_not_the_other(store: Path) -> None:
    """The seed's Tables 3-4 by their cause: waiting for every node costs a round trip a frame."""
    t = topo.up(3, router=True)
    try:
        o = NetOptions(duration_s=3.0, warmup_s=0.5, nodes=3)
        delay = parse_impairment("delay=100ms")
        cases = [Case("frame-sync", "tcp", sync, 3, impairment=delay) for sync in (True, False)]
        runs, _ = run_bench(ResultsStore(store), o, from_topology(t), cases, _quiet)
    finally:
        topo.down(t.name)
    fps = {r.config["sync"]: r.meta["net"]["fps"] for r in runs}
    assert fps[True] <= 5.0
    assert fps[False] >= 45.0


@pytest.fixture
def two_hosts(tmp_path: Path) -> Iterator[tuple[Path, topo.Topology]]:
    """Two namespaces, each running a real sshd; hosts.toml reaches them through nc."""
    if not Path("/usr/sbin/sshd").exists() or shutil.which("nc") is None:
        pytest.skip("needs openssh-server and netcat-openbsd (scripts/setup.sh installs them)")
    for key in ("hostkey", "clientkey"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / key)], check=True)
    shutil.copy(tmp_path / "clientkey.pub", tmp_path / "authorized_keys")
    t = topo.up(2)
    daemons = [sshd_in_namespace(tmp_path, ns) for ns in t.nodes]
    agent = shutil.which("jitterlab-net") or str(Path(sys.executable).parent.parent / "lib")
    from jitterlab.core.programs import native_program

    agent = str(native_program("jitterlab-net"))
    hosts = ""
    for i, ns in enumerate(t.nodes):
        address = t.address(1 - i, i)
        options = [
            "-i",
            str(tmp_path / "clientkey"),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
        ]
        options += ["-o", "LogLevel=ERROR", "-o", f"ProxyCommand=ip netns exec {ns} nc %h %p"]
        hosts += f'[[host]]\nname = "h{i}"\naddress = "{address}"\nssh = "root@{address}"\nagent = "{agent}"\nssh_options = {json.dumps(options)}\n'
    (tmp_path / "hosts.toml").write_text(hosts)
    try:
        yield tmp_path / "hosts.toml", t
    finally:
        for d in daemons:
            d.terminate()
            d.wait()
        topo.down(t.name)


def test_the_ssh_launcher_gives_the_same_kind_of_run(
    two_hosts: tuple[Path, topo.Topology], store: Path
) -> None:
    hosts, t = two_hosts
    done = run_cli(
        "net",
        "bench",
        "--hosts",
        str(hosts),
        "--transport",
        "tcp",
        "--duration",
        "1s",
        "--warmup",
        "0.2s",
        "--store",
        str(store),
    )
    assert done.returncode == 0, done.stderr + sshd_logs(hosts.parent)
    over_ssh = ResultsStore(store).runs()[0]
    o = NetOptions(transports=("tcp",), duration_s=1.0, warmup_s=0.2)
    in_netns = run_bench(ResultsStore(store), o, from_topology(t), [Case("ping", "tcp")], _quiet)[0][0]
    assert over_ssh.meta["topology"]["kind"] == "hosts" and in_netns.meta["topology"]["kind"] == "netns"
    assert over_ssh.meta["clock"]["mode"] == "unsynchronised"
    assert over_ssh.table.column_names == in_netns.table.column_names
    assert over_ssh.config["technique"] == in_netns.config["technique"] == "tcp"
    assert over_ssh.latency_ns.size > 100 and over_ssh.meta["net"]["lost"] == 0


def test_an_unreachable_ssh_host_is_one_line_naming_it(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[host]]\nname = "far"\naddress = "127.0.0.1"\nssh = "root@127.0.0.1"\nssh_options = ["-p", "1"]\n'
        '[[host]]\nname = "near"\naddress = "127.0.0.1"\nssh = "root@127.0.0.1"\nssh_options = ["-p", "1"]\n'
    )
    done = run_cli("net", "bench", "--hosts", str(hosts), "--duration", "1s", "--store", str(tmp_path / "s"))
    assert done.returncode == 2
    assert_one_line_error(done.stderr)
    assert "node far (ssh root@127.0.0.1)" in done.stderr and "refused" in done.stderr
    staging = tmp_path / "s" / ".staging"  # issue 24 item 13: a failed run left an empty .staging/ID
    assert not staging.exists() or list(staging.iterdir()) == [], list(staging.iterdir())


def test_an_agent_of_another_version_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "agent"
    fake.write_text("#!/bin/sh\necho 'hello jitterlab-net 9.9.9 1 udp'\ncat >/dev/null\n")
    fake.chmod(0o755)
    with pytest.raises(JitterlabError, match=r"agent version 9\.9\.9 .* differs"):
        Agent(Launcher(node="old", agent=str(fake)))


@pytest.mark.parametrize("old", [1, 2])
def test_an_agent_of_an_old_protocol_is_refused(tmp_path: Path, old: int) -> None:
    """Protocol 1 agents sent a 40-byte record of their own; a protocol 2 receiver kept the
    records a part had handed over, so its final block would repeat them: the same version
    number with either protocol is refused in one line, never read."""
    from jitterlab.core.version import __version__

    fake = tmp_path / "agent"
    fake.write_text(f"#!/bin/sh\necho 'hello jitterlab-net {__version__} {old} udp'\ncat >/dev/null\n")
    fake.chmod(0o755)
    with pytest.raises(JitterlabError, match=rf"\(protocol {old}\) differs .* \(protocol 3\)"):
        Agent(Launcher(node="old", agent=str(fake)))


def _udp_port_held_in(netns: str) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    holder = subprocess.Popen(
        ["ip", "netns", "exec", netns, "nc", "-u", "-l", "-p", str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    time.sleep(0.3)
    return holder, port


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--nodes", "1"], "--nodes must be at least 2"),
        (["--payload", "16"], "--payload must be 32..65000"),
        (["--transport", "smoke"], "unknown transport 'smoke'"),
        (["--scenario", "fly"], "unknown scenario 'fly'"),
        (["--impair", "delay=5ms"], "--impair needs a router"),
        (["--impair", "jitter=5ms", "--router"], "unknown part 'jitter=5ms'"),
        (["--hosts", "/nonexistent.toml"], "no such file"),
        (["--topo", "jl-nothere"], "no topology named jl-nothere"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"  # a topology made is recorded here first: one left behind would stay
    monkeypatch.setenv("JITTERLAB_NET_STATE", str(state))
    done = run_cli("net", "bench", *args, "--duration", "1s", "--store", str(tmp_path / "s"))
    assert done.returncode == 2, done.stderr
    assert_one_line_error(done.stderr)
    assert expected in done.stderr
    assert not list(state.glob("jl-*.json")) if state.is_dir() else True, "a topology was left behind"


def test_a_port_in_use_on_a_node_is_one_line(tmp_path: Path) -> None:
    if shutil.which("nc") is None:
        pytest.skip("needs netcat-openbsd")
    t = topo.up(2)
    holder, port = _udp_port_held_in(t.nodes[1])
    try:
        done = run_cli(
            "net",
            "bench",
            "--topo",
            t.name,
            "--port",
            str(port),
            "--duration",
            "1s",
            "--store",
            str(tmp_path / "s"),
        )
    finally:
        holder.kill()
        holder.wait()
        topo.down(t.name)
    assert done.returncode == 2
    assert_one_line_error(done.stderr)
    assert f"port {port}" in done.stderr and "in use" in done.stderr


def test_a_missing_tool_names_its_package(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(Path(sys.executable).parent))  # no /usr/sbin: no ip
    done = subprocess.run(
        [sys.executable, "-m", "jitterlab", "net", "topo", "up"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert_one_line_error(done.stderr)
    assert "install the package iproute2" in done.stderr


def test_not_root_is_one_line(tmp_path: Path) -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux)")
    done = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-m",
            "jitterlab",
            "net",
            "topo",
            "up",
        ],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ, HOME="/tmp", MPLCONFIGDIR="/tmp"),
    )
    assert done.returncode == 2
    assert_one_line_error(done.stderr)
    assert "need root" in done.stderr


def _wait_for_topology(state: Path, timeout: float = 30) -> str:
    """The name of the topology a command made with its state in ``state`` (a private
    folder: JITTERLAB_NET_STATE), once its namespaces exist."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        made = sorted(state.glob("jl-*.json")) if state.is_dir() else []
        if made and ours(made[0].stem):
            return made[0].stem
        time.sleep(0.05)
    raise AssertionError(f"no topology made in {state} within {timeout} s")


def test_sigterm_keeps_what_was_recorded_and_removes_the_namespaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JITTERLAB_NET_STATE", str(tmp_path / "state"))
    store = tmp_path / "s"
    proc = subprocess.Popen(
        [sys.executable, "-m", "jitterlab", "net", "bench", "--duration", "30s", "--store", str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    name = _wait_for_topology(tmp_path / "state")
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    runs = ResultsStore(store).runs()
    assert len(runs) == 1 and runs[0].partial and runs[0].latency_ns.size > 0
    assert "interrupted" in runs[0].meta["partial_reason"]
    assert runs[0].meta["topology"]["name"] == name and ours(name) == []


def test_kill_9_of_the_coordinator_leaves_nothing_after_topo_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JITTERLAB_NET_STATE", str(tmp_path / "state"))  # list and --all see ours only
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jitterlab",
            "net",
            "bench",
            "--duration",
            "30s",
            "--store",
            str(tmp_path / "s"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    name = _wait_for_topology(tmp_path / "state")
    time.sleep(2)
    children = ["pgrep", "-P", str(proc.pid), "-f", "jitterlab-net"]  # its agents, not another suite's
    agents = [int(pid) for pid in subprocess.run(children, capture_output=True, text=True).stdout.split()]
    assert agents, "no agent started"
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10  # an agent exits when its coordinator's pipe closes
    while [pid for pid in agents if _alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in agents if _alive(pid)] == []
    listed = run_cli("net", "topo", "list")
    assert name in listed.stdout and "gone" in listed.stdout
    down = run_cli("net", "topo", "down", "--all")
    assert down.returncode == 0
    assert ours(name) == []


def test_kill_9_mid_run_keeps_the_samples_so_far_and_the_impairment_log(tmp_path: Path) -> None:
    """Issue 24 item 10: the samples lived in the agents until the end, so a coordinator
    killed with SIGKILL lost all of them, and recover then removed the impairment engine's
    log. The agent hands its records over in parts about every second; the coordinator writes
    each into staging beside a draft run.json; recover stores them with the log."""
    store = tmp_path / "s"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "jitterlab", "net", "bench", "--duration", "30s", "--warmup", "0.5s"),
            *("--router", "--impair", "delay=1ms", "--store", str(store)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not list((store / ".staging").glob("*/parts/part-000002.jlraw")):
            assert time.monotonic() < deadline and proc.poll() is None, "no second part written"
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.wait()
    time.sleep(1)  # the agents and the engine see their input close and exit (the engine writes its log)
    (staging,) = (p.parent for p in (store / ".staging").glob("*/parts"))
    name = json.loads((staging / "run.draft.json").read_text())["topology"]["name"]
    assert run_cli("net", "topo", "down", name).returncode == 0
    recovered = run_cli("recover", "--store", str(store))
    assert recovered.returncode == 0, recovered.stderr
    (run,) = ResultsStore(store).runs()
    assert run.partial and "recovered from .staging" in run.meta["partial_reason"]
    assert run.latency_ns.size >= 200  # two parts: about 2 s of pings at 2+ ms each (fewer when loaded)
    assert run.latency_ns.min() >= 2_000_000  # each way once through the 1 ms link
    assert {"src_node", "dst_node", "t_intended_ns"} <= set(run.table.column_names)
    assert run.meta["impairment"]["spec"] == "delay=1ms" and run.meta["topology"]["name"] == name
    log = np.fromfile(run.path / "impair.i64", dtype="<i8").reshape(-1, 3)
    assert log.shape[0] >= 2 * run.latency_ns.size  # every ping and its answer crossed the router


def test_sigterm_between_stream_steps_ends_the_run_with_its_samples(tmp_path: Path) -> None:
    """A stream sender waits for "next" between steps while the coordinator collects the
    receivers' parts; a stop signal at any moment must still end the run in order (exit 130,
    a partial run with the samples so far), never leave the sender waiting."""
    store = tmp_path / "s"
    argv = ["net", "bench", "--scenario", "stream", "--samples", "20000", "--steps", "5000"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "jitterlab", *argv, "--store", str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 40
    while not list((store / ".staging").glob("*/parts/part-000003.jlraw")):
        assert time.monotonic() < deadline and proc.poll() is None, "no third part written"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    (run,) = ResultsStore(store).runs()
    assert run.partial and "interrupted" in run.meta["partial_reason"]
    assert run.latency_ns.size >= 60_000  # three steps at least
    assert ours(run.meta["topology"]["name"]) == []


@pytest.mark.parametrize(
    ("scenario", "options", "signum"),
    [
        ("ping", (), signal.SIGINT),
        ("open-loop", ("--rate", "1000"), signal.SIGINT),
        ("frame-sync", (), signal.SIGINT),
        ("stream", ("--samples", "20000", "--steps", "5000"), signal.SIGINT),
        ("ping", (), signal.SIGTERM),  # the coordinator hands a SIGTERM on to the agent as SIGINT
    ],
    ids=["ping", "open-loop", "frame-sync", "stream", "ping-sigterm"],
)
def test_ctrl_c_of_a_jvm_net_bench_keeps_a_partial_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, options: tuple[str, ...], signum: int
) -> None:
    """Issue 24: on Ctrl-C the coordinator sends SIGINT to the measuring agent, which stops at
    its next check and reports. The JVM agent (pekko-artery) ended on SIGINT instead, so the
    coordinator lost its result and exited 2. Now it stops and reports as the native agent
    does: exit 130, a partial run with the samples so far, no agent, namespace or state left."""
    monkeypatch.setenv("JITTERLAB_NET_STATE", str(tmp_path / "state"))
    store = tmp_path / "s"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "jitterlab", "net", "bench", "--scenario", scenario),
            *("--transport", "pekko-artery", "--router", "--duration", "60s", "--warmup", "0.2s"),
            *(*options, "--store", str(store)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C in a terminal: SIGINT reaches the coordinator (not ignored, whatever ran the suite)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 90  # a JVM agent takes seconds to start on a loaded machine
        while not list((store / ".staging").glob("*/parts/part-000002.jlraw")):
            assert time.monotonic() < deadline and proc.poll() is None, "no second part written"
            time.sleep(0.05)
        children = ["pgrep", "-P", str(proc.pid), "-f", "NetAgent"]
        agents = [int(pid) for pid in subprocess.run(children, capture_output=True, text=True).stdout.split()]
        name = json.loads(next((store / ".staging").glob("*/run.draft.json")).read_text())["topology"]["name"]
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    (run,) = ResultsStore(store).runs()
    assert run.partial and "interrupted" in run.meta["partial_reason"], run.meta.get("partial_reason")
    assert run.config["transport"] == "pekko-artery" and run.config["scenario"] == scenario
    assert run.latency_ns.size > 0 and (run.latency_ns > 0).all()
    assert agents and [pid for pid in agents if _alive(pid)] == []
    assert ours(name) == [] and list((tmp_path / "state").glob("jl-*.json")) == []
    staging = store / ".staging"
    assert not staging.exists() or list(staging.iterdir()) == [], list(staging.iterdir())


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its parent to reap it has stopped)."""
    try:
        return " Z " not in Path(f"/proc/{pid}/stat").read_text().split(")", 1)[1][:3]
    except OSError:
        return False


@pytest.mark.parametrize(
    ("scenario", "options", "transport"),
    [
        ("open-loop", ("--rate", "2000"), "udp"),
        ("stream", ("--samples", "20000", "--steps", "5000"), "udp"),  # parts between steps
        # a step longer than the test: parts in it
        ("stream", ("--samples", "3000000", "--steps", "2"), "udp"),
        ("ping", (), "pekko-artery"),  # the JVM agent hands over parts too (issue 24 item 10)
        ("open-loop", ("--rate", "1000"), "pekko-artery"),
        ("stream", ("--samples", "20000", "--steps", "5000"), "pekko-artery"),
        ("frame-sync", (), "pekko-artery"),  # synchronised frames, node 1 renders (issue 24)
    ],
    ids=[
        "open-loop",
        "stream-short-steps",
        "stream-long-steps",
        "jvm-ping",
        "jvm-open-loop",
        "jvm-stream",
        "jvm-frame-sync",
    ],
)
@pytest.mark.parametrize("killed", ["coordinator", "agent"])
def test_kill_9_mid_open_loop_or_stream_keeps_the_samples_so_far(
    tmp_path: Path, scenario: str, options: tuple[str, ...], transport: str, killed: str
) -> None:
    """Issue 24 item 10, the open-loop and stream parts: their records came only with the
    result (open loop completes a request when its answer comes; a stream is recorded by the
    receiver), so SIGKILL of the coordinator or of the sending agent lost every sample. Open
    loop now hands over its settled requests about every second, and the coordinator asks a
    stream's receiver for its records as often; recover stores them as a partial run. The
    JVM agent (pekko-artery) sent no parts at all: it now speaks the same part protocol.
    Every part is the run format's raw file, read by the raw-file reader (issue 28)."""
    store = tmp_path / "s"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "jitterlab", "net", "bench", "--scenario", scenario),
            *("--transport", transport, *(["--router"] if transport == "pekko-artery" else [])),
            *("--duration", "30s", "--warmup", "0.2s", *options, "--store", str(store)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    agent_program = "NetAgent" if transport == "pekko-artery" else "jitterlab-net"
    try:
        deadline = time.monotonic() + 60  # a JVM agent takes seconds to start on a loaded machine
        while not list((store / ".staging").glob("*/parts/part-000002.jlraw")):
            assert time.monotonic() < deadline and proc.poll() is None, "no second part written"
            time.sleep(0.05)
        children = ["pgrep", "-P", str(proc.pid), "-f", agent_program]
        agents = [int(pid) for pid in subprocess.run(children, capture_output=True, text=True).stdout.split()]
        if killed == "coordinator":
            proc.kill()
        else:  # the sending agent, node 0: the coordinator names it and keeps the parts for recover
            os.kill(min(agents), signal.SIGKILL)  # the first started: node 0, the sender
        killed_at = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if killed == "agent":
        assert proc.returncode == 2, err
        assert_one_line_error(err)
        assert "jitterlab recover" in err, err
    deadline = time.monotonic() + 10  # every agent stops: the sender's receiver may be gone for good
    while (running := [pid for pid in agents if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in running:
        os.kill(pid, signal.SIGKILL)
    assert not running, f"agents {running} still running 10 s after the kill"
    (staging,) = (p.parent for p in (store / ".staging").glob("*/parts"))
    # each part is a whole raw sample file as the agent handed it over: the harnesses' reader
    # decodes it, in the net record layout, with the columns the run stores
    parts = [read_raw_samples(p) for p in sorted((staging / "parts").glob("part-*.jlraw"))]
    assert len(parts) >= 2 and all(p.dtype == NET_RECORD_DTYPE and not p.truncated for p in parts)
    in_parts = sum(p.rows for p in parts)
    name = json.loads((staging / "run.draft.json").read_text())["topology"]["name"]
    run_cli("net", "topo", "down", name)
    recovered = run_cli("recover", "--store", str(store))
    assert recovered.returncode == 0, recovered.stderr
    (run,) = ResultsStore(store).runs()
    assert run.partial and "recovered from .staging" in run.meta["partial_reason"]
    assert run.config["scenario"] == scenario and run.config["transport"] == transport
    t_recv = run.t_recv_ns
    assert t_recv.size == in_parts  # every record of every part, nothing else
    # two parts, about 2 s (fewer when loaded: a JVM's open loop falls behind its schedule)
    least = {
        "ping": 100,
        "open-loop": 1000 if transport == "udp" else 200,
        "stream": 10_000,
        "frame-sync": 60,
    }[scenario]
    assert t_recv.size >= least
    assert t_recv.max() < killed_at and (run.latency_ns > 0).all()  # recorded before the kill
    assert np.unique(run.seq).size == run.seq.size  # every sample once, in no two parts
    src, dst = run.column("src_node"), run.column("dst_node")
    assert (src == 0).all() and (dst == 1).all()  # node 0 to node 1 either way


@pytest.mark.parametrize("transport", ["udp", "pekko-artery"])
def test_an_agents_parts_and_samples_are_raw_files_the_raw_reader_reads(
    tmp_path: Path, transport: str
) -> None:
    """Issue 28: the agents spoke a 40-byte record of their own. Native and JVM agents alike
    now hand over the run format's raw file (docs/run-format.md: header, 56-byte net records,
    footer with count and CRC-32), which the harnesses' reader decodes: here two agents on
    loopback, a ping of 2.5 s, its parts written as they came and read back as files."""
    program = jvm_agent()[0] if transport == "pekko-artery" else ()
    server = Agent(Launcher("n1", program=program))
    client = Agent(Launcher("n0", program=program))
    parts: list[bytes] = []
    try:
        port = server.serve(transport, "127.0.0.1", "127.0.0.1", 0, 64, 1)
        client.on_part = parts.append
        client.send(
            f"run scenario=ping transport={transport} peers=127.0.0.1:{port} advertise=127.0.0.1 payload=64 "
            "node=0 duration_ns=2500000000 warmup_ns=0 timeout_ns=1000000000"
        )
        client.expect("ready")
        client.send("go")
        client.expect("result")
        block = client.records(tmp_path / "final.jlraw")  # streamed from the pipe to a file
        final = block.records
    finally:
        client.close()
        server.close()
    assert len(parts) >= 2  # about one a second
    read = []
    for k, data in enumerate(parts):
        (tmp_path / f"part-{k}.jlraw").write_bytes(data)
        raw = read_raw_samples(tmp_path / f"part-{k}.jlraw")
        assert raw.dtype == NET_RECORD_DTYPE and not raw.truncated and not raw.partial and raw.rows > 0
        read.append(raw.records)
    got = np.concatenate(read)
    assert final.dtype == NET_RECORD_DTYPE and got.size <= final.size
    assert (got == final[: got.size]).all()  # the parts are the first records of the result, each once
    assert (
        (final["reserved"] == 0).all() and (final["src_node"] == 0).all() and (final["dst_node"] == 1).all()
    )
    assert (final["t_send_ns"] == final["t_actual_send_ns"]).all()  # ping: latency from the actual send
    assert (final["t_intended_ns"] == final["t_send_ns"]).all()
    assert (final["t_recv_ns"] > final["t_send_ns"]).all() and (np.diff(final["seq"]) > 0).all()


@pytest.mark.parametrize("transport", ["tcp", "pekko-artery"])
def test_a_stream_receiver_hands_its_records_over_and_keeps_none(tmp_path: Path, transport: str) -> None:
    """Issue 25 item 3: a stream's receiver kept every record until ``collect`` (56 B a
    message) and at most 4 M of them: beyond, messages were counted as dropped and the run
    lacked them. Protocol 3: each ``part`` hands the records over and the receiver keeps only
    what no part took, so ``capacity`` bounds what is held between two parts, not the stream.
    Here the capacity is 2,000 and the stream 3 steps of 2,000 (tcp or Artery: nothing lost),
    a part pulled between the steps: every message is in exactly one part or the final block;
    the native and the JVM agent alike."""
    program = jvm_agent()[0] if transport == "pekko-artery" else ()
    server = Agent(Launcher("n1", program=program))
    client = Agent(Launcher("n0", program=program))
    parts: list[bytes] = []
    try:
        server.send(
            f"serve transport={transport} bind=127.0.0.1 advertise=127.0.0.1 port=0 payload=64 node=1 capacity=2000"
        )
        port = int(server.expect("serving").split()[1])
        client.on_step = lambda: parts.append(server.pull_part())
        client.send(
            f"run scenario=stream transport={transport} peers=127.0.0.1:{port} advertise=127.0.0.1 payload=64 node=0 "
            "messages=2000 steps=3 step_pause=1 warmup_ns=0 duration_ns=0 timeout_ns=1000000000"
        )
        client.expect("ready")
        client.send("go")
        client.expect("result")
        client.records(tmp_path / "client.jlraw")
        result, block = server.collect(tmp_path / "final.jlraw")
    finally:
        client.close()
        server.close()
    assert len(parts) == 2  # between the steps
    read = []
    for k, data in enumerate(parts):
        (tmp_path / f"part-{k}.jlraw").write_bytes(data)
        read.append(read_raw_samples(tmp_path / f"part-{k}.jlraw").records)
    assert [r.size for r in read] == [2000, 2000], [r.size for r in read]  # each step's records, taken once
    assert result["dropped_records"] == 0, result
    seq = np.concatenate([*read, block.records])["seq"]
    assert seq.size == 6000 and np.unique(seq).size == 6000  # each message once: part or block


def test_down_all_keeps_topologies_whose_maker_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24 item 13: `net topo down --all` also removed topologies whose maker was alive
    (a measurement running now). It removes those of dead makers and keeps the others unless
    --force. A private state folder: other topologies on this machine are strays to it, which
    --all (without --force) keeps too."""
    monkeypatch.setenv("JITTERLAB_NET_STATE", str(tmp_path / "state"))
    made = [run_cli("net", "topo", "up", "--nodes", "2") for _ in range(2)]
    assert all(m.returncode == 0 for m in made), [m.stderr for m in made]
    live, dead = (m.stdout.strip() for m in made)
    try:
        state = tmp_path / "state" / f"{live}.json"
        doc = json.loads(state.read_text())
        doc["created_by_pid"] = os.getpid()  # as if this process were measuring on it now
        state.write_text(json.dumps(doc))
        down = run_cli("net", "topo", "down", "--all")
        assert down.returncode == 0, down.stderr
        assert f"kept {live}" in down.stderr and "--force" in down.stderr, down.stderr
        left = topo.namespaces()
        assert f"{live}-n0" in left and f"{dead}-n0" not in left
        assert state.exists() and not (tmp_path / "state" / f"{dead}.json").exists()
    finally:
        for name in (live, dead):
            run_cli("net", "topo", "down", name)
    assert not [ns for ns in topo.namespaces() if ns.startswith((live, dead))]


def test_topology_names_are_never_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24 item 5: `net topo down ../../../tmp/victim` deleted /tmp/victim.json and
    `--topo ../../x` loaded any JSON (an internal error)."""
    victim = tmp_path / "victim.json"
    victim.write_text("{}")
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("JITTERLAB_NET_STATE", str(state))
    relative = os.path.relpath(tmp_path / "victim", state)
    for args in (["net", "topo", "down", relative], ["net", "bench", "--topo", relative, "--duration", "1s"]):
        result = run_cli(*args)
        assert result.returncode == 2, result.stderr
        assert "names are 'jl-'" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert victim.read_text() == "{}"
    # a state file with the right name but not what `up` wrote: one line, not an internal error
    (state / "jl-abc123.json").write_text(
        '{"name": "jl-abc123", "nodes": ["/etc"], "router": null, "subnet": "x"}'
    )
    (state / "jl-def456.json").write_text("[1, 2]")
    # found by the fuzz run: a link without its addresses, a pid that is a string
    (state / "jl-aaa1.json").write_text(
        '{"name": "jl-aaa1", "nodes": ["jl-aaa1-n0", "jl-aaa1-n1"], "router": null, "subnet": "x", "links": [{}]}'
    )
    (state / "jl-aaa2.json").write_text(
        '{"name": "jl-aaa2", "nodes": ["jl-aaa2-n0"], "router": null, "subnet": "x", "created_by_pid": "1"}'
    )
    for name in ("jl-abc123", "jl-def456", "jl-aaa1", "jl-aaa2"):
        result = run_cli("net", "bench", "--topo", name, "--duration", "1s")
        assert result.returncode == 2 and "not a state file" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("ssh", "-oProxyCommand=touch {pwned}", "is not an ssh target"),
        ("ssh", "root@h -oProxyCommand=x", "is not an ssh target"),
        ("address", "10.0.0.1 go", "neither an IP address nor a host name"),
        ("address", "10.0.0.1\\nsamples 5", "neither an IP address nor a host name"),
        ("name", "../h", "must be letters, digits"),
        ("agent", "relative/agent", "absolute path"),
    ],
)
def test_hosts_toml_values_never_become_options_or_protocol_words(
    tmp_path: Path, store: Path, field: str, value: str, says: str
) -> None:
    """Issue 24 item 6: `ssh = "-oProxyCommand=touch /tmp/pwned"` ran the command locally."""
    pwned = tmp_path / "pwned"
    hosts = {"name": "h0", "address": "127.0.0.1", "ssh": "root@127.0.0.1", "agent": "/usr/bin/jitterlab-net"}
    bad = dict(hosts, **{field: value.format(pwned=pwned)})
    text = "".join(
        "[[host]]\n" + "".join(f'{k} = "{v}"\n' for k, v in h.items()) for h in (bad, dict(hosts, name="h1"))
    )
    (tmp_path / "hosts.toml").write_text(text)
    result = run_cli(
        "net", "bench", "--hosts", str(tmp_path / "hosts.toml"), "--duration", "1s", "--store", str(store)
    )
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not pwned.exists()


def test_a_hosts_toml_that_is_not_utf8_is_one_line(tmp_path: Path, store: Path) -> None:
    """Issue 24 item 12 (found again by the fuzz run): a non-UTF-8 hosts.toml was an internal error."""
    (tmp_path / "hosts.toml").write_bytes(b'[[host]]\nname = "h\xff"\n')
    result = run_cli(
        "net", "bench", "--hosts", str(tmp_path / "hosts.toml"), "--duration", "1s", "--store", str(store)
    )
    assert result.returncode == 2 and "not UTF-8" in result.stderr, result.stderr
    assert_one_line_error(result.stderr)


def test_the_ssh_target_follows_a_double_dash() -> None:
    from jitterlab.net.agents import Launcher

    argv = Launcher(node="h0", ssh="root@host", ssh_options=("-p", "2222")).argv()
    assert argv[argv.index("--") + 1] == "root@host" and argv.index("-p") < argv.index("--")


def test_a_constant_delay_verdict_says_realised_against_target_not_ks(tmp_path: Path) -> None:
    """Issue 27 item 13: the verdict line printed "KS 1.000" for a constant-delay model."""
    from jitterlab.describe.network import impairment_lines
    from jitterlab.store import Run

    def run_with(criterion: str) -> Run:
        check = {
            "packets": 1000,
            "ks": 1.0 if criterion.startswith("|p50") else 0.012,
            "criterion": criterion,
            "realised_p50_ns": 5_080_000.0,
            "quantile_error_ns": {"p50": 80_000.0, "p99": 400_000.0, "p99.9": 900_000.0},
            "reproduced": True,
        }
        return Run(
            tmp_path, {"id": "r1", "config": {"impaired": "delay=5ms"}, "impairment": {"check": check}}
        )

    (constant,) = impairment_lines([run_with("|p50 error| <= 0.25 ms (constant model)")])
    assert "KS" not in constant
    assert "realised delay p50 5.080 ms against the model's 5.000 ms" in constant
    (shaped,) = impairment_lines([run_with("KS <= 0.05")])
    assert "KS 0.012" in shaped

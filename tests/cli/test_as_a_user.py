"""Issue 24 item 14: jitterlab run as its users run it, not only as root.

A lab's store often holds runs of both: the user measures as themself and now and then as
root (SCHED_RR, PM QoS). Here an unprivileged user (created for the test, removed after it)
runs the measuring commands against their own store that also holds root's runs, a damaged
run, an empty run and a leftover of a killed root measurement, and against a store root
owns. Every command succeeds or refuses in one line with exit 2; none writes into, replaces
or trusts root's files (a snapshot of every root-owned file is compared after each)."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from conftest import OtherUser, assert_one_line_error, latency_clusters, make_run
from jitterlab.store import ResultsStore
from jitterlab.store.staging import DRAFT_JSON

HLOG = Path(__file__).parent.parent / "fixtures" / "hdrhistogram" / "jHiccup-2.0.7S.logV2.hlog"


@dataclass
class Lab:
    user: OtherUser
    home: Path  # the user's folder (theirs, 0755)
    store: Path  # the user's store: root measured in it too
    roots_store: Path  # a store root made and owns
    leftover: Path  # a staging folder of a root measurement that was killed

    def run(self, *args: str, store: Path | None = None) -> tuple[int, str, str]:
        """``jitterlab ARGS --store STORE`` as the user (default: the user's store)."""
        return self.bare(*args, "--store", str(store or self.store))

    def bare(self, *args: str) -> tuple[int, str, str]:
        done = self.user.jitterlab(*args, home=self.home)
        return done.returncode, done.stdout, done.stderr


def root_files(*folders: Path) -> dict[str, tuple[int, int, int, str]]:
    """Every root-owned file and folder below ``folders``: inode, mode, size, SHA-256."""
    seen = {}
    for folder in folders:
        for where, dirs, files in os.walk(folder):
            for name in [*dirs, *files]:
                path = Path(where) / name
                st = os.lstat(path)
                if st.st_uid != 0:
                    continue
                digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else ""
                seen[str(path)] = (st.st_ino, st.st_mode, st.st_size, digest)
    return seen


def user_runs(lab: Lab) -> list[Path]:
    """The run folders the user made (owned by them)."""
    return [p for p in ResultsStore(lab.store).run_dirs() if p.stat().st_uid == lab.user.uid]


@pytest.fixture
def lab(other_user: OtherUser) -> Iterator[Lab]:
    base = Path(tempfile.mkdtemp(prefix="jl-lab-", dir="/tmp"))  # pytest's tmp_path is root's 0700
    try:
        os.chmod(base, 0o755)
        home = base / "home"
        os.mkdir(home, 0o755)
        os.chown(home, other_user.uid, other_user.gid)
        store = home / "results"  # made by the user, before root measured in it
        made = other_user.python(f"os.mkdir({str(store)!r}, 0o755)")
        assert made.returncode == 0, made.stderr
        make_run(store, latency_clusters(1, 5_000), technique="mutex")  # root's runs
        damaged = make_run(store, latency_clusters(2, 5_000), technique="spsc")
        with open(damaged.path / "samples.parquet", "r+b") as f:
            f.truncate(1000)
        make_run(store, np.zeros(0, np.int64), technique="empty")
        os.chmod(make_run(store, latency_clusters(5, 1_000), technique="private").path, 0o700)
        s = ResultsStore(store)
        leftover = s.staging_dir(s.new_run_id("net", "ping"))  # root's, killed: a draft, no parts
        (leftover / DRAFT_JSON).write_text(json.dumps({"id": leftover.name, "config": {}}))
        roots_store = base / "roots"
        make_run(roots_store, latency_clusters(3, 5_000))
        yield Lab(other_user, home, store, roots_store, leftover)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def untouched(lab: Lab) -> Iterator[None]:
    """Root's files are exactly as they were after the test, and the user's files went
    only into the user's own store and folder."""
    before = root_files(lab.store, lab.roots_store)
    assert len(before) >= 8
    yield
    assert root_files(lab.store, lab.roots_store) == before
    for where, _dirs, files in os.walk(lab.roots_store):
        assert all(os.lstat(Path(where) / f).st_uid == 0 for f in files), "the user wrote into root's store"


def test_roots_staging_in_a_users_store_is_the_users(lab: Lab) -> None:
    """Root measuring in a store another user owns gives ``.staging`` to that user (it was
    root's 0700 folder: the owner could then neither measure in nor clean their own store),
    while root's own staging folder inside stays root's alone."""
    staging = os.lstat(lab.store / ".staging")
    assert staging.st_uid == lab.user.uid and stat.S_IMODE(staging.st_mode) == 0o700
    assert os.lstat(lab.leftover).st_uid == 0 and stat.S_IMODE(os.lstat(lab.leftover).st_mode) == 0o700


def test_bench_as_a_user(lab: Lab, untouched: None) -> None:
    """600 000 samples need more than a user's 8 MiB of locked memory: mlockall(MCL_FUTURE)
    succeeded and then every allocation past the limit failed (std::bad_alloc, exit 1); now
    memory is not locked where the limit would bite, and the run says so."""
    code, _out, err = lab.run(
        "bench", "--technique", "mutex", "--samples", "600000", "--warmup-samples", "100"
    )
    assert code == 0, err
    if resource.getrlimit(resource.RLIMIT_MEMLOCK)[0] != resource.RLIM_INFINITY:  # the user's limit
        assert "mlock-refused" in err and "RLIMIT_MEMLOCK" in err, err
    (run,) = user_runs(lab)
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete" and meta["summary"]["latency_ns"]["count"] == 600_000, err
    assert all(os.lstat(p).st_uid == lab.user.uid for p in run.iterdir())


def test_hiccup_as_a_user(lab: Lab, untouched: None) -> None:
    code, _out, err = lab.run("hiccup", "--duration", "1s", "--cpus", "0")
    assert code == 0, err
    (run,) = user_runs(lab)
    assert json.loads((run / "run.json").read_text())["config"]["technique"] == "hiccup"


def test_import_of_a_csv_and_an_hlog_as_a_user(lab: Lab, untouched: None) -> None:
    csv = lab.home / "lat.csv"
    csv.write_text("latency_ns\n" + "\n".join(str(v) for v in latency_clusters(4, 2_000)) + "\n")
    hlog = lab.home / "jhiccup.hlog"
    shutil.copy(HLOG, hlog)
    for path in (csv, hlog):
        os.chown(path, lab.user.uid, lab.user.gid)
        code, _out, err = lab.run("import", str(path))
        assert code == 0, err
    assert len(user_runs(lab)) == 2


def test_mtp_sensor_logs_as_a_user(lab: Lab, untouched: None) -> None:
    logs = lab.home / "rig"
    code, _out, err = lab.bare("mtp", "synth-log", str(logs), "--duration", "3s")
    assert code == 0, err
    code, _out, err = lab.run("mtp", "ingest", str(logs / "frames.csv"))
    assert code == 0, err
    (run,) = user_runs(lab)
    summary = json.loads((run / "run.json").read_text())["summary"]["latency_ns"]
    assert 50e6 < summary["p50"] < 62e6  # the generated 56 ms


def test_repl_bench_as_a_user(lab: Lab, untouched: None) -> None:
    """Loopback needs no privilege; PM QoS is refused to a user and said so, and the run
    keeps its repl block (before, the warning's code failed the schema and the run lost it)."""
    code, _out, err = lab.run(
        *("repl", "bench", "--clients", "2", "--rate", "50", "--duration", "1s", "--warmup", "0.2s")
    )
    assert code == 0, err
    (run,) = user_runs(lab)
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete" and "repl" in meta, meta.get("partial_reason")


def test_repl_across_namespaces_as_a_user_is_one_line(lab: Lab, untouched: None) -> None:
    code, _out, err = lab.run("repl", "bench", "--clients", "2", "--nodes", "2", "--duration", "1s")
    assert code == 2, err
    assert_one_line_error(err)
    assert "namespaces need root" in err and "jitterlab net" not in err, err
    assert user_runs(lab) == []


def test_listing_reporting_and_recovering_as_a_user(lab: Lab, untouched: None) -> None:
    """Root's runs are listed, the damaged, the private and the empty run named and skipped,
    root's leftover refused in one line naming root and left in place."""
    code, out, err = lab.run("runs")
    assert code == 0, err
    assert "mutex" in out and "empty" in out and "damaged" in out and "Traceback" not in err
    assert "private" in err and "permission denied" in err, err  # root's 0700 run: named
    report = lab.home / "report.html"
    code, out, err = lab.run("report", "-o", str(report))
    assert code == 0, err
    assert report.stat().st_uid == lab.user.uid and "Traceback" not in err
    code, out, err = lab.run("recover")
    assert code == 0, err
    assert lab.leftover.name in err and "root" in err and "Traceback" not in err
    assert lab.leftover.is_dir() and user_runs(lab) == []


@pytest.mark.parametrize(
    "args",
    [
        ("bench", "--technique", "mutex", "--samples", "1000"),
        ("hiccup", "--duration", "1s"),
        ("import", str(HLOG)),
        ("repl", "bench", "--clients", "2", "--duration", "1s"),
        ("recover",),
    ],
    ids=lambda a: "-".join(a[:2]) if a[0] == "repl" else a[0],
)
def test_a_store_root_owns_is_refused_in_one_line(lab: Lab, untouched: None, args: tuple[str, ...]) -> None:
    code, _out, err = lab.run(*args, store=lab.roots_store)
    assert code == 2, err
    assert_one_line_error(err)
    assert str(lab.roots_store) in err and "permission denied" in err


# ---------------------------------------------------------------------------------------
# The same user attacks a root jitterlab (issue 24 items 1 and 4-7): the user plants what a
# hostile neighbour would, as that user (its own uid, no root left), and root then runs its
# commands. Each command refuses or handles the plant in one line; every root-owned file
# keeps inode, mode, size and SHA-256, and nothing new of root's appears.


@dataclass
class Attack:
    lab: Lab
    shared: Path  # a folder every user may write to, sticky (/tmp, /dev/shm)
    victim: Path  # a root-owned file (0644) the user would like root to overwrite
    rootdir: Path  # a root-owned folder (0755) the user would like root to write into

    def plant(self, code: str) -> None:
        """Run ``code`` as the user (``shared``, ``home`` and ``victim`` are set)."""
        done = self.lab.user.python(
            f"shared, home, victim, rootdir = {str(self.shared)!r}, {str(self.lab.home)!r}, "
            f"{str(self.victim)!r}, {str(self.rootdir)!r}\n" + code
        )
        assert done.returncode == 0, done.stderr

    def root(self, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> tuple[int, str]:
        """``jitterlab ARGS`` as root; (exit code, stderr). A command that waits on a FIFO
        no one reads would hang: the timeout ends it and fails the test."""
        done = subprocess.run(
            [sys.executable, "-m", "jitterlab", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=self.rootdir,
            env={**os.environ, **(env or {})},
        )
        return done.returncode, done.stderr

    def root_owned(self) -> dict[str, tuple[int, int, int, str]]:
        return root_files(self.victim.parent) | {"/dev/full": _node("/dev/full")}


def _node(path: str) -> tuple[int, int, int, str]:
    st = os.lstat(path)
    return (st.st_ino, st.st_mode, st.st_size, "")


@pytest.fixture
def attack(lab: Lab) -> Iterator[Attack]:
    base = lab.home.parent
    shared = base / "shared"
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    victims = base / "victims"
    os.mkdir(victims, 0o755)
    victim = victims / "victim.txt"
    victim.write_text("root's file\n")
    os.chmod(victim, 0o644)
    rootdir = victims / "rootdir"
    os.mkdir(rootdir, 0o755)
    a = Attack(lab, shared, victim, rootdir)
    before = a.root_owned()
    yield a
    assert a.root_owned() == before, "a root-owned file or folder changed, or root made a new one"


OUTPUTS = {  # root's commands that write a file the user may name or anticipate
    "export": lambda a, out: ("export", _roots_run(a), "--format", "csv", "-o", out),
    "report": lambda a, out: ("report", "--store", str(a.lab.roots_store), "-o", out),
    "model-build": lambda a, out: ("model", "build", _roots_run(a), "-o", out),
    "mtp-synth-log": lambda a, out: ("mtp", "synth-log", out, "--duration", "1s"),
}
PLANTS = {  # what the user leaves at the name root writes (OUT), and where
    "link-to-roots-file-in-a-shared-folder": ("shared", "os.symlink(victim, OUT)"),
    "link-to-roots-file-in-the-users-folder": ("home", "os.symlink(victim, OUT)"),
    "link-to-a-device": ("home", "os.symlink('/dev/full', OUT)"),
    "fifo-in-a-shared-folder": ("shared", "os.mkfifo(OUT, 0o666)"),
    "link-to-roots-folder-on-the-way": ("home", "os.symlink(rootdir, os.path.dirname(OUT))"),
}


def _roots_run(a: Attack) -> str:
    (run,) = ResultsStore(a.lab.roots_store).run_dirs()
    return str(run)


@pytest.mark.parametrize("plant", list(PLANTS))
def test_root_writes_no_output_through_what_the_user_planted(
    attack: Attack, untouched: None, plant: str
) -> None:
    """Item 1 by a real second user: a link to root's file (in /tmp-like shared folder or in
    the user's own folder that root writes into), a link to a device, a FIFO, a link to
    root's folder on the way. Root's export, report, model build and mtp synth-log refuse
    each in one line naming the link or the FIFO's owner; nothing is written through it."""
    where, code = PLANTS[plant]
    folder = attack.shared if where == "shared" else attack.lab.home
    for command, argv in OUTPUTS.items():
        name = f"{plant}-{command}"
        out = folder / name / "out" if plant == "link-to-roots-folder-on-the-way" else folder / name
        attack.plant(f"OUT = {str(out)!r}\n{code}")
        args = argv(attack, str(out))
        code_, err = attack.root(*args)
        assert code_ == 2, (command, err)
        assert_one_line_error(err)
        if command == "mtp-synth-log" and plant.startswith("fifo"):  # a folder is asked for
            assert "not a folder" in err, err
        else:
            assert attack.lab.user.name in err, (command, err)  # the line names who made it
            assert ("link made by" in err) or ("FIFO of" in err), (command, err)
        assert (
            os.lstat(out.parent if plant == "link-to-roots-folder-on-the-way" else out).st_uid
            == attack.lab.user.uid
        )
    assert os.listdir(attack.rootdir) == []


def test_root_writes_its_state_files_through_no_link_of_the_user(attack: Attack) -> None:
    """Item 1, state files: the user made the folder root keeps topology state in (named by
    JITTERLAB_NET_STATE, in a shared folder) a link to root's folder; `net topo up` refuses
    in one line before any namespace is made."""
    if shutil.which("ip") is None:
        pytest.skip("needs iproute2")
    state = attack.shared / "jl-state"
    attack.plant(f"os.symlink(rootdir, {str(state)!r})")
    before = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    code, err = attack.root("net", "topo", "up", "--nodes", "2", env={"JITTERLAB_NET_STATE": str(state)})
    assert code == 2, err
    assert_one_line_error(err)
    assert "link made by" in err and attack.lab.user.name in err, err
    after = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    assert not [ns for ns in after - before if ns.startswith("jl-")]  # none made (and none left)
    assert os.listdir(attack.rootdir) == []


def test_roots_recover_trusts_no_draft_the_user_planted(attack: Attack) -> None:
    """Item 4 by the user: root recovers in the user's store (root trusts the store's owner's
    leftovers), where the user left a draft naming '../escaped', a draft that is `[]`, and
    leftovers whose part, draft or raw file is a link to root's private run (0700, which the
    user cannot read): root would copy root's samples into a run the user can read. Each is
    one line and left in place; no run is stored, nothing leaves the store."""
    lab = attack.lab
    shutil.rmtree(lab.leftover)  # root's own leftover: recovered, which is right, but not this test's
    before = root_files(lab.store)
    private = next(p for p in ResultsStore(lab.store).run_dirs() if stat.S_IMODE(p.stat().st_mode) == 0o700)
    attack.plant(
        "import json\n"
        f"staging = {str(lab.store / '.staging')!r}\n"
        f"private = {str(private)!r}\n"
        "def leftover(name, files):\n"
        "    d = os.path.join(staging, '20260101-000000-' + name)\n"
        "    os.mkdir(d, 0o700)\n"
        "    os.mkdir(os.path.join(d, 'parts'), 0o700)\n"
        "    for rel, make in files.items():\n"
        "        make(os.path.join(d, rel))\n"
        "    return d\n"
        "def draft(d, doc):\n"
        "    open(os.path.join(d, 'run.draft.json'), 'w').write(json.dumps(doc))\n"
        "d = leftover('escape', {})\n"
        "draft(d, {'id': '../escaped', 'config': {}})\n"
        "d = leftover('list', {})\n"
        "open(os.path.join(d, 'run.draft.json'), 'w').write('[]')\n"
        "d = leftover('part-link', {'parts/part-000000.parquet': lambda p: os.symlink(private + '/samples.parquet', p)})\n"
        "draft(d, {'id': os.path.basename(d), 'config': {}})\n"
        "leftover('draft-link', {'run.draft.json': lambda p: os.symlink(private + '/run.json', p)})\n"
        "leftover('raw-link', {'samples.jlraw': lambda p: os.symlink(private + '/samples.parquet', p)})\n"
    )
    leftovers = sorted((lab.store / ".staging").glob("20260101-000000-*"))
    assert len(leftovers) == 5
    runs_before = ResultsStore(lab.store).run_dirs()
    code, err = attack.root("recover", "--store", str(lab.store), "--trust-store-owner")
    assert code == 0, err
    assert "Traceback" not in err and "internal error" not in err, err
    refused = [line for line in err.splitlines() if "not recovered" in line]
    for folder in leftovers:
        assert sum(folder.name in line for line in refused) == 1, (folder.name, err)
        assert folder.is_dir()  # left in place for a person to look at
    assert sum("not a regular file" in line for line in refused) == 3, err
    assert ResultsStore(lab.store).run_dirs() == runs_before  # nothing stored
    assert root_files(lab.store) == before  # root's private run among them
    assert not (lab.store.parent / "escaped").exists() and not (lab.home.parent / "escaped").exists()


def test_topology_names_from_the_user_are_never_paths(attack: Attack) -> None:
    """Item 5 by the user: names the user hands root (in a script, a lab wiki) that are
    paths: `net topo down` of a path to root's file, `--topo` of a path to the user's JSON."""
    if shutil.which("ip") is None:
        pytest.skip("needs iproute2")
    json_victim = attack.victim.parent / "state.json"
    json_victim.write_text("{}")
    try:
        attack.plant(
            'open(os.path.join(home, \'x.json\'), \'w\').write(\'{"name": "x", "nodes": ["/etc"]}\')'
        )
        rel_victim = os.path.relpath(json_victim.with_suffix(""), "/run/jitterlab/net")
        rel_users = os.path.relpath(attack.lab.home / "x", "/run/jitterlab/net")
        for args in (
            ("net", "topo", "down", rel_victim),
            ("net", "bench", "--topo", rel_users, "--duration", "1s", "--store", str(attack.lab.roots_store)),
            (
                "repl",
                "bench",
                "--topo",
                rel_users,
                "--duration",
                "1s",
                "--store",
                str(attack.lab.roots_store),
            ),
        ):
            code, err = attack.root(*args)
            assert code == 2, (args, err)
            assert_one_line_error(err)
            assert "names are 'jl-'" in err, err
        assert json_victim.read_text() == "{}"
    finally:
        json_victim.unlink()


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ('ssh = "-oProxyCommand=touch PWNED"', "is not an ssh target"),
        (
            'ssh = "root@127.0.0.1"\nssh_options = ["-oProxyCommand=touch PWNED"]',
            "ssh_options are taken only",
        ),
        ('ssh = "root@127.0.0.1"\nssh_options = ["-F", "HOME/ssh_config"]', "ssh_options are taken only"),
    ],
    ids=["option-as-target", "proxy-command-option", "config-file-option"],
)
def test_a_hosts_toml_of_the_user_runs_nothing_as_root(attack: Attack, host: str, expected: str) -> None:
    """Item 6 by the user: a hosts.toml the user wrote, run by root with `net bench --hosts`.
    An option as the ssh target is refused (as before); ssh_options, which run commands on
    this machine (ProxyCommand, an ssh_config with LocalCommand), are taken only from root's
    own file: from the user's, ssh ran the user's ProxyCommand as root."""
    pwned = attack.lab.home / "PWNED"
    home = str(attack.lab.home)
    body = host.replace("PWNED", str(pwned)).replace("HOME", home)
    attack.plant(
        f"open(os.path.join(home, 'ssh_config'), 'w').write('Host *\\n  ProxyCommand touch {pwned}\\n')\n"
        "open(os.path.join(home, 'hosts.toml'), 'w').write("
        f'\'[[host]]\\nname = "a"\\naddress = "127.0.0.1"\\n\' + {body!r} + '
        '\'\\n[[host]]\\nname = "b"\\naddress = "127.0.0.2"\\nssh = "b@127.0.0.2"\\n\')\n'
    )
    code, err = attack.root(
        *("net", "bench", "--hosts", str(attack.lab.home / "hosts.toml"), "--duration", "1s"),
        *("--store", str(attack.lab.roots_store)),
        timeout=60,
    )
    assert code == 2, err
    assert_one_line_error(err)
    assert expected in err, err
    assert not pwned.exists()


def test_a_store_root_made_under_umask_000_takes_no_plant_of_the_user(attack: Attack) -> None:
    """Item 7 by the user: root measures under umask 000 into a new store; the user then
    tries to plant a draft in its staging folder and a run folder in the store: the kernel
    refuses both (0755 store, 0700 staging), so root's recover meets nothing of the user's."""
    store = attack.lab.home.parent / "umask-store"
    done = subprocess.run(
        ["sh", "-c", f'umask 000; exec "{sys.executable}" -m jitterlab import "{HLOG}" --store "{store}"'],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(store.stat().st_mode) & 0o022 == 0
    assert stat.S_IMODE((store / ".staging").stat().st_mode) == 0o700
    tried = attack.lab.user.python(
        "for where in ("
        + repr(str(store / ".staging" / "20260101-000000-x"))
        + ", "
        + repr(str(store / "20260101-000000-x"))
        + "):\n"
        "    try:\n"
        "        os.mkdir(where)\n"
        "        print('made', where)\n"
        "    except PermissionError:\n"
        "        print('refused', where)\n"
    )
    assert tried.returncode == 0, tried.stderr
    assert tried.stdout.count("refused") == 2, tried.stdout
    code, err = attack.root("recover", "--store", str(store))
    assert code == 0 and "not recovered" not in err, err
    shutil.rmtree(store)


# ---------------------------------------------------------------------------------------
# Issue 42 items 1-7 ("a second user", round 3): the user owns a store in a shared folder
# (0755) and acts on it while root runs its commands there. Races are tested with a loop in
# the user's own process that swaps a folder for a link for a bounded time.

RENAME_EXCHANGE = 2
SWAP_LOOP = (  # the user's process: exchange A and B (renameat2 RENAME_EXCHANGE) until STOP exists
    "import time\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "a, b = os.fsencode(A), os.fsencode(B)\n"
    "swaps, end = 0, time.monotonic() + SECONDS\n"
    "while time.monotonic() < end and not os.path.exists(STOP):\n"
    f"    if libc.renameat2(-100, a, -100, b, {RENAME_EXCHANGE}) == 0:\n"
    "        swaps += 1\n"
    "print('swaps', swaps)\n"
)


class Swapper:
    """A loop in the user's process exchanging ``a`` and ``b`` until stopped (at most
    ``seconds``); ``swaps`` counts the exchanges the kernel made."""

    def __init__(self, attack: Attack, a: Path, b: Path, seconds: float = 60) -> None:
        import threading

        self.stop = attack.lab.home / f".stop-{a.name}"
        code = f"A, B, STOP, SECONDS = {str(a)!r}, {str(b)!r}, {str(self.stop)!r}, {seconds}\n" + SWAP_LOOP
        self.result: list[subprocess.CompletedProcess[str]] = []
        self.thread = threading.Thread(
            target=lambda: self.result.append(attack.lab.user.python(code, timeout=seconds + 60))
        )
        self.thread.start()

    def finish(self) -> int:
        self.stop.touch()
        self.thread.join()
        self.stop.unlink()
        (done,) = self.result
        assert done.returncode == 0, done.stderr
        return int(done.stdout.split()[-1])


def test_runs_of_a_store_root_made_is_listed_as_another_user(lab: Lab, untouched: None) -> None:
    """Issue 42 item 7: `runs --store` of a store root made (its .staging is root's 0700
    folder), as the user: the table, and no `internal error: PermissionError … .staging`."""
    code, out, err = lab.run("runs", store=lab.roots_store)
    assert code == 0, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert "synthetic" in out


def test_a_fifo_lock_file_hangs_neither_runs_nor_recover(attack: Attack) -> None:
    """Issue 42 item 6: the user puts a FIFO at `.staging/ID.lock` beside a leftover of
    theirs; root's `runs` and `recover` (which would wait forever on the FIFO) finish, and
    recover names the lock file and leaves the leftover in place."""
    lab = attack.lab
    leftover = lab.store / ".staging" / "20260101-000000-fifo-lock"
    attack.plant(
        f"d = {str(leftover)!r}\n"
        "os.mkdir(d, 0o700)\n"
        "open(os.path.join(d, 'run.draft.json'), 'w').write('{}')\n"
        "os.mkfifo(d + '.lock', 0o600)\n"
    )
    for args in (("runs",), ("recover",)):
        code, err = attack.root(*args, "--store", str(lab.store), "--trust-store-owner", timeout=60)
        assert code == 0, (args, err)
        assert "Traceback" not in err and "internal error" not in err, err
    assert f"{leftover.name}.lock" in err and "not a regular file" in err, err
    assert leftover.is_dir() and stat.S_ISFIFO(os.lstat(f"{leftover}.lock").st_mode)


def _user_run(attack: Attack, template: dict[str, object], name: str, extra: str = "") -> Path:
    """A run folder ``name`` the user makes in their store with ``template`` as run.json
    (then ``extra`` runs as the user, with ``d`` the folder)."""
    folder = attack.lab.store / name
    template = {**template, "id": name}
    attack.plant(
        "import json\n"
        f"d = {str(folder)!r}\n"
        "os.mkdir(d, 0o755)\n"
        f"open(os.path.join(d, 'run.json'), 'w').write(json.dumps({template!r}))\n" + extra
    )
    return folder


def test_merge_copies_no_histogram_file_named_by_an_absolute_path(attack: Attack) -> None:
    """Issue 42 item 5: a run.json of the user naming root's private HdrHistogram log as
    `histogram.file` (an absolute path): root's merge refuses it in one line, and stores
    nothing (it copied the private log into a run the user could read)."""
    lab = attack.lab
    private = lab.home.parent / "root-only"
    os.mkdir(private, 0o700)
    shutil.copy(HLOG, private / "private.hlog")
    template_store = lab.home.parent / "template"
    code, err = attack.root("import", str(HLOG), "--store", str(template_store))
    assert code == 0, err
    (imported,) = ResultsStore(template_store).run_dirs()
    meta = json.loads((imported / "run.json").read_text())
    meta["histogram"]["file"] = str(private / "private.hlog")
    user_run = _user_run(attack, meta, "20260101-000000-hist-abs")
    mutex = next(p for p in ResultsStore(lab.store).run_dirs() if "mutex" in p.name)
    before = ResultsStore(lab.store).run_dirs()
    code, err = attack.root(
        "merge", str(user_run), str(mutex), "--as", "x", "--store", str(lab.store), "--trust-store-owner"
    )
    assert code == 2, err
    assert_one_line_error(err)
    assert "histogram.file" in err, err
    assert ResultsStore(lab.store).run_dirs() == before


def _mutex_run(lab: Lab) -> Path:
    return next(p for p in ResultsStore(lab.store).run_dirs() if "mutex" in p.name)


def _private_run(lab: Lab) -> Path:
    return next(p for p in ResultsStore(lab.store).run_dirs() if stat.S_IMODE(p.stat().st_mode) == 0o700)


def test_merge_reads_no_samples_file_linked_to_another_run(attack: Attack) -> None:
    """Issue 42 item 4: a run folder of the user whose samples.parquet is a link to root's
    private run's (run.json without `sha256` and `bytes`): root's merge refuses it in one
    line (it stored a copy readable by the user)."""
    lab = attack.lab
    private = _private_run(lab)
    meta = json.loads((private / "run.json").read_text())  # what the user could guess
    for key in ("sha256", "bytes"):
        meta["samples"].pop(key)
    user_run = _user_run(
        attack,
        meta,
        "20260101-000000-linked-samples",
        f"os.symlink({str(private / 'samples.parquet')!r}, os.path.join(d, 'samples.parquet'))\n",
    )
    before = ResultsStore(lab.store).run_dirs()
    code, err = attack.root(
        "merge",
        str(user_run),
        str(_mutex_run(lab)),
        "--as",
        "x",
        "--store",
        str(lab.store),
        "--trust-store-owner",
    )
    assert code == 2, err
    assert_one_line_error(err)
    assert "link" in err and "samples.parquet" in err, err
    assert ResultsStore(lab.store).run_dirs() == before


TRUST = ("--as", "x", "--trust-store-owner")  # then --store


def test_a_merge_of_a_private_run_is_private(lab: Lab) -> None:
    """Issue 42: a run made from files only root may read is never published readable by
    others: root's merge of its private (0700) run with a readable one is stored 0700."""
    before = set(ResultsStore(lab.store).run_dirs())
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jitterlab",
            "merge",
            str(_private_run(lab)),
            str(_mutex_run(lab)),
            *TRUST,
            "--store",
            str(lab.store),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (merged,) = set(ResultsStore(lab.store).run_dirs()) - before
    assert stat.S_IMODE(merged.stat().st_mode) == 0o700
    assert lab.user.python(f"open({str(merged / 'samples.parquet')!r}, 'rb')").returncode != 0


SECRET_NS = 777_777  # the latency of every sample of root's private leftover


def test_recover_follows_no_parts_folder_swapped_for_a_link(attack: Attack) -> None:
    """Issue 42 item 3: while root recovers the user's leftover, the user exchanges its
    `parts` with a link to the parts of root's private leftover (in root's own store), in a
    loop; no stored run ever holds root's private samples, and root's leftover is intact."""
    import pyarrow.parquet as pq

    lab = attack.lab
    shutil.rmtree(lab.leftover)
    roots = ResultsStore(lab.roots_store)
    secret = roots.staging_dir(roots.new_run_id("secret"))
    t_send = 1_000_000_000 + np.arange(1_000, dtype=np.int64) * 1_000
    roots.write_part(secret, 0, t_send, t_send + SECRET_NS, 0)
    ResultsStore.release_staging(secret)
    secret_files = root_files(secret)
    mine = ResultsStore(lab.store)
    recovered_any = refused_any = 0
    for attempt in range(8):
        leftover = lab.store / ".staging" / f"20260101-00000{attempt}-swap"
        attack.plant(
            f"d = {str(leftover)!r}\n"
            "os.mkdir(d, 0o700)\n"
            "open(os.path.join(d, 'run.draft.json'), 'w').write('{\"id\": \"%s\", \"config\": {}}' % os.path.basename(d))\n"
            "os.mkdir(os.path.join(d, 'parts'), 0o700)\n"
            f"os.symlink({str(secret / 'parts')!r}, os.path.join(home, 'plink-{attempt}'))\n"
        )
        # the user's own part (written here, then given to the user: the interpreter the
        # user's process runs cannot load pyarrow once it is that user)
        part = leftover / "parts" / "part-000000.parquet"
        mine.write_part(leftover, 0, t_send, t_send + 5_000, 0)
        os.chown(part, lab.user.uid, lab.user.gid)
        swapper = Swapper(attack, leftover / "parts", lab.home / f"plink-{attempt}", seconds=30)
        code, err = attack.root("recover", "--store", str(lab.store), "--trust-store-owner", timeout=120)
        swaps = swapper.finish()
        assert swaps > 0
        assert code == 0 and "Traceback" not in err and "internal error" not in err, err
        if leftover.exists():
            refused_any += 1
            assert leftover.name in err, err
        else:
            recovered_any += 1
    for run in ResultsStore(lab.store).runs():  # the readable ones (the lab's damaged run is not)
        if not run.histogram_only:
            t = pq.read_table(run.path / "samples.parquet")
            latency = np.asarray(t.column("t_recv_ns")) - np.asarray(t.column("t_send_ns"))
            assert not (latency == SECRET_NS).any(), f"root's private samples stored in {run}"
    assert root_files(secret) == secret_files


def test_export_and_report_write_nothing_through_a_folder_swapped_for_a_link(attack: Attack) -> None:
    """Issue 42 item 2: the user exchanges a folder of root's output path with a link to a
    root-only folder in a loop (renameat2 RENAME_EXCHANGE): root's writes (the file layer at
    full speed, then the real `export -o` and `report -o`) land in the user's folder or are
    refused in one line; never in root's folder, never an internal error."""
    from jitterlab.core.errors import JitterlabError
    from jitterlab.core.fileio import write_file

    lab = attack.lab
    out = lab.home / "out"
    link = lab.home / "out-link"
    attack.plant(f"os.mkdir({str(out)!r}, 0o755)\nos.symlink(rootdir, {str(link)!r})\n")
    swapper = Swapper(attack, out, link, seconds=120)
    try:
        import time

        wrote = refused = 0
        end = time.monotonic() + 3
        while time.monotonic() < end:
            try:
                write_file(out / f"f{wrote + refused}.txt", b"root's output\n")
                wrote += 1
            except JitterlabError as e:
                assert "\n" not in str(e)
                refused += 1
        for i, args in enumerate(
            [("export", _roots_run(attack), "--format", "csv", "-o")] * 4
            + [("report", "--store", str(lab.roots_store), "-o")]
        ):
            code, err = attack.root(*args, str(out / f"cli-{i}.out"))
            assert code in (0, 2) and "Traceback" not in err and "internal error" not in err, err
            if code == 2:  # one error line (report says "writing the report…" before it writes)
                assert len([line for line in err.splitlines() if "error" in line]) == 1, err
    finally:
        swaps = swapper.finish()
    assert swaps > 0 and wrote + refused > 0
    assert os.listdir(attack.rootdir) == []


@pytest.mark.parametrize(
    "harness",
    [
        ["--technique", "mutex"],
        # the JVM harness and its GC log get the folder as the native tools do (issue 42 leftover)
        pytest.param(["--runtime", "jvm", "--technique", "java-monitor"], id="jvm"),
    ],
)
def test_bench_writes_nothing_through_a_staging_folder_swapped_for_a_link(
    attack: Attack, harness: list[str]
) -> None:
    """Issue 42 item 1: while root measures in the user's store, the user renames root's
    fresh `.staging/ID` away and puts a link `ID -> VICTIM` (a root-only folder) in its
    place. The harness writes through the folder it was given as a descriptor: VICTIM is
    untouched (root created samples.jlraw there and deleted harness.json and journal.bin),
    and root stores nothing through the link (one line, exit 2)."""
    lab = attack.lab
    victim = lab.home.parent / "victim-dir"
    os.mkdir(victim, 0o700)
    (victim / "harness.json").write_text("root's\n")
    (victim / "journal.bin").write_bytes(b"root's journal")
    staging = lab.store / ".staging"
    known = sorted(os.listdir(staging))
    import threading

    results: list[subprocess.CompletedProcess[str]] = []
    code_text = (
        "import time\n"
        f"staging, victim, known = {str(staging)!r}, {str(victim)!r}, set({known!r})\n"
        "swapped, end = 0, time.monotonic() + 90\n"
        "while time.monotonic() < end and not swapped:\n"
        "    for name in os.listdir(staging):\n"
        "        p = os.path.join(staging, name)\n"
        "        if name in known or name.endswith('.lock') or 'write-check' in name:\n"
        "            continue\n"
        "        try:\n"
        "            st = os.lstat(p)\n"
        "        except FileNotFoundError:\n"
        "            continue\n"
        "        if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0:\n"
        "            continue\n"
        "        time.sleep(0.3)\n"
        "        os.rename(p, p + '.moved')\n"
        "        os.symlink(victim, p)\n"
        "        swapped += 1\n"
        "        break\n"
        "print('swapped', swapped)\n"
    )
    thread = threading.Thread(target=lambda: results.append(lab.user.python(code_text, timeout=150)))
    thread.start()
    code, err = attack.root(
        "bench",
        *harness,
        "--samples",
        "300000",
        "--store",
        str(lab.store),
        "--trust-store-owner",
        timeout=150,
    )
    thread.join()
    (done,) = results
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "1", done.stdout  # the swap happened
    assert sorted(os.listdir(victim)) == ["harness.json", "journal.bin"]
    assert (victim / "harness.json").read_text() == "root's\n"  # not replaced through the link
    assert (victim / "journal.bin").read_bytes() == b"root's journal"
    assert code == 2, err
    errors = [line for line in err.splitlines() if "error" in line]  # after bench's progress lines
    assert len(errors) == 1 and "Traceback" not in err, err
    assert "replaced while the run was made" in errors[0], err


@pytest.mark.parametrize(
    "args",
    [("runs",), ("recover",), ("bench", "--technique", "mutex", "--samples", "1000"), ("import", str(HLOG))],
    ids=lambda a: a[0],
)
def test_root_refuses_a_store_another_user_owns_unless_told(
    lab: Lab, untouched: None, args: tuple[str, ...]
) -> None:
    """Issue 42: a root jitterlab reading or writing a store the user owns refuses in one
    line naming the owner and the option that accepts it (`--trust-store-owner`); nothing
    of the store is read or changed."""
    before = sorted(os.listdir(lab.store)), sorted(os.listdir(lab.store / ".staging"))
    done = subprocess.run(
        [sys.executable, "-m", "jitterlab", *args, "--store", str(lab.store)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert_one_line_error(done.stderr)
    assert lab.user.name in done.stderr and "--trust-store-owner" in done.stderr, done.stderr
    assert (sorted(os.listdir(lab.store)), sorted(os.listdir(lab.store / ".staging"))) == before

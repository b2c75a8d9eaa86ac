"""Issue 24 items 2 and 3: a second, unprivileged user attacks a root ``monitor serve``
through the shared /dev/shm folder (a planted lock link or file, a ring created first)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import OtherUser, assert_one_line_error, run_cli
from jitterlab import Monitor
from jitterlab.core.errors import JitterlabError
from jitterlab.core.warnings import CodedWarning
from jitterlab.monitor import recorder
from jitterlab.monitor.server import ChannelLock


@pytest.fixture
def channel() -> Iterator[str]:
    name = f"pytest-sec-{os.getpid()}-{time.monotonic_ns() % 10**9}"
    yield name
    recorder.unlink(name)
    Path(lock_path(name)).unlink(missing_ok=True)


def lock_path(channel: str) -> str:
    return f"/dev/shm/jitterlab-monitor-{channel}.serve.lock"


def serve(channel: str, store: Path, *extra: str) -> tuple[int, str]:
    done = run_cli(
        "monitor", "serve", "--channel", channel, "--duration", "0.5s", "--store", str(store), *extra
    )
    return done.returncode, done.stderr


def test_a_lock_link_planted_by_another_user_is_not_followed(
    tmp_path: Path, store: Path, channel: str, other_user: OtherUser
) -> None:
    victim = tmp_path / "root-owned"
    victim.write_text("precious\n")
    victim.chmod(0o644)
    tmp_path.chmod(0o755)
    planted = other_user.python(f"os.symlink({str(victim)!r}, {lock_path(channel)!r})")
    assert planted.returncode == 0, planted.stderr
    assert os.lstat(lock_path(channel)).st_uid == other_user.uid
    code, err = serve(channel, store)
    assert code == 2 and "symbolic link" in err and "not followed" in err, err
    assert_one_line_error(err)
    assert victim.read_text() == "precious\n"  # before the fix: truncated and given root's pid


def test_a_lock_file_of_another_user_is_named_and_not_believed(
    store: Path, channel: str, other_user: OtherUser
) -> None:
    planted = other_user.python(f"pathlib.Path({lock_path(channel)!r}).write_text('1')")
    assert planted.returncode == 0, planted.stderr
    code, err = serve(channel, store)
    assert code == 2 and other_user.name in err and "pid 1" not in err, err
    assert_one_line_error(err)


def test_a_stale_lock_of_a_dead_server_is_taken_over_with_a_warning(channel: str) -> None:
    Path(lock_path(channel)).write_text("4194304")  # a server killed outright: file left, flock gone
    warnings: list[CodedWarning] = []
    held = ChannelLock(channel, warnings.append)
    try:
        assert [w.code for w in warnings] == ["stale-lock"] and "4194304" in warnings[0].detail
        assert Path(lock_path(channel)).read_text() == str(os.getpid())
        with pytest.raises(JitterlabError, match=f"already served \\(pid {os.getpid()}\\)"):
            ChannelLock(channel)
    finally:
        held.release()


def test_a_ring_created_first_by_another_user_is_refused(
    store: Path, channel: str, other_user: OtherUser
) -> None:
    # the neighbour creates the channel's ring, leaves a baseline hint and 2000 fake samples
    attack = other_user.python(
        f"m = recorder.Monitor({channel!r}, baseline='their-baseline')\n"
        "for _ in range(2000): m.record(80_000_000)\n"
    )
    assert attack.returncode == 0, attack.stderr
    with pytest.raises(JitterlabError, match=f"belongs to {other_user.name}"):
        recorder.Reader(channel)
    with pytest.raises(JitterlabError, match="not to you"):
        Monitor(channel)  # root's application would record into their ring
    code, err = serve(channel, store)
    assert code == 2 and other_user.name in err and "--ring-owner" in err, err
    assert_one_line_error(err)
    assert not store.exists() or not [p for p in store.iterdir() if not p.name.startswith(".")]
    # trusted explicitly (an application running as that user): then it is used
    reader = recorder.Reader(channel, ring_owner=other_user.uid)
    try:
        assert reader.hint() == "their-baseline" and len(reader.drain(stale_ns=0)) == 2000
    finally:
        reader.close()


def test_a_ring_others_may_write_is_refused(channel: str) -> None:
    Monitor(channel).close()  # ours, 0600
    os.chmod(f"/dev/shm/jitterlab-monitor-{channel}", 0o666)  # as a careless umask or chmod leaves it
    with pytest.raises(JitterlabError, match="mode 666"):
        recorder.Reader(channel)


@pytest.mark.parametrize("capacity", [0, 1 << 58, 32])
def test_a_ring_whose_header_claims_an_impossible_capacity_is_refused(channel: str, capacity: int) -> None:
    """The ring's header is read from a file (issue 24 item 15): capacity 0 made the mask all
    ones and 2^58 slots overflowed the size check; either let a drain read outside the ring."""
    Monitor(channel, capacity=64).close()
    with open(f"/dev/shm/jitterlab-monitor-{channel}", "r+b") as ring:
        ring.seek(16)  # after magic (8), version (4), entry size (4)
        ring.write(capacity.to_bytes(8, "little"))
    with pytest.raises(JitterlabError, match="not a jitterlab monitor ring"):
        recorder.Reader(channel)


def test_a_trusted_users_ring_is_served_and_said_so(store: Path, channel: str, other_user: OtherUser) -> None:
    made = other_user.python(f"recorder.Monitor({channel!r}).close()")
    assert made.returncode == 0, made.stderr
    code, err = serve(channel, store, "--ring-owner", other_user.name)
    # no writer came while it was served: no run is stored, exit 1 (issue 41 item 5)
    assert code == 1 and "ring-foreign" in err and other_user.name in err, err
    assert "no writer recorded" in err, err
    assert f"monitor unlink --channel {channel}" in err, err  # the summary says the ring stays


def test_unlink_stale_removes_only_own_rings_no_process_has_open(other_user: OtherUser) -> None:
    """Issue 24 item 13: every served channel kept its 32 MB ring until `monitor unlink`.
    `--stale` removes this user's rings that no process maps; a ring an application holds
    open and another user's ring stay."""
    prefix = f"pytest-stale-{os.getpid()}-{time.monotonic_ns() % 10**9}"
    closed, held, theirs = f"{prefix}-closed", f"{prefix}-held", f"{prefix}-theirs"
    Monitor(closed).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys; from jitterlab import Monitor; m = Monitor({held!r}); print(1, flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"1"
        made = other_user.python(f"recorder.Monitor({theirs!r}).close()")
        assert made.returncode == 0, made.stderr
        assert recorder.stale_channels(prefix + "-*") == [closed]
        done = run_cli("monitor", "unlink", "--stale", "--channel", prefix + "-*")
        assert done.returncode == 0 and closed in done.stderr, done.stderr
        ring = Path("/dev/shm") / f"jitterlab-monitor-{prefix}"
        assert not Path(f"{ring}-closed").exists()
        assert Path(f"{ring}-held").exists() and Path(f"{ring}-theirs").exists()
    finally:
        holder.kill()
        holder.wait()
        for name in (closed, held, theirs):
            recorder.unlink(name)

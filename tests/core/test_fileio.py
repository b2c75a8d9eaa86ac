"""The one safe output function (issue 24 item 1): no write through a planted link, no
device replaced by a regular file, atomic replacement of regular files, ``-`` is stdout."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import assert_one_line_error, latency_clusters, make_run, run_main
from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import make_dir, open_output, private_dir, write_file

ROOT = os.geteuid() == 0


def _device(tmp_path: Path, name: str, minor: int) -> Path:
    """A private copy of /dev/null (minor 3) or /dev/full (minor 7): the real nodes are never
    put at risk by a test of the code as it was (which replaced them)."""
    if not ROOT:
        return Path(f"/dev/{name}")
    node = tmp_path / name
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    return node


def test_a_planted_link_at_the_old_temporary_name_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "out.json"
    for name in ("out.json.tmp", ".out.json.tmp", "out.json.partial"):
        (tmp_path / name).symlink_to(victim)
    write_file(out, b"{}\n")
    assert victim.read_text() == "precious\n"
    assert out.read_bytes() == b"{}\n"
    assert not out.is_symlink()


def test_no_temporary_file_is_left_and_names_are_unpredictable(tmp_path: Path) -> None:
    seen = set()

    class Spy(Exception):
        pass

    for _ in range(3):
        with pytest.raises(Spy), open_output(tmp_path / "x.bin") as f:
            f.write(b"half")
            seen |= {p.name for p in tmp_path.iterdir()}
            raise Spy
    assert len(seen) == 3  # a fresh random name each time
    assert list(tmp_path.iterdir()) == []  # discarded on failure


def test_the_temporary_file_is_private_while_written(tmp_path: Path) -> None:
    os.umask(0)
    try:
        with open_output(tmp_path / "x.bin") as f:
            f.write(b"secret")
            (tmp,) = tmp_path.iterdir()
            assert stat.S_IMODE(tmp.stat().st_mode) == 0o600
    finally:
        os.umask(0o022)


def test_device_is_written_in_place_never_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s"
    run = make_run(store, latency_clusters(1, 2_000))
    full, null = _device(tmp_path, "full", 7), _device(tmp_path, "null", 3)
    code, _, err = run_main(
        ["export", run.id, "--format", "csv", "-o", str(full), "--store", str(store)], capsys
    )
    assert code == 2
    assert_one_line_error(err)
    assert "no space left on device" in err
    assert stat.S_ISCHR(full.lstat().st_mode), "the device node was replaced"
    code, _, err = run_main(
        ["export", run.id, "--format", "csv", "-o", str(null), "--store", str(store)], capsys
    )
    assert code == 0, err
    assert stat.S_ISCHR(null.lstat().st_mode)
    for fmt in ("parquet", "hgrm"):  # the streaming writer too
        code, _, err = run_main(
            ["export", run.id, "--format", fmt, "-o", str(full), "--store", str(store)], capsys
        )
        assert code == 2 and "no space left on device" in err
    assert stat.S_ISCHR(full.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["s", "full", "null"] if ROOT else ["s"])


def test_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    table = pa.table({"a": list(range(10_000))})
    with open_output(fifo) as f:
        pq.write_table(table, f)  # a Parquet writer asks tell() of a pipe
    reader.join(10)
    if reader.is_alive():  # nothing opened the FIFO: unblock the reader
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert pq.read_table(pa.BufferReader(got[0])).num_rows == 10_000


def test_socket_is_written_in_place(tmp_path: Path) -> None:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    got = bytearray()

    def serve() -> None:
        conn, _ = server.accept()
        while chunk := conn.recv(65536):
            got.extend(chunk)
        conn.close()

    server.settimeout(10)
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    write_file(path, b"hello\n")
    thread.join(10)
    server.close()
    assert bytes(got) == b"hello\n" and stat.S_ISSOCK(path.lstat().st_mode)


def test_a_symlinked_target_is_resolved_once(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    os.chmod(real, 0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_file(link, b"new")
    assert link.is_symlink() and real.read_text() == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the replaced file's mode is kept
    (tmp_path / "to-dev").symlink_to(_device(tmp_path, "full", 7))
    with pytest.raises(JitterlabError, match="no space left on device"):
        write_file(tmp_path / "to-dev", b"x")


def test_never_world_writable_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        write_file(tmp_path / "new", b"x")
        (tmp_path / "was").write_text("x")
        os.chmod(tmp_path / "was", 0o666)
        write_file(tmp_path / "was", b"y")
        made = make_dir(tmp_path / "a" / "b")
        staging = private_dir(tmp_path / "staging")
    finally:
        os.umask(old)
    for path in (tmp_path / "new", tmp_path / "was", made, made.parent):
        assert not path.stat().st_mode & 0o002, path
    assert stat.S_IMODE(staging.stat().st_mode) == 0o700


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(JitterlabError, match="is a folder"):
        write_file(tmp_path, b"x")


@pytest.mark.parametrize("command", ["export", "report", "model"])
def test_dash_is_standard_output_everywhere(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "s"
    run = make_run(store, latency_clusters(2, 5_000))
    args = {
        "export": ["export", run.id, "--format", "hgrm", "-o", "-"],
        "report": ["report", run.id, "-o", "-"],
        "model": ["model", "build", run.id, "-o", "-"],
    }[command]
    code, out, err = run_main([*args, "--store", str(store)], capsys)
    assert code == 0, err
    assert out.strip()
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_dev_stdout_onto_a_pipe_is_written_in_place(name: str) -> None:
    """`-o /dev/stdout | less`: realpath of the descriptor link ends in 'pipe:[N]', no file,
    and the write failed with "no such file or directory"; the link to the descriptor is
    opened as it is (every step of it is root's or this user's)."""
    import subprocess
    import sys

    code = f"from jitterlab.core.fileio import write_file; write_file({name!r}, b'through the pipe')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"through the pipe"

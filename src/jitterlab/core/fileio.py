"""Every file jitterlab writes goes through here: atomic, never through a planted link,
never onto a device it was not asked to write to.

The rules (docs/security.md), whoever runs jitterlab (root included):

- ``-`` is standard output.
- A symlinked target is resolved once (``realpath``); the resolved path follows these rules.
  A link on the way that another user made (not this user, not root) is never followed,
  wherever it is; a FIFO or socket of another user is never written.
- A regular or absent target is replaced atomically: the bytes go to a temporary file
  created with ``O_CREAT|O_EXCL|O_NOFOLLOW`` under an unpredictable name in the target's
  folder (mode 0600 while written), then given the intended mode and renamed over the
  target, relative to a descriptor of the folder. A reader sees the old file or the new
  one, never half of one; a planted link or file at any name jitterlab uses is never
  followed or truncated.
- A character or block device, a FIFO or a socket is written in place and never replaced
  (``-o /dev/null`` works; ``-o /dev/full`` is "no space left on device").
- The intended mode is the existing file's or ``0666 & ~umask``, never world-writable
  whatever the umask; callers may ask for a private mode (0600).

:func:`write_file` takes the whole bytes; :func:`open_output` is the streaming form (a
binary file object, committed when the ``with`` block ends without an exception, so a
Parquet writer can write row group by row group). :func:`make_dir` and
:func:`private_dir` create folders with a set mode (staging folders are 0700).
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import socket
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO

from jitterlab.core.errors import JitterlabError

STDOUT = "-"
PRIVATE = 0o600
NOT_WORLD_WRITABLE = ~0o002


def os_error_text(e: OSError) -> str:
    """An OSError as the short lower-case phrase the CLI prints ("no space left on device")."""
    text = e.strerror or (os.strerror(e.errno) if e.errno else "") or str(e) or type(e).__name__
    return text[:1].lower() + text[1:]


def current_umask() -> int:
    """The process's umask, read without changing it (Linux ≥ 4.7 reports it in status)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # fallback: not thread-safe for the instant it takes
    os.umask(mask)
    return mask


def _intended_mode(existing: os.stat_result | None, mode: int | None) -> int:
    if mode is None:
        if existing is not None and stat.S_ISREG(existing.st_mode):
            mode = stat.S_IMODE(existing.st_mode)
        else:
            mode = 0o666 & ~current_umask()
    return mode & 0o777 & NOT_WORLD_WRITABLE


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Sink(io.RawIOBase):
    """A write-only file object over a descriptor that counts what was written, so that
    ``tell()`` works on a pipe or a device too (a Parquet writer asks for it)."""

    def __init__(self, fd: int, close_fd: bool) -> None:
        self._fd, self._close_fd, self._position = fd, close_fd, 0
        self._seekable = stat.S_ISREG(os.fstat(fd).st_mode)

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._seekable  # a temporary file is (an MP4 muxer goes back to its header)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if not self._seekable:
            raise io.UnsupportedOperation("seek")
        self._position = os.lseek(self._fd, offset, whence)
        return self._position

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        total = 0
        while total < len(view):
            total += os.write(self._fd, view[total:])
        self._position += total
        return total

    def tell(self) -> int:
        return self._position

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        if not self.closed and self._close_fd:
            os.close(self._fd)
        super().close()


class _Stream(io.RawIOBase):
    """Standard output's binary stream, counting what was written (``tell()`` on a pipe)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream, self._position = stream, 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._stream.write(data)
        written = memoryview(data).nbytes
        self._position += written
        return written

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:  # standard output stays open
        self.flush()
        super().close()


MAX_LINKS = 40  # links followed in one path, as the kernel's limit (ELOOP)


def _check_link(target: Path | str) -> None:
    """Every link on the way to ``target`` (the name itself and any folder in its path,
    through the links they point to) is followed only if this user or root made it. A link
    another user made, anywhere (a shared folder like /tmp, or that user's own folder that
    root writes into), is refused in one line: following it would let that user choose
    which file this user's write replaces, whatever ``fs.protected_symlinks`` says."""
    pending = list(Path(os.path.abspath(target)).parts[1:])
    current, hops = "/", 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        try:
            st = os.lstat(candidate)
        except OSError:  # absent (or not for us to look at): nothing further is a link of anyone
            return
        if not stat.S_ISLNK(st.st_mode):
            current = candidate
            continue
        if st.st_uid not in (os.geteuid(), 0):
            raise JitterlabError(
                f"{target}: {candidate} is a link made by {owner_name(st.st_uid)}; not followed "
                "(remove it, or name the file it points to)"
            )
        hops += 1
        if hops > MAX_LINKS:
            raise JitterlabError(f"cannot write {target}: too many levels of links")
        try:
            destination = os.readlink(candidate)
        except OSError as e:
            raise JitterlabError(f"cannot write {target}: {os_error_text(e)}") from None
        if destination.startswith("/"):
            current = "/"
        pending = [*Path(destination).parts[1 if destination.startswith("/") else 0 :], *pending]


def _check_special(target: Path | str, st: os.stat_result | None) -> None:
    """A FIFO or socket is written in place only if it is this user's or root's: another
    user's would hand them what is written (or, a FIFO no one reads, block the writer)."""
    if st is None or not (stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode)):
        return
    if st.st_uid not in (os.geteuid(), 0):
        kind = "FIFO" if stat.S_ISFIFO(st.st_mode) else "socket"
        raise JitterlabError(
            f"{target}: a {kind} of {owner_name(st.st_uid)}; not written (remove it, or write elsewhere)"
        )


def _resolve(target: Path | str) -> tuple[Path, os.stat_result | None]:
    """(the resolved path, its lstat or None when absent); one line for a folder."""
    _check_link(target)
    path = Path(os.path.realpath(target))
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        piped = _through_descriptor_link(target)
        if piped is not None:
            _check_special(target, piped)
            return Path(target), piped
        return path, None
    except OSError as e:
        raise JitterlabError(f"cannot write {target}: {os_error_text(e)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise JitterlabError(f"cannot write {target}: is a folder")
    _check_special(target, st)
    return path, st


def _through_descriptor_link(target: Path | str) -> os.stat_result | None:
    """``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N`` onto a pipe: ``realpath`` ends in a
    name like ``pipe:[123]`` that is no file (so ``-o /dev/stdout | less`` failed with "no
    such file or directory"); the kernel's own link to the descriptor opens it. The FIFO's
    or device's status when that is what ``target`` leads to, else None."""
    try:
        st = os.stat(target)
    except (OSError, ValueError):
        return None
    return st if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode) else None


def _special(st: os.stat_result | None) -> bool:
    """A target that is written in place: a device, a FIFO or a socket."""
    return st is not None and (
        stat.S_ISCHR(st.st_mode)
        or stat.S_ISBLK(st.st_mode)
        or stat.S_ISFIFO(st.st_mode)
        or stat.S_ISSOCK(st.st_mode)
    )


def _open_special(path: Path, st: os.stat_result) -> tuple[int, socket.socket | None]:
    """A descriptor on a device or FIFO (opened in place, never created or truncated), or a
    connected stream socket."""
    if stat.S_ISSOCK(st.st_mode):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
        except OSError:
            sock.close()
            raise
        return sock.fileno(), sock
    # a descriptor link (/dev/stdout onto a pipe) is opened through the link, whose every
    # step _check_link has vetted; anything else is opened only if it is no link itself
    nofollow = os.O_NOFOLLOW if os.path.realpath(path) == str(path) else 0
    fd = os.open(path, os.O_WRONLY | nofollow | os.O_NOCTTY | os.O_CLOEXEC)
    if stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for a regular file since we looked
        os.close(fd)
        raise OSError(errno.EAGAIN, "changed while being opened; try again")
    return fd, None


@contextmanager
def open_output(target: Path | str, mode: int | None = None) -> Iterator[BinaryIO]:
    """A binary file object for ``target`` by the rules of this module; what was written is
    committed (renamed into place, fsynced) when the block ends without an exception and
    discarded otherwise. ``mode`` is the file's permission bits (default: the existing
    file's, else ``0666 & ~umask``; never world-writable). Errors are one line
    (:class:`JitterlabError`) naming the target."""
    if str(target) == STDOUT:
        sys.stdout.flush()
        stream = _Stream(sys.stdout.buffer)
        try:
            yield stream  # type: ignore[misc]
            stream.flush()
        except OSError as e:
            if isinstance(e, BrokenPipeError):
                raise
            raise JitterlabError(f"cannot write standard output: {os_error_text(e)}") from None
        return
    path, st = _resolve(target)
    if _special(st):
        assert st is not None
        try:
            fd, sock = _open_special(path, st)
        except OSError as e:
            raise JitterlabError(f"cannot write {target}: {os_error_text(e)}") from None
        sink = _Sink(fd, close_fd=sock is None)
        try:
            yield sink  # type: ignore[misc]
        except OSError as e:
            raise JitterlabError(f"cannot write {target}: {os_error_text(e)}") from None
        finally:
            sink.close()
            if sock is not None:
                sock.close()
        return
    with _replacing(path, st, mode, str(target)) as sink:
        yield sink  # type: ignore[misc]


@contextmanager
def _replacing(path: Path, st: os.stat_result | None, mode: int | None, shown: str) -> Iterator[_Sink]:
    """The atomic replacement of a regular (or absent) file, relative to its folder's fd."""
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise JitterlabError(f"cannot write {shown}: folder {path.parent}: {os_error_text(e)}") from None
    tmp = f".{path.name[:100]}.{os.urandom(8).hex()}.tmp"
    try:
        try:
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                PRIVATE,
                dir_fd=dir_fd,
            )
        except OSError as e:
            raise JitterlabError(f"cannot write {shown}: {os_error_text(e)}") from None
        sink = _Sink(fd, close_fd=True)
        try:
            yield sink
            os.fsync(fd)
            os.fchmod(fd, _intended_mode(st, mode))
            sink.close()
            os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            os.fsync(dir_fd)
        except BaseException as e:
            sink.close()
            with suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            if isinstance(e, OSError) and not isinstance(e, BrokenPipeError):
                raise JitterlabError(f"cannot write {shown}: {os_error_text(e)}") from None
            raise
    finally:
        os.close(dir_fd)


def write_file(target: Path | str, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``target`` by the rules of this module (the whole-bytes form of
    :func:`open_output`)."""
    with open_output(target, mode) as f:
        f.write(data)


def json_bytes(document: Any) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=False) + "\n").encode()


def write_json(target: Path | str, document: Any, mode: int | None = None) -> None:
    write_file(target, json_bytes(document), mode)


# The names every writer used before: the same rules.
atomic_write_bytes = write_file
atomic_write_json = write_json


def make_dir(path: Path, mode: int = 0o755) -> Path:
    """``path`` and its missing parents created with ``mode`` less the umask, never
    world-writable whatever the umask; an existing folder is left as it is. A link another
    user made on the way is refused (as for files)."""
    _check_link(path)  # no folder is made through a link another user planted on the way
    missing = []
    p = Path(path)
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode & NOT_WORLD_WRITABLE)  # the umask applies on top
        except FileExistsError:
            pass
        except OSError as e:
            raise JitterlabError(f"cannot create folder {folder}: {os_error_text(e)}") from None
    if not Path(path).is_dir():
        raise JitterlabError(f"{path}: not a folder")
    return Path(path)


def owner_name(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def check_private_dir(path: Path, trusted: set[int] | None = None) -> os.stat_result:
    """``path`` must be a real folder (not a link) owned by this user (or by one of the
    ``trusted`` users) that no one else can write to; one line naming the owner and the fix
    otherwise."""
    try:
        st = os.lstat(path)
    except OSError as e:
        raise JitterlabError(f"{path}: {os_error_text(e)}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise JitterlabError(f"{path}: not a folder (a link or a file is there): remove it")
    if st.st_uid not in (trusted or {os.geteuid()}):
        raise JitterlabError(
            f"{path} belongs to {owner_name(st.st_uid)}, not to you: it is not used; "
            "its owner (or root) can remove it, or use a store of your own"
        )
    if st.st_mode & 0o022:
        raise JitterlabError(
            f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o}): chmod go-w it"
        )
    return st


def private_dir(path: Path, exist_ok: bool = True) -> Path:
    """A folder only this user can enter (0700): created so, or an existing one of ours
    tightened to 0700; a folder that is not ours (or a link) is refused in one line."""
    make_dir(Path(path).parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not exist_ok:
            raise
    except OSError as e:
        raise JitterlabError(f"cannot create folder {path}: {os_error_text(e)}") from None
    try:
        st = os.lstat(path)
    except OSError as e:
        raise JitterlabError(f"{path}: {os_error_text(e)}") from None
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700, follow_symlinks=False)
    check_private_dir(path)
    return Path(path)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def check_writable_file(path: Path, flag: str) -> None:
    """Fail now, not after minutes of measuring, when ``path`` could not be written: its
    folder must exist and be writable, and the path must not be a folder. A device, a FIFO,
    a socket and ``-`` (standard output) are written in place."""
    if str(path) == STDOUT:
        return
    resolved, st = _resolve(path)
    if _special(st):
        return
    folder = resolved.parent
    if not folder.is_dir():
        raise JitterlabError(f"{flag} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise JitterlabError(f"{flag} {path}: not writable")

"""Every file jitterlab writes goes through here: atomic, never through a planted link,
never onto a device it was not asked to write to.

The rules (docs/security.md), whoever runs jitterlab (root included):

- ``-`` is standard output.
- The target is reached from open folder descriptors, component by component
  (``openat(O_NOFOLLOW|O_DIRECTORY)``), never by ``realpath`` then open: a folder swapped
  for a link while this walks makes the walk fail, never lead elsewhere (issue 42 item 2).
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
from dataclasses import dataclass
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


_PROC_DEV: int | None = None


def _on_procfs(dir_fd: int) -> bool:
    """Whether the folder ``dir_fd`` is in /proc (where ``fd/N`` are the kernel's links to
    open descriptors: ``pipe:[123]`` is no path, the link itself reaches the pipe)."""
    global _PROC_DEV
    if _PROC_DEV is None:
        try:
            _PROC_DEV = os.stat("/proc/self").st_dev
        except OSError:
            _PROC_DEV = -1
    return os.fstat(dir_fd).st_dev == _PROC_DEV


@dataclass
class _Found:
    """Where a write lands, reached from open folder descriptors (never a path resolved
    once and opened again): ``dir_fd`` (owned), the entry ``name`` in it, its status (None
    when absent); ``magic``: the entry is a /proc descriptor link, opened through it."""

    dir_fd: int
    name: str
    st: os.stat_result | None
    magic: bool = False

    def close(self) -> None:
        os.close(self.dir_fd)


def _walk(target: Path | str) -> _Found:
    """``target`` resolved component by component from open folder descriptors
    (``openat(O_NOFOLLOW|O_DIRECTORY)``), as the kernel would, but following a link only
    if this user or root made it (read with ``O_PATH``: the owner checked and the text read
    are the same link's). A folder swapped for a link while this walks makes the next
    ``openat`` fail instead of leading elsewhere (issue 42 item 2): what :func:`open_output`
    writes lands in the folder this checked, or nowhere."""
    shown = str(target)
    pending = list(Path(os.path.abspath(target)).parts[1:])
    try:
        fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise JitterlabError(f"cannot write {shown}: {os_error_text(e)}") from None
    hops, where = 0, "/"  # where: the path of the folder ``fd`` is, for messages
    try:
        while True:
            while pending and pending[0] in ("", "."):
                pending.pop(0)
            if not pending:
                raise JitterlabError(f"cannot write {shown}: is a folder")
            part = pending.pop(0)
            last = not any(p not in ("", ".") for p in pending)
            if part == "..":
                parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd, where = parent, os.path.dirname(where)
                continue
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if last:
                    found, fd = _Found(fd, part, None), -1
                    return found
                raise JitterlabError(
                    f"cannot write {shown}: folder {os.path.join(where, part)} does not exist"
                ) from None
            except OSError as e:
                raise JitterlabError(f"cannot write {shown}: {os_error_text(e)}") from None
            if stat.S_ISLNK(st.st_mode):
                if last and _on_procfs(fd):
                    found, fd = _Found(fd, part, os.stat(part, dir_fd=fd), magic=True), -1
                    return found
                destination = _read_trusted_link(fd, part, shown)
                hops += 1
                if hops > MAX_LINKS:
                    raise JitterlabError(f"cannot write {shown}: too many levels of links")
                if destination.startswith("/"):
                    os.close(fd)
                    fd, where = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), "/"
                pending = [*Path(destination).parts[1 if destination.startswith("/") else 0 :], *pending]
                continue
            if last:
                if stat.S_ISDIR(st.st_mode):
                    raise JitterlabError(f"cannot write {shown}: is a folder")
                _check_special(shown, st)
                found, fd = _Found(fd, part, st), -1
                return found
            try:
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped since we looked: go round again
                    pending.insert(0, part)
                    hops += 1
                    if hops > MAX_LINKS:
                        raise JitterlabError(f"cannot write {shown}: changed while being opened") from None
                    continue
                raise JitterlabError(f"cannot write {shown}: {os_error_text(e)}") from None
            os.close(fd)
            fd, where = child, os.path.join(where, part)
    finally:
        if fd >= 0:
            os.close(fd)


def _read_trusted_link(dir_fd: int, name: str, shown: str) -> str:
    """The text of the link ``name`` in ``dir_fd``, read from an ``O_PATH`` descriptor of
    the link itself after checking that this user or root made it."""
    try:
        link = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as e:
        raise JitterlabError(f"cannot write {shown}: {os_error_text(e)}") from None
    try:
        st = os.fstat(link)
        if not stat.S_ISLNK(st.st_mode):
            return name  # swapped for a non-link since: look at it again
        if st.st_uid not in (os.geteuid(), 0):
            raise JitterlabError(
                f"{shown}: {name} is a link made by {owner_name(st.st_uid)}; not followed "
                "(remove it, or name the file it points to)"
            )
        return os.readlink("", dir_fd=link)
    except OSError as e:
        raise JitterlabError(f"cannot write {shown}: {os_error_text(e)}") from None
    finally:
        os.close(link)


def _resolve(target: Path | str) -> tuple[Path, os.stat_result | None]:
    """(the folder path and name as walked, its status or None when absent); one line for a
    folder or for a link of another user on the way."""
    found = _walk(target)
    try:
        return Path(target), found.st
    finally:
        found.close()


def _special(st: os.stat_result | None) -> bool:
    """A target that is written in place: a device, a FIFO or a socket."""
    return st is not None and (
        stat.S_ISCHR(st.st_mode)
        or stat.S_ISBLK(st.st_mode)
        or stat.S_ISFIFO(st.st_mode)
        or stat.S_ISSOCK(st.st_mode)
    )


def _open_special(found: _Found) -> tuple[int, socket.socket | None]:
    """A descriptor on a device or FIFO (opened in place from its folder's descriptor, never
    created or truncated), or a connected stream socket."""
    st = found.st
    assert st is not None
    if stat.S_ISSOCK(st.st_mode):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(fd_path(found.dir_fd, found.name)))
        except OSError:
            sock.close()
            raise
        return sock.fileno(), sock
    # a /proc descriptor link (/dev/stdout onto a pipe) is opened through the link, whose
    # every step _walk has vetted; anything else is opened only if it is no link itself
    # (a FIFO this user or root made, named as the output, is waited on as `> fifo` is)
    nofollow = 0 if found.magic else os.O_NOFOLLOW
    fd = os.open(found.name, os.O_WRONLY | nofollow | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=found.dir_fd)
    try:
        opened = os.fstat(fd)
        if stat.S_ISDIR(opened.st_mode) or (stat.S_ISREG(opened.st_mode) and not found.magic):  # swapped
            raise OSError(errno.EAGAIN, "changed while being opened; try again")
        if not found.magic:
            _check_special(found.name, opened)
    except BaseException:
        os.close(fd)
        raise
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
    found = _walk(target)
    try:
        if _special(found.st) or found.magic:
            try:
                fd, sock = _open_special(found)
            except OSError as e:
                if e.errno == errno.ENXIO:  # a FIFO no one reads: never waited on
                    raise JitterlabError(f"cannot write {target}: a FIFO no one reads") from None
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
        with _replacing(found, mode, str(target)) as sink:
            yield sink  # type: ignore[misc]
    finally:
        found.close()


@contextmanager
def _replacing(found: _Found, mode: int | None, shown: str) -> Iterator[_Sink]:
    """The atomic replacement of a regular (or absent) file, relative to its folder's fd
    (the one :func:`_walk` opened: never the folder's path again)."""
    dir_fd, name, st = found.dir_fd, found.name, found.st
    tmp = f".{name[:100]}.{os.urandom(8).hex()}.tmp"
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
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        os.fsync(dir_fd)
    except BaseException as e:
        sink.close()
        with suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        if isinstance(e, OSError) and not isinstance(e, BrokenPipeError):
            raise JitterlabError(f"cannot write {shown}: {os_error_text(e)}") from None
        raise


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


def check_private_dir(
    path: Path, trusted: set[int] | None = None, st: os.stat_result | None = None
) -> os.stat_result:
    """``path`` must be a real folder (not a link) owned by this user (or by one of the
    ``trusted`` users) that no one else can write to; one line naming the owner and the fix
    otherwise. ``st``: its status already read (from a descriptor, no-follow)."""
    if st is None:
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
    try:
        found = _walk(path)
    except JitterlabError as e:
        text = str(e).removeprefix(f"cannot write {path}: ")
        raise JitterlabError(f"{flag} {path}: {text}") from None
    try:
        if _special(found.st) or found.magic:
            return
        if not os.access(fd_path(found.dir_fd), os.W_OK):
            raise JitterlabError(f"{flag} {path}: not writable")
    finally:
        found.close()


# ---------------------------------------------------------------------------------------
# Reading inside a folder another user may control (a store, a run folder, a leftover):
# from an open descriptor of the folder, one plain name at a time, never through a link,
# never blocking on a FIFO, and what was opened checked with fstat (issue 42 items 3-6).


def plain_name(name: str) -> bool:
    """True for a name of one entry inside a folder: not empty, no ``/``, not ``.``/``..``,
    no NUL."""
    return bool(name) and "/" not in name and "\x00" not in name and name not in (".", "..")


def open_dir_fd(folder: Path | str, dir_fd: int | None = None, follow: bool = True) -> int:
    """A descriptor of the folder ``folder`` (``O_DIRECTORY``; with ``follow=False`` also
    ``O_NOFOLLOW``: a link there is refused by the kernel, ELOOP/ENOTDIR)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    return os.open(folder, flags, dir_fd=dir_fd)


def open_file_in(dir_fd: int, name: str, shown: Path | str, owners: set[int] | None = None) -> int:
    """A read-only descriptor of the regular file ``name`` in the folder ``dir_fd``
    (``O_NOFOLLOW|O_NONBLOCK``: a link, a FIFO, a device or a folder there is refused in
    one line naming ``shown``, and a FIFO never blocks the reader); with ``owners``, a file
    that belongs to anyone else is refused too."""
    if not plain_name(name):
        raise JitterlabError(f"{shown}: {name[:80]!r} is not a file name inside its folder")
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK):
            raise JitterlabError(f"{shown}: a link; not followed") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise JitterlabError(f"{shown}: not a regular file (a FIFO, a device or a folder); not read")
        if owners is not None and st.st_uid not in owners:
            raise JitterlabError(f"{shown}: belongs to {owner_name(st.st_uid)}; not read")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def fd_path(fd: int, name: str | None = None) -> Path:
    """A path that reaches the open descriptor ``fd`` itself (``/proc/self/fd/N``), or the
    entry ``name`` inside the folder it is: resolved by the kernel from the descriptor, so a
    rename or a link swapped in at the folder's old path changes nothing."""
    base = Path(f"/proc/self/fd/{fd}")
    return base / name if name is not None else base


@contextmanager
def open_plain_file(folder: Path, name: str) -> Iterator[BinaryIO]:
    """``folder/name`` opened for reading as a regular file reached without any link in
    ``name`` (:func:`open_file_in`): a run folder's samples or histogram file. A missing
    file is FileNotFoundError; anything else one line (:class:`JitterlabError`)."""
    shown = folder / name
    try:
        dir_fd = open_dir_fd(folder)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise JitterlabError(f"{folder}: {os_error_text(e)}") from None
    try:
        try:
            fd = open_file_in(dir_fd, name, shown)
        except FileNotFoundError:
            raise
        except OSError as e:
            raise JitterlabError(f"{shown}: {os_error_text(e)}") from None
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as f:
        yield f


def open_lock_file(path: Path, shown: Path | None = None) -> int:
    """``path`` (a lock file in ``.staging``) opened for writing, created 0600 when absent,
    never through a link and never blocking: a FIFO, a device or a folder planted at the
    name is refused in one line instead of hanging the opener (issue 42 item 6). ``shown``
    names it in messages when ``path`` reaches it through a descriptor (``/proc/self/fd/N/…``)."""
    shown = path if shown is None else shown
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, PRIVATE)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise JitterlabError(f"{shown}: a link; not followed (remove it)") from None
        if e.errno == errno.ENXIO:  # a FIFO no one reads
            raise JitterlabError(f"{shown}: a FIFO, not a lock file (remove it)") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise JitterlabError(
                f"{shown}: not a regular file (a FIFO or a device), not a lock file (remove it)"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd

"""The store's file-system primitives: a staging folder reached through the descriptor
opened when it was made (:func:`work_path`), locks released, a rename that never replaces
(renameat2 RENAME_NOREPLACE), and what lies at a run's file name (a plain file, or what
instead)."""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from contextlib import suppress
from pathlib import Path
from typing import Any

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import (
    fd_path,
    open_dir_fd,
    os_error_text,
)

# staging folders this process made: the path -> a descriptor of the folder opened right
# after ``mkdir`` (O_NOFOLLOW, fstat-checked as this user's). Writers reach the folder through
# it (:func:`work_path`): a ``.staging/ID`` renamed away and replaced by a link while a run is
# measured (the store's owner may do that in their ``.staging``) leads nowhere (issue 42 item 1)
_STAGING_FD: dict[str, int] = {}


_RENAME_NOREPLACE = 1  # linux/fs.h


_AT_FDCWD = -100


def _unlock(fd: int | None, at: tuple[int, str] | None = None) -> None:
    """Release a lock :meth:`ResultsStore._lock_name` took; with ``at`` (the descriptor of
    its folder and its name there), its file removed first, while still held (as
    :meth:`ResultsStore.staging_lock` does: a name this writer gives up leaves no lock file
    behind). Without, the file stays (another process may hold it by then; ``recover`` and
    :meth:`ResultsStore.staging_lock` remove it)."""
    if fd is not None:
        if at is not None:
            _unlink_held(at[0], at[1], fd)
        os.close(fd)


def _unlink_held(dir_fd: int, name: str, fd: int) -> None:
    """Remove the entry ``name`` of the folder ``dir_fd`` when it is still the file ``fd``
    is open on: ``unlinkat`` from the folder's descriptor, never by path, so a ``.staging``
    renamed away and replaced by a link meanwhile (its owner may) removes nothing elsewhere,
    and a name re-made by someone else is left alone."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        held = os.fstat(fd)
        if (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino):
            os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def work_path(staging: Path) -> Path:
    """The path that reaches the staging folder this process made as it was made
    (``/proc/self/fd/N`` of the descriptor opened right after ``mkdir``), whatever is at
    ``staging`` now; ``staging`` itself for a folder this process did not make."""
    fd = _STAGING_FD.get(str(staging))
    return fd_path(fd) if fd is not None else staging


def staging_fd(staging: Path) -> int | None:
    """The descriptor :func:`work_path` uses (for a child process that inherits it)."""
    return _STAGING_FD.get(str(staging))


def _hold_staging(directory: Path) -> None:
    """Open the folder just made (no link followed) and keep its descriptor; the folder
    must be this user's real folder."""
    fd = open_dir_fd(directory, follow=False)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or not stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise JitterlabError(f"{directory}: not the folder this process made (replaced); not used")
    old = _STAGING_FD.pop(str(directory), None)
    if old is not None:
        os.close(old)
    _STAGING_FD[str(directory)] = fd


def _release_staging_fd(staging: Path) -> None:
    fd = _STAGING_FD.pop(str(staging), None)
    if fd is not None:
        os.close(fd)


def _libc_renameat2() -> Any:
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a C library without it (glibc < 2.28, musl < 1.2.4)
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_renameat2 = _libc_renameat2()


def rename_no_replace(source: Path, target: Path) -> bool:
    """Rename the folder ``source`` to ``target`` only when nothing is at ``target``, in one
    step: True when renamed, False when ``target`` is taken (by any file or folder).

    ``os.replace`` replaces an empty folder and fails on a full one with an unhandled error;
    this is how a run claims its id in the store. ``renameat2(RENAME_NOREPLACE)`` where the
    kernel and file system have it; otherwise the name is claimed with ``mkdir`` (which fails
    when anything is there) and the folder renamed over that empty folder of ours."""
    if _renameat2 is not None:
        if _renameat2(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), _RENAME_NOREPLACE) == 0:
            return True
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            return False
        if err not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), str(target))
    try:
        os.mkdir(target, 0o700)
    except FileExistsError:
        return False
    try:
        os.rename(source, target)  # over the empty folder this process just made
    except BaseException:
        with suppress(OSError):
            os.rmdir(target)
        raise
    return True


def _plain_file_problem(path: Path) -> str:
    """Nothing ("") when ``path`` is a regular file (not a link), "missing" when nothing is there, else
    one line saying what is there instead."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "missing"
    except PermissionError:
        return ""  # named when it is read ("permission denied")
    except OSError as e:
        return f"{path}: {os_error_text(e)}"
    if stat.S_ISLNK(st.st_mode):
        return f"{path}: a link; a run's files are never read through a link"
    if not stat.S_ISREG(st.st_mode):
        return f"{path}: not a regular file (a FIFO, a device or a folder); not read"
    return ""


def _is_file(path: Path) -> bool:
    """A regular file there, or a name under a folder this user may not look into: then
    reading it names the problem (pathlib's ``is_file`` raises PermissionError)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except PermissionError:
        return True
    except (OSError, ValueError):
        return False

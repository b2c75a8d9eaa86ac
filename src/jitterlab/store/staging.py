"""The results store's staging side: where a run is made before it is published.

A run is written in a folder of the store's ``.staging/`` (made through its descriptor,
locked by an ``ID.lock`` held with ``flock`` while the writer lives), so a listed run is
always complete on disk and ``recover`` (store/recovery.py) never takes a live writer's
folder: ids and their candidates, the store's owner and who is trusted, the staging root,
claiming, releasing and discarding a staging folder, and listing the leftovers.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import (
    check_private_dir,
    fd_path,
    make_dir,
    open_dir_fd,
    open_lock_file,
    os_error_text,
    owner_name,
    private_dir,
)
from jitterlab.store.fsops import _hold_staging, _release_staging_fd, _unlock
from jitterlab.store.schema import safe_id_part

DEFAULT_STORE = "jitterlab-results"
STAGING = ".staging"
# staging folders this process claimed together with their lock (``staging_dir(lock=True)``):
# the folder's path -> the open descriptor of its flock()ed ``ID.lock``, held until the
# folder is published or discarded (or the process ends: the kernel drops the lock)
# (and the descriptor of the ``.staging`` folder it is in: the lock is removed from that)
_CLAIMED: dict[str, tuple[int, int]] = {}
PARTS_DIR = "parts"  # rolling sample parts of a long-running recorder (a monitor)
DRAFT_JSON = "run.draft.json"  # its run.json so far, for recover
# a net run's finished blocks (the agents' raw files) and the scratch files of their sort:
# a run killed before it was stored is recovered from its parts, and this folder dropped
BLOCKS_DIR = "blocks"
# what a harness writes beside its samples (run.json holds what they said): kept in staging
# for ``recover`` until run.json is written, removed before the folder is renamed into the
# store, so a kill in the instant after publish leaves none of them in the run (issue 42)
HARNESS_FILES = ("harness.json", "journal.bin")
MAX_ID_ATTEMPTS = 1_000  # names tried for one run before giving up (each try is one taken name)


def default_store_path() -> Path:
    return Path(os.environ.get("JITTERLAB_STORE", DEFAULT_STORE))


def _id_suffix() -> str:
    """The random part of a run id: 2 bytes (a test replaces it to force ids to collide)."""
    return os.urandom(2).hex()


def id_candidates(run_id: str) -> Iterator[str]:
    """``run_id``, then, when another writer holds that name, the same id with a new random
    part appended; from the fourth try on also the try's number, so that even a random part
    that keeps repeating (2 bytes: 1 in 65 536 for two writers in one second) ends in a free
    name after as many tries as there are writers holding names."""
    yield run_id
    for attempt in range(1, MAX_ID_ATTEMPTS):
        yield f"{run_id}-{_id_suffix()}" + (f"-{attempt}" if attempt >= 3 else "")
    raise JitterlabError(f"no free run id after {MAX_ID_ATTEMPTS} tries from {run_id!r}")


class StagingStore:
    """A store's root and its staging folders (the base of :class:`ResultsStore`)."""

    # Set by the CLI (unless ``--trust-store-owner``): root refuses to read or write a store
    # another user owns (issue 42). The library's default keeps the earlier rule (root trusts
    # the store's owner, :meth:`trusted_uids`).
    refuse_others_as_root: bool = False

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_store_path()
        # the name the command storing runs was given (``--name``): store.names.assign
        self.name: str | None = None

    def check_owner(self) -> None:
        """Root and a store another user owns: one line naming the owner and the option that
        accepts it (when :attr:`refuse_others_as_root`). That user may plant links, FIFOs
        and swapped folders in the store while root works there; running as that user, or
        saying ``--trust-store-owner``, is the administrator's choice."""
        if not self.refuse_others_as_root or os.geteuid() != 0:
            return
        try:
            st = os.stat(self.root)
        except OSError:
            return
        if st.st_uid != 0:
            raise JitterlabError(
                f"results store {self.root} belongs to {owner_name(st.st_uid)}: root does not use a store "
                "another user owns; run as that user, or pass --trust-store-owner to accept it"
            )

    def new_run_id(self, *parts: str) -> str:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        slug = "-".join(safe_id_part(p) for p in parts if p)
        return f"{stamp}-{slug}-{_id_suffix()}"

    def trusted_uids(self) -> set[int]:
        """Whose folders in this store are used: the invoking user's and the store owner's."""
        uids = {os.geteuid()}
        with suppress(OSError):
            uids.add(os.stat(self.root).st_uid)
        return uids

    def staging_root(self) -> Path:
        """``ROOT/.staging``, created 0700 (the store root too when missing, never
        world-writable); a store every user can write to, or a .staging folder that belongs
        to someone else or that others can write to, is refused in one line."""
        self.check_owner()
        try:
            make_dir(self.root)
        except JitterlabError as e:
            raise JitterlabError(f"cannot write to results store {self.root}: {e}") from None
        try:
            root = os.stat(self.root)
        except OSError as e:
            raise JitterlabError(f"results store {self.root}: {os_error_text(e)}") from None
        if root.st_mode & 0o002:
            raise JitterlabError(
                f"results store {self.root} is writable by every user (mode {root.st_mode & 0o7777:o}): "
                f"anyone could plant runs or drafts there; chmod o-w {self.root}"
            )
        staging = self.root / STAGING
        if not os.path.lexists(staging):
            private_dir(staging)
            self._hand_to_store_owner(staging, root)
            return staging
        st = os.lstat(staging)
        if st.st_uid == os.geteuid() and (st.st_mode & 0o7777) != 0o700 and os.path.isdir(staging):
            os.chmod(staging, 0o700, follow_symlinks=False)  # made by an earlier version
        if st.st_uid == os.geteuid() and os.path.isdir(staging):
            self._hand_to_store_owner(staging, root)  # one root made in another's store before
        check_private_dir(staging, self.trusted_uids())
        return staging

    @staticmethod
    def _hand_to_store_owner(staging: Path, root: os.stat_result) -> None:
        """Root measuring in a store another user owns gives ``.staging`` (0700) to that user:
        a root-owned one would lock the store's owner out of their own store for good (they
        could neither measure nor remove it). Root's own staging folders inside stay root's
        (0700), so the owner can neither read nor recover them, and root trusts the store's
        owner in any case (:meth:`trusted_uids`)."""
        if os.geteuid() != 0 or root.st_uid == 0:
            return
        with suppress(OSError):
            os.chown(staging, root.st_uid, root.st_gid, follow_symlinks=False)

    def staging_dir(self, run_id: str, lock: bool = False) -> Path:
        """A fresh folder (0700) for a harness to write into, named by the run's id; fails
        early with a clear message.

        The folder is claimed with ``mkdir`` (which fails when the name is taken): when
        another writer already holds ``run_id`` in staging or in the store (two writers that
        picked the same id in the same second), the next of :func:`id_candidates` is taken.
        **The run's id is the returned folder's name**, which callers use from then on.

        With ``lock``, the folder's lock (``ID.lock``, see :meth:`staging_lock`) is taken
        *before* the folder is made and held until the folder is published or discarded:
        ``recover`` never sees the folder without its live lock, so it never removes a
        writer's folder that is still empty (issue 24: the lock came after the claim)."""
        root = self.staging_root()
        try:
            root_fd = open_dir_fd(root, follow=False)  # the lock is made and removed from it
        except OSError as e:
            raise JitterlabError(f"cannot write to results store {self.root}: {os_error_text(e)}") from e
        kept = False
        try:
            for candidate in id_candidates(run_id):
                directory = root / candidate
                held = self._lock_name(root_fd, root, candidate) if lock else None
                if lock and held is None:
                    continue  # another live writer holds this id
                lock_at = (root_fd, f"{candidate}.lock")
                try:
                    os.mkdir(directory, 0o700)
                except FileExistsError:
                    _unlock(held, lock_at)
                    continue
                except OSError as e:
                    _unlock(held, lock_at)
                    raise JitterlabError(
                        f"cannot write to results store {self.root}: {os_error_text(e)}"
                    ) from e
                if os.path.lexists(self.root / candidate):  # published already: the store's name is taken
                    os.rmdir(directory)
                    _unlock(held, lock_at)
                    continue
                try:
                    _hold_staging(directory)
                except OSError as e:
                    _unlock(held, lock_at)
                    raise JitterlabError(
                        f"cannot write to results store {self.root}: {os_error_text(e)}"
                    ) from e
                if held is not None:
                    _CLAIMED[str(directory)] = (held, root_fd)
                    kept = True
                break
        finally:
            if not kept:
                os.close(root_fd)
        try:
            probe = os.open(
                directory / ".write-test", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600
            )
            os.close(probe)
            os.unlink(directory / ".write-test")
        except OSError as e:
            self.discard_if_empty(directory)
            raise JitterlabError(f"cannot write to results store {self.root}: {os_error_text(e)}") from e
        return directory

    def _lock_name(self, root_fd: int, root: Path, name: str) -> int | None:
        """``NAME.lock`` in the folder ``root_fd`` (``root``) opened (never through a link)
        and locked; None when another live process holds it."""
        try:
            fd = open_lock_file(fd_path(root_fd, f"{name}.lock"), root / f"{name}.lock")
        except OSError as e:
            raise JitterlabError(f"cannot write to results store {self.root}: {os_error_text(e)}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def release_staging(staging: Path) -> None:
        """The lock taken with ``staging_dir(lock=True)`` removed and released (the folder is
        published, discarded, or left to ``recover``); nothing for a folder claimed without."""
        _release_staging_fd(staging)
        claimed = _CLAIMED.pop(str(staging), None)
        if claimed is not None:
            fd, root_fd = claimed
            try:
                _unlock(fd, (root_fd, f"{staging.name}.lock"))
            finally:
                os.close(root_fd)

    @staticmethod
    def discard_if_empty(staging: Path) -> None:
        """Remove a staging folder in which nothing was recorded (a measurement that failed
        before its first sample); one that holds anything is kept for ``recover`` (its lock,
        if this process holds it, is released either way)."""
        with suppress(OSError):
            os.rmdir(staging)
        StagingStore.release_staging(staging)

    @contextmanager
    def staging_lock(self, run_id: str) -> Iterator[None]:
        """Held while a run is measured and stored: :meth:`leftovers` never offers a staging
        folder whose writer is still alive (the kernel drops the lock when it dies)."""
        folder = self.staging_root() / run_id
        if str(folder) in _CLAIMED:  # taken with the folder (staging_dir(lock=True)): held already
            try:
                yield
            finally:
                self.release_staging(folder)
            return
        root = self.staging_root()
        path = root / f"{run_id}.lock"
        try:
            root_fd = open_dir_fd(root, follow=False)  # the lock is made and removed from it
        except OSError as e:
            raise JitterlabError(f"cannot write to results store {self.root}: {os_error_text(e)}") from e
        try:
            try:
                fd = open_lock_file(fd_path(root_fd, path.name), path)
            except OSError as e:
                raise JitterlabError(f"cannot write to results store {self.root}: {os_error_text(e)}") from e
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            try:
                yield
            finally:
                _unlock(fd, (root_fd, path.name))
        finally:
            os.close(root_fd)

    def leftovers(self, refused: list[tuple[Path, str]] | None = None) -> list[Path]:
        """Staging folders left by a measuring process that was killed (no live writer).
        Only folders of the invoking user or the store owner that no one else can write to
        are offered; the others go to ``refused`` with the reason.

        ``.staging`` is opened once, without following a link, and everything in it is
        looked at from that descriptor: a ``.staging`` this user may not enter (another
        user's 0700 folder) has no leftovers of theirs (issue 42 item 7), and a lock file
        that is a FIFO, a device or a link is refused without being waited on (item 6)."""
        self.check_owner()
        staging = self.root / STAGING
        try:
            staging_fd = open_dir_fd(staging, follow=False)
        except PermissionError:
            return []  # another user's staging folder: nothing in it is this user's to recover
        except OSError:
            return []  # absent, a link, not a folder
        try:
            trusted = self.trusted_uids()
            out = []
            for name in sorted(os.listdir(staging_fd)):
                try:
                    st = os.stat(name, dir_fd=staging_fd, follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    continue
                directory = staging / name
                try:
                    check_private_dir(directory, trusted, st)
                except JitterlabError as e:
                    if refused is not None:
                        refused.append((directory, str(e)))
                    continue
                live = self._held_by_a_writer(staging_fd, f"{name}.lock", staging / f"{name}.lock")
                if isinstance(live, str):
                    if refused is not None:
                        refused.append((directory, live))
                    continue
                if not live:
                    out.append(directory)
            return out
        finally:
            os.close(staging_fd)

    @staticmethod
    def _held_by_a_writer(staging_fd: int, name: str, shown: Path) -> bool | str:
        """Whether the lock file ``name`` of ``.staging`` is held by a live writer; a reason
        (str) when it is not a regular file (a FIFO is never opened to wait on a writer)."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=staging_fd)
        except FileNotFoundError:
            return False
        except OSError as e:
            return f"{shown}: {os_error_text(e)}" + (
                "; a link, not followed" if e.errno == errno.ELOOP else ""
            )
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return f"{shown}: not a regular file (a FIFO or a device); left in place"
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True  # still being written
            return False
        finally:
            os.close(fd)

    def ensure_writable(self) -> None:
        """Fail before any work when runs could not be stored."""
        self.discard_staging(self.staging_dir(self.new_run_id("write-check")))

    def discard_staging(self, staging: Path) -> None:
        shutil.rmtree(staging, ignore_errors=True)
        self.release_staging(staging)

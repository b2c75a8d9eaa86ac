"""The results store's listing side: the published runs, found, resolved and loaded."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from jitterlab.store.runs import ResultsStore

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import os_error_text
from jitterlab.store import names
from jitterlab.store.fsops import _is_file
from jitterlab.store.run import Run, read_run_json
from jitterlab.store.schema import RUN_JSON
from jitterlab.store.staging import StagingStore


class ListingStore(StagingStore):
    """Listing the store's runs (part of :class:`ResultsStore`)."""

    def run_dirs(self) -> list[Path]:
        """Every folder of the store that holds a run.json, or whose run.json this user may
        not even look at (another user's private folder: listed, then named damaged as
        unreadable). Dot-folders (``.staging``) are never runs."""
        self.check_owner()
        try:
            entries = list(os.scandir(self.root))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as e:
            raise JitterlabError(f"results store {self.root}: {os_error_text(e)}") from None
        out = []
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=True):
                continue
            try:
                if stat.S_ISREG(os.stat(Path(entry.path) / RUN_JSON).st_mode):
                    out.append(Path(entry.path))
            except PermissionError:
                out.append(Path(entry.path))
            except OSError:
                continue
        return sorted(out)

    def runs(self) -> list[Run]:
        """Every readable run, oldest first; damaged ones are left out (:meth:`scan` names them)."""
        return self.scan()[0]

    def scan(self) -> tuple[list[Run], list[tuple[Path, str]]]:
        """(readable runs oldest first, damaged runs with the reason): a run.json that
        cannot be read, or a data file that is missing or not the size run.json recorded
        (a cheap check: contents are verified when the samples are read)."""
        runs, damaged = [], []
        for directory in self.run_dirs():
            try:
                run = Run(directory, read_run_json(directory))
            except JitterlabError as e:
                damaged.append((directory, str(e)))
                continue
            problem = run.file_problem()
            if problem:
                damaged.append((directory, problem))
            else:
                runs.append(run)
        return sorted(runs, key=lambda r: (str(r.meta.get("created_utc", "")), r.id)), damaged

    def resolve(self, ref: str) -> Path:
        """A run folder from a path, an id, a name, or a unique id prefix or substring
        (:func:`jitterlab.store.names.resolve_reference`)."""
        self.check_owner()
        candidate = Path(ref)
        if _is_file(candidate / RUN_JSON):
            return candidate
        if candidate.name == RUN_JSON and _is_file(candidate):
            return candidate.parent
        direct = self.root / ref
        if _is_file(direct / RUN_JSON):
            return direct
        return names.resolve_reference(cast("ResultsStore", self), ref, self.run_dirs())  # only ever one

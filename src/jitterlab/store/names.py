"""Human names for runs (issue 43 items 1–2): ``--name NAME`` on every command that stores a
run, ``jitterlab rename RUN NAME``, and the one way a ``RUN`` argument is looked up.

A name lives in run.json's top-level ``name`` field; the id never changes, so a renamed run
keeps every reference made to its id. Names are unique in a store: a name already taken is
refused in one line before any work (:func:`check_free`). A ``RUN`` resolves, in this order,
to a run folder (or its run.json), an exact id, an exact name, a unique id prefix, then a
unique substring of an id; several matches list the candidates, none suggests the closest
ids and names (:func:`resolve_reference`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitterlab.core.errors import JitterlabError

if TYPE_CHECKING:
    from jitterlab.store.runs import ResultsStore

NAME_RULE = "letters, digits, '.', '_' or '-', starting with a letter or digit, at most 48 characters"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,47}")
MAX_LISTED = 6  # candidates named in an ambiguity error


def valid_name(name: object) -> bool:
    """Whether ``name`` may name a run (one word: see :data:`NAME_RULE`)."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None and ".." not in name


def check_name(name: str, option: str = "--name") -> str:
    """``name`` if it may name a run, else a one-line error naming ``option``."""
    if not valid_name(name):
        raise JitterlabError(f"{option} {name[:60]!r}: give a name of {NAME_RULE}")
    return name


def named_runs(store: ResultsStore) -> dict[str, Path]:
    """Every run's name in ``store`` -> its folder (runs without a name left out)."""
    from jitterlab.store.runs import read_run_json

    out: dict[str, Path] = {}
    for directory in store.run_dirs():
        try:
            name = read_run_json(directory).get("name")
        except JitterlabError:
            continue
        if isinstance(name, str) and name:
            out.setdefault(name, directory)
    return out


def check_free(store: ResultsStore, name: str, option: str = "--name", keep: Path | None = None) -> None:
    """Refuse, in one line, a name that another run of ``store`` already has (``keep``: the
    run being renamed, which may keep its own name)."""
    check_name(name, option)
    taken = named_runs(store).get(name)
    if taken is not None and (keep is None or taken.name != keep.name):
        raise JitterlabError(
            f"{option} {name!r}: run {taken.name} already has that name "
            "(choose another, or 'jitterlab rename' that run)"
        )
    if (store.root / name).exists():
        raise JitterlabError(f"{option} {name!r}: that is the id of a stored run: choose another name")


def claim(store: ResultsStore, name: str | None, option: str = "--name") -> ResultsStore:
    """``store``, with the name a command storing runs was given (``--name``) checked free
    and kept for :func:`assign`."""
    if name is not None:
        check_free(store, name, option)
        store.name = name
    return store


def assign(store: ResultsStore, meta: dict[str, Any]) -> None:
    """Give a run about to be published the name the command was asked for (``store.name``):
    the first run of the command gets it as given, every later one (a command that stores
    several runs) or one whose name was taken meanwhile the next free ``NAME-2``, ``NAME-3`` …"""
    if not store.name:
        return
    taken = named_runs(store)
    name, n = store.name, 1
    while name in taken:
        n += 1
        name = f"{store.name}-{n}"
    meta["name"] = name


def resolve_reference(store: ResultsStore, ref: str, dirs: list[Path]) -> Path:
    """The run folder ``ref`` names among ``dirs`` (the store's runs) after a path or exact
    id failed: an exact name, a unique id prefix, a unique id substring."""
    named = named_runs(store)
    if ref in named:
        return named[ref]
    for matches in ([d for d in dirs if d.name.startswith(ref)], [d for d in dirs if ref in d.name]):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            shown = ", ".join(_described(d, named) for d in matches[:MAX_LISTED])
            more = f" and {len(matches) - MAX_LISTED} more" if len(matches) > MAX_LISTED else ""
            raise JitterlabError(
                f"'{ref}' matches {len(matches)} runs: {shown}{more}; give more of the id, or a name"
            )
    close = _closest(ref, [d.name for d in dirs], named)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise JitterlabError(f"no run '{ref}' (not a run folder, nor a name or an id in {store.root}){hint}")


def _described(directory: Path, named: dict[str, Path]) -> str:
    names = [n for n, d in named.items() if d == directory]
    return f"{directory.name} ({names[0]})" if names else directory.name


def _closest(ref: str, ids: Iterable[str], named: dict[str, Path]) -> list[str]:
    """Up to two names or ids closest to ``ref`` (names first: they are what people type)."""
    names = difflib.get_close_matches(ref, list(named), n=2, cutoff=0.6)
    if names:
        return names
    ids = list(ids)
    # an id is a time stamp and words (technique, pairs, policy, a file's name): a word close
    # to ref is what to type (a unique part of an id resolves)
    words = {w for i in ids for w in i.split("-")[2:] if not w.isdigit()}
    return difflib.get_close_matches(ref, sorted(words), n=2, cutoff=0.6) or difflib.get_close_matches(
        ref, ids, n=2, cutoff=0.6
    )

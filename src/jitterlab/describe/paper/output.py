"""Writing the paper's folder: checked before any work, refused in one line when it is
not jitterlab's; a folder written before (it holds the marker) is replaced file by file."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import atomic_write_bytes
from jitterlab.describe.paper import facts, layouts, tables
from jitterlab.describe.paper.build import PaperData
from jitterlab.describe.paper.figures import write_figures

MARKER = ".jitterlab-paper"


def check_output(folder: Path) -> None:
    """Refuse (one line) a folder that exists and is not one ``paper`` wrote, a file, a
    link, or a place this user cannot write or reach; nothing is written here."""
    try:
        _check_output(folder)
    except OSError as e:
        raise JitterlabError(f"-o {folder}: cannot reach it: {e.strerror or e}") from e


def _check_output(folder: Path) -> None:
    if folder.is_symlink():
        raise JitterlabError(f"-o {folder}: is a symbolic link; name a folder")
    if folder.exists():
        if not folder.is_dir():
            raise JitterlabError(f"-o {folder}: exists and is not a folder")
        if any(folder.iterdir()) and not (folder / MARKER).is_file():
            raise JitterlabError(
                f"-o {folder}: exists and was not written by 'jitterlab paper' (no {MARKER} in it); "
                "name a new or empty folder"
            )
        if not os.access(folder, os.W_OK | os.X_OK):
            raise JitterlabError(f"-o {folder}: not writable by this user")
        return
    parent = folder.parent if str(folder.parent) else Path(".")
    if not parent.is_dir():
        raise JitterlabError(f"-o {folder}: its parent folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise JitterlabError(f"-o {folder}: cannot create it ({parent} is not writable by this user)")


def _remove_previous(folder: Path) -> None:
    """The files a previous ``paper`` listed in its marker, removed (nothing else)."""
    marker = folder / MARKER
    if not marker.is_file():
        return
    for line in marker.read_text().splitlines():
        name = line.strip()
        if not name or name.startswith("#") or ".." in Path(name).parts or Path(name).is_absolute():
            continue
        path = folder / name
        if path.is_file() and not path.is_symlink():
            path.unlink()


def write_paper(
    data: PaperData, folder: Path, command: str, progress: Callable[[str], None] | None = None
) -> tuple[list[Path], list[str]]:
    """Write everything into ``folder``; returns the files written and the lines saying
    what was left out (also in ``paper.md``)."""
    check_output(folder)
    try:
        folder.mkdir(exist_ok=True)
        _remove_previous(folder)
        # the marker first: a paper stopped half-way leaves a folder a rerun may replace
        atomic_write_bytes(folder / MARKER, b"# written by jitterlab paper (unfinished)\n")
        written: list[Path] = []

        def put(name: str, text: str) -> None:
            path = folder / name
            path.parent.mkdir(exist_ok=True)
            atomic_write_bytes(path, text.encode())
            written.append(path)

        made = layouts.all_tables(data)
        for t in made:
            put(f"tables/{t.name}.tex", tables.latex(t))
            put(f"tables/{t.name}.md", tables.markdown(t))
            put(f"tables/{t.name}.csv", tables.csv_text(t))
        figures, skipped = write_figures(data, folder / "figures", progress)
        written += figures
        put("methods.md", facts.methods(data, tex=False))
        put("methods.tex", facts.methods(data, tex=True))
        put("checklist.md", facts.checklist_md(data))
        put("runs.csv", facts.runs_csv(data))
        put("references.bib", facts.references_bib())
        notes = [*data.left_out, *skipped]
        if len({r.group for r in data.runs}) > 1:
            notes.insert(
                0,
                "runs of different kinds or units are in separate tables: " + ", ".join(t.name for t in made),
            )
        put("paper.md", _index(made, written, notes, command, folder))
        names = sorted(str(p.relative_to(folder)) for p in written)
        atomic_write_bytes(
            folder / MARKER, ("# written by jitterlab paper\n" + "\n".join(names) + "\n").encode()
        )
    except OSError as e:
        raise JitterlabError(f"cannot write {folder}: {e.strerror or e}") from e
    return written, notes


def _index(
    made: Sequence[tables.Table], written: Sequence[Path], notes: Sequence[str], command: str, folder: Path
) -> str:
    lines = ["# jitterlab paper", "", f"Made by: `{command}`", "", "## Tables", ""]
    lines += [f"- `tables/{t.name}.tex|md|csv`: {t.caption}" for t in made]
    lines += ["", "## Figures", ""]
    lines += [f"- `{p.relative_to(folder)}`" for p in written if p.suffix == ".pdf"]
    if notes:
        lines += ["", "## Left out", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"

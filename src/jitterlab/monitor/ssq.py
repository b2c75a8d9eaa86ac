"""``ssq score``: a CSV of SSQ answers scored, pre/post and per group, laid out like seed 003
§7.1 Table 2, optionally beside the latency each participant's trial actually had.

The CSV has one row per participant (and per phase with ``--pre-post``: a ``phase`` column
holding ``pre`` or ``post``), a ``participant`` column, and one column per item, named as
in :data:`jitterlab.stats.ssq.ITEMS` (``general_discomfort`` …) or ``q1`` … ``q16`` in the
questionnaire's order. Every value must be an integer 0–3: a blank or another value is an
error naming the row and column, never a silent 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jitterlab.core.csvtext import read_csv_text
from jitterlab.core.errors import JitterlabError
from jitterlab.stats.ssq import ITEMS, SCALES, score

ITEM_NAMES = [name for name, _ in ITEMS]
ALIASES = {f"q{i + 1}": name for i, name in enumerate(ITEM_NAMES)}
META_COLUMNS = {"participant", "phase"}


@dataclass(frozen=True)
class Scored:
    """One row per participant: scores per scale (pre, post, delta when paired)."""

    table: pd.DataFrame  # participant, group, trial, <scale>_pre/_post/_delta or <scale>
    paired: bool
    excluded: list[str]


def read(
    path: Path, group: str | None, trial_column: str | None, pre_post: bool, ignore: Sequence[str] = ()
) -> pd.DataFrame:
    frame = read_csv_text(path)
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    dropped = {c.strip().lower() for c in ignore}
    absent = sorted(dropped - set(frame.columns))
    if absent:
        raise JitterlabError(f"{path}: --ignore-column {absent[0]}: no such column")
    frame = frame[[c for c in frame.columns if c not in dropped]]
    if group and group == trial_column:
        raise JitterlabError(f"--group and --trial-column both name column '{group}': name two columns")
    frame = frame.rename(columns=ALIASES)
    twice = frame.columns[frame.columns.duplicated()]
    if len(twice):  # 'q1' and 'general_discomfort' are one item
        raise JitterlabError(f"{path}: item '{twice[0]}' is given twice (as qN and by its name)")
    known = set(ITEM_NAMES) | META_COLUMNS | {c for c in (group, trial_column) if c}
    unknown = [c for c in frame.columns if c not in known]
    if unknown:
        raise JitterlabError(
            f"{path}: unknown column '{unknown[0]}' (items are {', '.join(ITEM_NAMES[:3])}, … or q1…q16; "
            "name extra columns with --group or --trial-column, or leave them out with --ignore-column)"
        )
    missing = [c for c in ["participant", *ITEM_NAMES] if c not in frame.columns]
    if pre_post and "phase" not in frame.columns:
        missing.append("phase")
    for column in (group, trial_column):
        if column and column.lower() not in frame.columns:
            missing.append(column)
    if missing:
        raise JitterlabError(f"{path}: missing column '{missing[0]}'")
    if frame.empty:
        raise JitterlabError(f"{path}: a header and no rows")
    for column in ITEM_NAMES:
        values = frame[column].str.strip()
        bad = ~values.isin(["0", "1", "2", "3"])
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise JitterlabError(
                f"{path}: row {row + 2}, column {column}: '{frame[column].iloc[row]}' is not an SSQ rating "
                "(an integer 0–3)"
            )
    if pre_post:
        phases = frame["phase"].str.strip().str.lower()
        bad = ~phases.isin(["pre", "post"])
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise JitterlabError(
                f"{path}: row {row + 2}, column phase: '{frame['phase'].iloc[row]}' is not pre or post"
            )
        frame["phase"] = phases
    return frame


def score_file(
    path: Path,
    pre_post: bool = False,
    group: str | None = None,
    trial_column: str | None = None,
    exclude_pre_above: float | None = None,
    ignore: Sequence[str] = (),
) -> Scored:
    group = group.lower() if group else None
    trial_column = trial_column.lower() if trial_column else None
    frame = read(path, group, trial_column, pre_post, ignore)
    scores = score(frame[ITEM_NAMES].astype(int).to_numpy())
    for scale in SCALES:
        frame[scale] = scores[scale]
    keep = ["participant", *(c for c in (group, trial_column) if c)]
    if not pre_post:
        duplicated = frame["participant"].duplicated()
        if duplicated.any():
            who = frame["participant"][duplicated].iloc[0]
            raise JitterlabError(f"{path}: participant '{who}' answers twice (pre and post? use --pre-post)")
        return Scored(frame[keep + list(SCALES)].reset_index(drop=True), False, [])
    pre = frame[frame["phase"] == "pre"].set_index("participant")
    post = frame[frame["phase"] == "post"].set_index("participant")
    for name, part in (("pre", pre), ("post", post)):
        if part.index.duplicated().any():
            raise JitterlabError(
                f"{path}: participant '{part.index[part.index.duplicated()][0]}' has two {name} rows"
            )
    lonely = [p for p in post.index if p not in pre.index]
    if lonely:
        raise JitterlabError(f"{path}: participant '{lonely[0]}' has a post questionnaire without a pre")
    rows = []
    excluded = []
    for participant in pre.index:
        if exclude_pre_above is not None and pre.loc[participant, "total"] > exclude_pre_above:
            excluded.append(str(participant))
            continue
        if participant not in post.index:
            continue  # pre only: nothing to compare
        row: dict[str, Any] = {"participant": participant}
        for column in keep[1:]:
            row[column] = post.loc[participant, column]
        for scale in SCALES:
            row[f"{scale}_pre"] = float(pre.loc[participant, scale])
            row[f"{scale}_post"] = float(post.loc[participant, scale])
            row[f"{scale}_delta"] = row[f"{scale}_post"] - row[f"{scale}_pre"]
        rows.append(row)
    if not rows:
        why = f"all {len(excluded)} were left out by --exclude-pre-above" if excluded else "none has both"
        raise JitterlabError(f"{path}: no participant with a pre and a post questionnaire ({why})")
    return Scored(pd.DataFrame(rows), True, excluded)


LABELS = {"total": "SSQ", "nausea": "SSQ N", "oculomotor": "SSQ O", "disorientation": "SSQ D"}


def group_figures(scored: Scored, group: str | None) -> list[dict[str, Any]]:
    """M and SD per scale and group as numbers (``sd`` None for a group of one): ``ssq score --json``.

    Keys: ``scale``, ``label``, ``group``, ``n``, then ``mean``/``sd`` or, paired,
    ``pre_mean``, ``pre_sd``, ``post_mean``, ``post_sd``, ``delta_mean``, ``delta_sd`` (SSQ points).
    """
    table = scored.table
    groups = [(None, table)] if not group else [(g, t) for g, t in table.groupby(group.lower(), sort=True)]
    parts = ("pre", "post", "delta") if scored.paired else ("",)
    figures = []
    for scale in SCALES:
        for name, frame in groups:
            row: dict[str, Any] = {
                "scale": scale,
                "label": LABELS[scale],
                "group": "all" if name is None else str(name),
                "n": len(frame),
            }
            for part in parts:
                values = frame[f"{scale}_{part}" if part else scale].to_numpy(dtype=float)
                prefix = f"{part}_" if part else ""
                row[f"{prefix}mean"] = float(values.mean())
                row[f"{prefix}sd"] = float(values.std(ddof=1)) if len(values) > 1 else None
            figures.append(row)
    return figures


def group_table(scored: Scored, group: str | None) -> tuple[list[str], list[list[str]]]:
    """Rows of M (SD) per scale and group, laid out like seed 003 §7.1 Table 2."""
    parts = ("pre", "post", "delta") if scored.paired else ("",)
    headers = ["scale", "group", "n"]
    for part in parts:
        headers += [f"{part} M".strip(), f"{part} SD".strip()]
    rows = []
    for figure in group_figures(scored, group):
        row = [figure["label"], figure["group"], str(figure["n"])]
        for part in parts:
            prefix = f"{part}_" if part else ""
            sd = figure[f"{prefix}sd"]
            row += [f"{figure[f'{prefix}mean']:.2f}", "n/a" if sd is None else f"{sd:.2f}"]
        rows.append(row)
    return headers, rows


def participant_table(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """One row per participant: who they are, their total score(s) and, when joined, their
    trial's latency (the subscales stay in the group table and the JSON)."""
    scale_columns = {f"{scale}{part}" for scale in SCALES for part in ("", "_pre", "_post", "_delta")}
    shown = [str(c) for c in table.columns if c not in scale_columns or str(c).startswith("total")]
    return shown, [[_cell(v) for v in row] for row in table[shown].itertuples(index=False)]


def _cell(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)

"""Reading a CSV that people wrote by hand or a rig logged: every cell as text, so that each
reader checks its own columns and names the row and column of a bad value."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from jitterlab.core.errors import JitterlabError


def read_csv_text(path: Path) -> pd.DataFrame:
    """The CSV with every cell as a string (blank cells as ''), or one line saying why not."""
    if not path.is_file():
        raise JitterlabError(f"{path}: no such file")
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise JitterlabError(f"{path}: not a readable CSV ({str(e).splitlines()[0]})") from e

"""The notebook API (issue 43 item 5): docs/python.md runs as written, and what it shows is
what the command line prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import jitterlab
from conftest import run_main

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.fixture
def walked(tmp_path: Path) -> dict[str, Any]:
    """docs/python.md executed block by block in an empty folder."""
    namespace: dict[str, Any] = {}
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        for code in blocks():
            exec(compile(code, str(DOC), "exec"), namespace)
    finally:
        os.chdir(here)
    namespace["__store__"] = tmp_path / "results"
    return namespace


def test_the_walk_through_runs_and_shows_what_the_cli_prints(
    walked: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    store = walked["__store__"]
    runs = walked["runs"]
    assert list(runs["name"]) == ["before", "after"]
    assert list(runs.columns[:3]) == ["id", "name", "label"]
    code, out, _ = run_main(["runs", "--json", "--store", str(store)], capsys)
    assert code == 0 and list(runs["id"]) == [r["id"] for r in __import__("json").loads(out)]
    tails = walked["tails"]
    assert tails["samples"].to_list() == [5_000, 5_000]
    code, out, _ = run_main(["describe", "before", "--store", str(store)], capsys)
    assert code == 0 and str(walked["description"]) + "\n" == out
    code, out, _ = run_main(["compare", "before", "after", "--store", str(store)], capsys)
    assert code == 0 and str(walked["comparison"]) + "\n" == out
    assert walked["comparison"].verdict in out
    assert len(walked["comparison"].to_pandas()) > 0
    assert len(repr(walked["before"])) < 200


def test_dir_lists_the_public_names_and_import_stays_light() -> None:
    assert {"open_store", "compare", "Store", "Run", "load_run"} <= set(dir(jitterlab))
    assert "TYPE_CHECKING" not in dir(jitterlab) and "Any" not in dir(jitterlab)
    code = "import sys, jitterlab\nprint(','.join(m for m in ('numpy', 'pandas', 'pyarrow', 'polars') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_the_objects_wrap_the_typed_description_and_comparison(
    walked: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """``Run.describe()`` and ``jitterlab.compare`` are ``describe``'s and ``compare``'s typed
    results (issue 37 item 4): their ``to_dict()`` is the command's ``--json``, to the byte."""
    import json

    from jitterlab.core.tidy import tidy_json
    from jitterlab.describe.compare import ComparedRuns
    from jitterlab.describe.description import SampleDescription

    store = walked["__store__"]
    description, comparison = walked["description"], walked["comparison"]
    assert isinstance(description.described, SampleDescription)
    assert isinstance(comparison.compared, ComparedRuns)
    code, out, _ = run_main(["describe", "before", "--json", "--store", str(store)], capsys)
    assert code == 0 and out == json.dumps(tidy_json(description.to_dict()), indent=2) + "\n"
    code, out, _ = run_main(["compare", "before", "after", "--json", "--store", str(store)], capsys)
    assert code == 0 and out == json.dumps(tidy_json(comparison.to_dict()), indent=2) + "\n"

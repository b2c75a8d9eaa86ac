"""Every documented --json output validates against its schema in docs/schemas/ (issue 28
item 4), checked on real output of the real command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from conftest import run_main

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"


def schema(name: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def test_runs_json_matches_its_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    csv = tmp_path / "latencies.csv"
    csv.write_text("latency_ns\n" + "".join(f"{1000 + 7 * i}\n" for i in range(100)))
    for _ in range(2):
        subprocess.run(
            [sys.executable, "-m", "jitterlab", "import", str(csv), "--store", str(store)], check=True
        )
    damaged = sorted(d for d in store.iterdir() if not d.name.startswith("."))[1]
    (damaged / "run.json").write_text("{not json")
    code, out, _ = run_main(["runs", "--store", str(store), "--json"], capsys)
    rows = json.loads(out)
    jsonschema.validate(rows, schema("runs"))
    assert code == 0 and [r["status"] for r in rows] == ["complete", "damaged"]
    assert rows[0]["count"] == 100 and rows[0]["max_ns"] == 1000 + 7 * 99
    code, out, _ = run_main(["runs", "--store", str(store), "--json", "--percentiles", "50,99.9"], capsys)
    rows = json.loads(out)
    jsonschema.validate(rows, schema("runs"))
    assert set(rows[0]["percentiles_ns"]) == {"p50", "p99.9"}
    # a row that breaks the documented shape is refused: the schema can fail
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([rows[0] | {"count": "100"}], schema("runs"))

"""run.json's ``summary.intervals``: the summary's levels with their intervals, computed at
publish from the samples file, so that ``show`` answers from run.json again (issue 38: the
intervals had made ``show`` read every sample); every figure equal to the computed one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import make_run, run_main
from jitterlab.describe.analysis import run_intervals
from jitterlab.store import ResultsStore
from jitterlab.store.writer import INTERVALS_METHOD, STORED_LEVELS, stored_intervals


def _bursty(seed: int, n: int) -> np.ndarray:
    """Log-normal latencies near 20 µs with spikes that come in bursts (the block method's case)."""
    rng = np.random.default_rng(seed)
    x = rng.lognormal(np.log(20_000), 0.3, n)
    for start in rng.choice(max(n - 50, 1), min(40, max(n - 50, 1)), replace=False):
        x[start : start + 50] *= 20
    return np.round(x).astype(np.int64)


@pytest.mark.parametrize("n", [15, 50_000])
def test_published_intervals_equal_those_computed_from_the_samples(tmp_path: Path, n: int) -> None:
    run = make_run(tmp_path, _bursty(38, n))
    block = run.meta["summary"]["intervals"]
    assert block["method"] == INTERVALS_METHOD
    assert [q["level"] for q in block["levels"]] == list(STORED_LEVELS)
    reread = ResultsStore(tmp_path).runs()[0]
    computed = run_intervals(reread, STORED_LEVELS, stored=False)
    assert [q.to_dict() for q in computed] == block["levels"]  # every figure, exactly
    kept = stored_intervals(reread.meta, (99.9, 50.0))
    assert kept is not None and [q.level for q in kept] == [99.9, 50.0]
    if n == 50_000:  # the bursts are seen: the block method, stored with its blocks
        assert any(q["method"] == "block" and q["blocks"] for q in block["levels"])


def test_show_answers_from_run_json_without_reading_the_samples_for_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make_run(tmp_path, _bursty(39, 20_000))
    code, before, _ = run_main(["show", run.id, "--json", "--store", str(tmp_path)], capsys)
    assert code == 0

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("show read the samples for its intervals")

    monkeypatch.setattr("jitterlab.describe.analysis.intervals_of_scan", refuse)
    code, after, err = run_main(["show", run.id, "--json", "--store", str(tmp_path)], capsys)
    assert code == 0, err
    assert json.loads(after)["percentiles"] == json.loads(before)["percentiles"]
    # a level run.json does not hold, or --recompute, reads the samples again
    code, _, err = run_main(["show", run.id, "--percentiles", "97", "--store", str(tmp_path)], capsys)
    assert code != 0 and "show read the samples" in err
    monkeypatch.undo()
    code, out, _ = run_main(["show", run.id, "--json", "--recompute", "--store", str(tmp_path)], capsys)
    assert code == 0 and json.loads(out)["percentiles"] == json.loads(before)["percentiles"]


def test_a_run_stored_before_has_no_intervals_and_is_computed(tmp_path: Path) -> None:
    run = make_run(tmp_path, _bursty(40, 5_000))
    meta = json.loads((run.path / "run.json").read_text())
    del meta["summary"]["intervals"]
    assert stored_intervals(meta, (50.0,)) is None
    meta["summary"]["intervals"] = {"method": "quantile-ci/0", "levels": []}
    assert stored_intervals(meta, (50.0,)) is None

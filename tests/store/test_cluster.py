"""--cluster (issue 25 item 5): the summary computed on a real local Dask cluster of 2 worker
processes equals the single-process one, number for number; a missing extra, an address
that does not answer, and a worker that dies are one line and exit 2."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_one_line_error, latency_clusters, make_run, run_main
from jitterlab.store.merge import merge
from jitterlab.store.runs import ResultsStore, verified_samples_path
from jitterlab.store.writer import summarize_file

pytest.importorskip("distributed", reason="the cluster extra (scripts/setup.sh installs it)")


@pytest.fixture(scope="module")
def client():
    from jitterlab.store.cluster import connect

    with connect("local:2") as c:
        assert len(c.scheduler_info()["workers"]) == 2
        yield c


@pytest.mark.slow
def test_cluster_summary_equals_the_single_process_one(client, tmp_path: Path) -> None:
    from jitterlab.store.cluster import summarize_on_cluster

    store = tmp_path / "store"
    # 3 row groups (2^20 rows each but the last) and a merged run of several sources
    big = np.concatenate([latency_clusters(seed=s, n=1_000_000) for s in (1, 2)])
    runs = [make_run(store, big, pairs=4), make_run(store, latency_clusters(seed=3, n=70_000))]
    merged = merge(ResultsStore(store), [r.id for r in runs], "fleet")
    for run in [*runs, merged]:
        path = verified_samples_path(run)
        assert summarize_on_cluster(client, path) == summarize_file(path)


def test_show_on_a_local_cluster_prints_the_same_numbers(tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    run = make_run(store, latency_clusters(seed=5, n=50_000))
    code, alone, err = run_main(["show", run.id, "--json", "--store", str(store)], capsys)
    assert code == 0, err
    code, clustered, err = run_main(
        ["show", run.id, "--json", "--cluster", "local:2", "--store", str(store)], capsys
    )
    assert code == 0, err
    assert json.loads(clustered)["summary_ns"] == json.loads(alone)["summary_ns"]


def test_a_bad_or_silent_cluster_is_one_line(tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    run = make_run(store, latency_clusters(seed=6, n=5_000))
    before = sorted(p.name for p in store.iterdir())
    for spec, words in (("tcp://127.0.0.1:9", "no scheduler answers"), ("local:0", "local:N")):
        code, _, err = run_main(["show", run.id, "--cluster", spec, "--store", str(store)], capsys)
        assert code == 2 and words in err, err
        assert_one_line_error(err)
    assert sorted(p.name for p in store.iterdir()) == before


def _die(path: str, group: int) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_dying_worker_is_one_line(client) -> None:
    from jitterlab.core.errors import JitterlabError
    from jitterlab.store.cluster import _run

    with pytest.raises(JitterlabError, match="failed on the cluster"):
        _run(client, _die, [("x", 0)])

"""Names for runs (issue 43 items 1–2): ``--name`` on every command that stores a run,
``merge --as`` as the name, a name or a unique part of an id wherever RUN is taken, ``rename``
keeping the id, and ``runs`` filters and sorts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_one_line_error, make_run, run_main
from jitterlab.cli.main import COMMANDS, build_parser
from jitterlab.store import ResultsStore, load_run

# every command that stores a run, with the least that parses
STORING = {
    "bench": ["bench"],
    "hiccup": ["hiccup"],
    "net": ["net", "bench"],
    "repl": ["repl", "bench"],
    "mtp": ["mtp", "analyze", "v.mp4"],
    "monitor": ["monitor", "serve", "--channel", "c"],
    "import": ["import", "f.csv"],
    "merge": ["merge", "a", "b"],
}


def csv(tmp_path: Path, name: str, values: list[int]) -> Path:
    path = tmp_path / f"{name}.csv"
    path.write_text("latency_ns\n" + "".join(f"{v}\n" for v in values))
    return path


def imported(tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    path = csv(tmp_path, "plain", [10, 20, 30, 40])
    code, out, err = run_main(["import", str(path), "--store", str(store), *extra], capsys)
    assert code == 0, err
    return out.strip().splitlines()[-1]


@pytest.mark.parametrize("command", sorted(STORING))
def test_every_storing_command_takes_a_name(command: str) -> None:
    words = STORING[command]
    args = build_parser(words[0]).parse_args([*words, "--name", "mine"])
    assert args.name == "mine"
    assert command in COMMANDS


def test_merge_as_becomes_the_name_and_show_finds_it(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(7)
    a = make_run(store, rng.integers(1_000, 2_000, 200), technique="mutex")
    b = make_run(store, rng.integers(1_000, 2_000, 200), technique="mutex")
    code, out, err = run_main(["merge", a.id, b.id, "--as", "mutex-both", "--store", str(store)], capsys)
    assert code == 0, err
    merged_id = out.strip()
    code, out, err = run_main(["show", "mutex-both", "--json", "--store", str(store)], capsys)
    assert code == 0, err
    assert json.loads(out)["id"] == merged_id
    assert load_run("mutex-both", store).name == "mutex-both"
    # the label says what the run is: its name and what it was merged from
    assert load_run(merged_id, store).label.startswith("mutex-both")
    assert "mutex ×1" in load_run(merged_id, store).label
    # the same name again is refused in one line, and nothing is stored
    before = len(ResultsStore(store).run_dirs())
    code, out, err = run_main(["merge", a.id, b.id, "--as", "mutex-both", "--store", str(store)], capsys)
    assert code == 2 and "already has that name" in err
    assert_one_line_error(err)
    assert len(ResultsStore(store).run_dirs()) == before


def test_import_name_clash_is_refused_before_any_work(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = imported(tmp_path, store, capsys, "--name", "plain")
    assert load_run("plain", store).id == run_id
    code, _, err = run_main(
        ["import", str(tmp_path / "plain.csv"), "--name", "plain", "--store", str(store)], capsys
    )
    assert code == 2 and "'plain'" in err and run_id in err
    assert_one_line_error(err)
    assert len(ResultsStore(store).run_dirs()) == 1
    for bad in ("../x", "a b", "", "-x"):
        code, _, err = run_main(
            ["import", str(tmp_path / "plain.csv"), f"--name={bad}", "--store", str(store)], capsys
        )
        assert code == 2, bad
        assert_one_line_error(err)
    assert len(ResultsStore(store).run_dirs()) == 1


def test_a_unique_part_of_an_id_resolves_and_ambiguity_lists_the_candidates(store: Path) -> None:
    rng = np.random.default_rng(8)
    a = make_run(store, rng.integers(1_000, 2_000, 50), technique="mutex")
    b = make_run(store, rng.integers(1_000, 2_000, 50), technique="spsc")
    assert load_run("spsc", store).id == b.id  # a substring, not a prefix
    assert load_run(a.id[-4:], store).id == a.id  # the id's random tail
    with pytest.raises(Exception, match=r"matches 2 runs: .*mutex.*spsc|matches 2 runs: .*spsc.*mutex"):
        load_run("-p1-", store)
    with pytest.raises(Exception, match=r"no run 'spcs'.*did you mean"):
        load_run("spcs", store)


def test_rename_keeps_the_id(tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = imported(tmp_path, store, capsys, "--name", "first")
    other = imported(tmp_path, store, capsys, "--name", "second")
    code, _, err = run_main(["rename", "first", "baseline", "--store", str(store)], capsys)
    assert code == 0, err
    run = load_run("baseline", store)
    assert run.id == run_id and run.name == "baseline" and load_run(run_id, store).name == "baseline"
    with pytest.raises(Exception, match="no run 'first'"):
        load_run("first", store)
    code, _, err = run_main(["rename", run_id, "second", "--store", str(store)], capsys)
    assert code == 2 and other in err
    assert_one_line_error(err)
    code, _, err = run_main(["rename", "baseline", "baseline", "--store", str(store)], capsys)
    assert code == 0, err  # a run may keep its own name


def test_runs_filters_and_sorts(tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(9)
    slow = make_run(store, rng.integers(5_000, 9_000, 100), technique="mutex")
    fast = make_run(store, rng.integers(1_000, 2_000, 100), technique="spsc")
    named = imported(tmp_path, store, capsys, "--name", "mutex-plain")

    def ids(*extra: str) -> list[str]:
        code, out, err = run_main(["runs", "--json", "--store", str(store), *extra], capsys)
        assert code == 0, err
        return [r["id"] for r in json.loads(out)]

    assert ids("--technique", "spsc") == [fast.id]
    assert ids("--name", "mutex-*") == [named]
    assert ids("--where", "p50_ns>3us") == [slow.id]
    assert ids("--where", "technique~mut", "--where", "count>=100") == [slow.id]
    assert ids("--sort=-p50_ns")[:2] == [slow.id, fast.id]
    assert ids("--sort", "p50_ns")[:2] == [named, fast.id]
    assert ids("--status", "partial") == []
    assert set(ids("--since", "1h")) == {named}  # make_run's runs say they were made in January
    assert set(ids("--since", "2025-12-31")) == {slow.id, fast.id, named}
    code, out, _ = run_main(["runs", "--store", str(store)], capsys)
    assert "mutex-plain" in out and out.splitlines()[0].split()[:2] == ["id", "name"]
    for bad in (
        ["--where", "nonsense"],
        ["--where", "p99_ns>fast"],
        ["--sort", "colour"],
        ["--since", "soon"],
    ):
        code, _, err = run_main(["runs", "--store", str(store), *bad], capsys)
        assert code == 2, bad
        assert_one_line_error(err)


def test_recover_holds_one_batch_of_a_part_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43 item 8: a monitor's parts are merged batch by batch, never a whole part in
    memory (it was ``list(f.iter_batches())``: 870 MB for a 10 M-row part)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jitterlab.store.staging import PARTS_DIR

    store = ResultsStore(tmp_path / "store")
    staging = store.staging_dir(store.new_run_id("monitor", "x"))
    (staging / PARTS_DIR).mkdir()
    n = 300_000
    t = np.arange(n, dtype=np.int64) * 1_000
    part = pa.table(
        {
            "pair": np.zeros(n, np.int32),
            "seq": np.arange(n, dtype=np.int64),
            "t_send_ns": t,
            "t_recv_ns": t + 500,
        }
    )
    pq.write_table(part, staging / PARTS_DIR / "part-000001.parquet", row_group_size=50_000)
    pulled = {"n": 0}
    real = pq.ParquetFile.iter_batches

    def counting(self: pq.ParquetFile, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        for batch in real(self, *args, **kwargs):  # type: ignore[arg-type]
            pulled["n"] += 1
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", counting)
    ahead = []
    real_commit = ResultsStore.commit_chunks

    def watching(self: ResultsStore, staging: Path, meta: dict, chunks, extra=()):  # type: ignore[no-untyped-def]
        def watched():  # type: ignore[no-untyped-def]
            for i, chunk in enumerate(chunks, 1):
                ahead.append(pulled["n"] - i)  # batches read beyond the ones handed on
                yield chunk

        return real_commit(self, staging, meta, watched(), extra)

    monkeypatch.setattr(ResultsStore, "commit_chunks", watching)
    meta = {
        "id": staging.name,
        "kind": "run",
        "status": "partial",
        "partial_reason": "t",
        "config": {"pairs": 1},
    }
    run = store.commit_parts(staging, meta)
    assert run.meta["samples"]["rows"] == n
    assert len(ahead) >= 4 and max(ahead) == 0  # the old list() read all of them ahead


def _on_host(run_path: Path, host: str, name: str | None = None) -> None:
    """Set the host (and a name) in a stored run's run.json, as a run measured there has."""
    from jitterlab.core.fileio import atomic_write_json

    meta = json.loads((run_path / "run.json").read_text())
    meta["environment"] = {"host": host}
    if name is not None:
        meta["name"] = name
    atomic_write_json(run_path / "run.json", meta)


def test_sources_of_one_host_are_labelled_by_what_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 43 item 2: two unnamed runs of one host were the sources "vm, vm-2" of a merge
    and of ``describe --union``. A source is named by what it is: its name, else technique
    ×pairs policy; runs alike by that are told apart by id, and only they."""
    store = tmp_path / "store"
    rng = np.random.default_rng(43)
    mutex = make_run(store, rng.integers(1_000, 2_000, 300), technique="mutex")
    spsc = make_run(store, rng.integers(1_000, 2_000, 300), technique="spsc")
    again = make_run(store, rng.integers(1_000, 2_000, 300), technique="mutex")
    named = make_run(store, rng.integers(1_000, 2_000, 300), technique="mutex")
    for run in (mutex, spsc, again, named):
        _on_host(run.path, "vm", "baseline" if run is named else None)

    code, out, err = run_main(["merge", mutex.id, spsc.id, "--as", "two", "--store", str(store)], capsys)
    assert code == 0, err
    merged = load_run(out.strip(), store)
    names = [s["name"] for s in merged.meta["merge"]["sources"]]
    assert names == ["mutex-x1-other", "spsc-x1-other"], names
    assert merged.label == "two (merge of mutex ×1 other, spsc ×1 other)"

    code, out, err = run_main(
        ["merge", mutex.id, again.id, named.id, "--as", "three", "--store", str(store)], capsys
    )
    assert code == 0, err
    merged = load_run(out.strip(), store)
    names = [s["name"] for s in merged.meta["merge"]["sources"]]
    assert names[2] == "baseline"  # a named run goes by its name
    assert names[0] != names[1] and all(
        n.startswith("mutex-x1-other") or n in (mutex.id, again.id) for n in names[:2]
    )
    assert mutex.id.endswith(names[0].removeprefix("mutex-x1-other-")) and "vm" not in names
    labels = [s["label"] for s in merged.meta["merge"]["sources"]]
    assert labels[0] == f"mutex ×1 other [{mutex.id}]" and labels[1] == f"mutex ×1 other [{again.id}]"

    code, out, err = run_main(
        ["describe", mutex.id, spsc.id, "--union", "--json", "--store", str(store)], capsys
    )
    assert code == 0, err
    rows = json.loads(out)["sources"]["rows"]
    assert [r["source"] for r in rows] == ["mutex-x1-other", "spsc-x1-other"]

"""Bad input: one line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_main


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "--pairs", "0"],
        ["bench", "--pairs", "65"],
        ["bench", "--pairs", "x"],
        ["bench", "--technique", "nosuch"],
        ["bench", "--policy", "batch"],
        ["bench", "--samples", "-5"],
        ["bench", "--samples", "0"],
        ["bench", "--pause", "soon"],
        ["bench", "--priority", "120", "--policy", "rr"],
        ["bench", "--policy", "deadline"],
        ["bench", "--pin", "first-cpu", "--technique", "mutex", "--samples", "10"],
        ["bench", "--caf-scheduler", "magic"],
        ["bench", "--pin", "0,4096", "--technique", "mutex", "--samples", "10"],
        ["bench", "--technique", "mutex", "--samples", "900000000", "--pairs", "4"],
        ["bench", "--technique", "mutex", "--samples", "10", "--report", "/no/such/folder/r.html"],
        ["show", "no-such-run"],
        ["nosuchcommand"],
    ],
)
def test_bad_input_is_one_line_exit_2(
    args: list[str], store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main([*args, "--store", str(store)] if args[0] in ("bench", "show") else args, capsys)
    assert code == 2
    assert_one_line_error(err)


def test_runs_on_an_empty_store_says_so(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(["runs", "--store", str(store)], capsys)
    assert code == 0
    assert out == ""
    assert "no runs" in err


@pytest.mark.parametrize(
    "args",
    [
        ["compare", "A", "B", "--noise", "-0.1"],
        ["describe", "R", "--threshold", "0"],
        ["describe", "R", "--threshold", "-3"],
        ["describe", "R", "--alpha", "0"],
        ["describe", "R", "--alpha", "1.5"],
        ["describe", "R", "--alpha", "nan"],
        ["inject", "validate", "--model", "m.json", "--rate", "0"],
        ["inject", "--model", "m.json", "--zero", "--listen", "9000", "--forward", "127.0.0.1:9001"],
        ["export", "R", "--format", "hlog", "--window", "0"],
        ["report", "-o", "/no/such/folder/r.html"],
        ["model", "make", "-o", "/no/such/folder/m.json", "--constant", "1ms"],
        ["model", "sample", "m.json", "-n", "10000000000"],
    ],
)
def test_arguments_are_checked_before_the_work(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from conftest import latency_clusters, make_run
    from jitterlab.core.fileio import atomic_write_json
    from jitterlab.simulate.model import model_to_json, parametric_model

    store = tmp_path / "s"
    run = make_run(store, latency_clusters(1, 2_000))
    atomic_write_json(tmp_path / "m.json", model_to_json(parametric_model(constant_ns=1e6)))
    args = [run.id if a in ("A", "B", "R") else str(tmp_path / a) if a == "m.json" else a for a in args]
    code, out, err = run_main([*args, "--store", str(store)] if args[0] != "model" else args, capsys)
    assert code == 2, out
    assert_one_line_error(err)
    assert "unrecognized" not in err and "invalid choice" not in err, err


def test_export_to_standard_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import latency_clusters, make_run

    store = tmp_path / "s"
    run = make_run(store, latency_clusters(1, 1_000))
    code, out, _ = run_main(["export", run.id, "--format", "csv", "-o", "-", "--store", str(store)], capsys)
    assert code == 0
    assert out.splitlines()[0].startswith('"pair"') and len(out.splitlines()) == run.latency_ns.size + 1
    assert not Path("-").exists()


def test_damaged_fields_and_empty_runs_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    import numpy as np

    from conftest import latency_clusters, make_run

    store = tmp_path / "s"
    good = make_run(store, latency_clusters(1, 2_000))
    empty = make_run(store, np.zeros(0, dtype=np.int64))
    code, _, err = run_main(["compare", good.id, empty.id, "--store", str(store)], capsys)
    assert code == 2 and "no samples" in err
    assert_one_line_error(err)
    original = (good.path / "run.json").read_text()
    for field, value in (
        (("obtained", "warnings"), True),
        (("summary", "latency_ns", "count"), "x"),
        (("config",), [5]),
        (("schema_version",), "1"),
        (("samples", "rows"), -1),
    ):
        meta = json.loads(original)
        target = meta
        for key in field[:-1]:
            target = target.setdefault(key, {})
        target[field[-1]] = value
        (good.path / "run.json").write_text(json.dumps(meta))
        for command in (["show", good.id], ["describe", good.id]):
            code, _, err = run_main([*command, "--store", str(store)], capsys)
            assert code == 2, (field, value, err)
            assert_one_line_error(err)
            assert "run.json" in err


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        (("doctor",), [0], "'doctor.0' must be object"),  # the two cases issue 24 item 8 names
        (("obtained", "policies"), [True], "'obtained.policies.0' must be string"),
        (("floor", "clock_overhead_ns", "median"), "fast", "'floor.clock_overhead_ns.median' must be number"),
        (("monitor", "trials"), [{"tag": 1}], "'monitor.trials.0'"),
        (("jvm", "pause_events"), [{"start_ns": "0", "end_ns": 1}], "'jvm.pause_events.0.start_ns'"),
    ],
)
def test_wrong_member_types_make_a_damaged_run_that_blocks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: tuple[str, ...], value: object, named: str
) -> None:
    """A run.json with a wrong member type is named with the member's path: single-run
    commands exit 2, store-wide ones leave it out in one line and go on (issue 24 item 8)."""
    import json

    from conftest import latency_clusters, make_run

    store = tmp_path / "s"
    good = make_run(store, latency_clusters(1, 2_000))
    bad = make_run(store, latency_clusters(2, 2_000))
    meta = json.loads((bad.path / "run.json").read_text())
    target = meta
    for key in field[:-1]:
        target = target.setdefault(key, {})
    target[field[-1]] = value
    (bad.path / "run.json").write_text(json.dumps(meta))
    for command in (["show", bad.id], ["describe", bad.id], ["compare", good.id, bad.id]):
        code, _, err = run_main([*command, "--store", str(store)], capsys)
        assert code == 2 and named in err, (command, err)
        assert_one_line_error(err)
    code, out, err = run_main(["runs", "--store", str(store)], capsys)
    assert code == 0 and good.id in out and named in err, err
    code, _, err = run_main(["report", "-o", str(tmp_path / "r.html"), "--store", str(store)], capsys)
    assert code == 0 and named in err and (tmp_path / "r.html").stat().st_size > 0, err


def test_run_ids_keep_to_a_safe_set_and_utc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import datetime as dt

    weird = tmp_path / "a\nb $(touch x) ü.csv"
    weird.write_text("latency_ns\n10\n20\n")
    code, out, err = run_main(["import", str(weird), "--store", str(tmp_path / "s")], capsys)
    assert code == 0, err
    run_id = out.strip()
    assert all(c.isascii() and (c.isalnum() or c in "._-") for c in run_id), run_id
    stamp = dt.datetime.strptime(run_id[:15], "%Y%m%d-%H%M%S").replace(tzinfo=dt.timezone.utc)
    assert abs((dt.datetime.now(dt.timezone.utc) - stamp).total_seconds()) < 120


def test_names_and_cells_from_files_are_printed_with_controls_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24 item 12: a file name or cell with a newline split the error line, and an ESC
    from a file reached the terminal. Every error and warning line escapes control characters."""
    hostile = tmp_path / "h.csv"
    hostile.write_text('latency_ns\n"1\n\x1b[2J"\n')
    named = tmp_path / "gone\n\x1b]0;owned\x07\u202e.csv"
    for path in (hostile, named):
        code, _, err = run_main(["import", str(path), "--store", str(tmp_path / "s")], capsys)
        assert code == 2, err
        assert_one_line_error(err)
        assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err, repr(err)
    assert "\\n\\x1b]0;owned\\x07\\u202e.csv" in err, err  # the name, visibly

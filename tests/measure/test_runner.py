"""The one run loop (measure/runner.py): points in order, a stop signal ends the plan with
what was stored kept, a point that stores nothing is a failure, one exit code rule."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from conftest import make_run
from jitterlab.core.signals import stop_on_signals
from jitterlab.core.warnings import CodedWarning
from jitterlab.measure.runner import Context, Done, Plan, Point, run_plan
from jitterlab.store import ResultsStore


def stored(store: Path, tag: str) -> Point:
    return Point(tag, lambda _ctx: Done([make_run(store, np.full(200, 1000, np.int64), technique=tag)]))


def test_points_run_in_order_and_each_is_announced_as_stored(store: Path) -> None:
    heard: list[str] = []
    plan = Plan("t", [stored(store, "a"), stored(store, "b"), stored(store, "c")])
    outcome = run_plan(plan, ResultsStore(store), on_stored=lambda r: heard.append(r.config["technique"]))
    assert [r.config["technique"] for r in outcome.runs] == heard == ["a", "b", "c"]
    assert not outcome.interrupted and outcome.failures == [] and outcome.exit_code == 0


def test_a_point_that_stores_nothing_is_a_failure_and_the_plan_goes_on(store: Path) -> None:
    warned: list[CodedWarning] = []
    failing = Point("broken", lambda _ctx: Done(failure="the tool died"))
    said = CodedWarning("technique-skipped", "said once")
    plan = Plan("t", [failing, stored(store, "b")], warnings=(said, said))
    outcome = run_plan(plan, ResultsStore(store), warned.append)
    assert [r.config["technique"] for r in outcome.runs] == ["b"]
    assert outcome.failures == ["broken: the tool died"] and outcome.exit_code == 1
    assert warned == [said, CodedWarning("tool-failed", "broken: the tool died")]


def test_an_interrupted_point_ends_the_plan_and_keeps_its_runs(store: Path) -> None:
    def cut_short(_ctx: Context) -> Done:
        return Done([make_run(store, np.full(50, 1000, np.int64), technique="cut")], interrupted=True)

    plan = Plan("t", [stored(store, "a"), Point("cut", cut_short), stored(store, "never")])
    outcome = run_plan(plan, ResultsStore(store))
    assert [r.config["technique"] for r in outcome.runs] == ["a", "cut"]
    assert outcome.interrupted and outcome.exit_code == 130 and outcome.failures == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_between_points_keeps_what_was_stored(store: Path, signum: int) -> None:
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    stop_on_signals()
    # Python's own SIGINT handler, as a terminal run has it: a test suite started in the
    # background by a shell inherits SIGINT ignored, and Python then installs none
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:

        def signalled(_ctx: Context) -> Done:
            # to this thread, its handler run before raise_signal returns (os.kill to the process
            # may land on another thread of it, and the handler then runs a little later)
            signal.raise_signal(signum)
            raise AssertionError("the signal did not stop the point")

        plan = Plan("t", [stored(store, "a"), Point("sig", signalled), stored(store, "never")])
        outcome = run_plan(plan, ResultsStore(store))
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    assert [r.config["technique"] for r in outcome.runs] == ["a"]
    assert outcome.interrupted and outcome.exit_code == 130


def test_the_setup_surrounds_every_point_and_is_undone(store: Path) -> None:
    events: list[str] = []

    @contextmanager
    def nodes() -> Iterator[str]:
        events.append("up")
        try:
            yield "the-nodes"
        finally:
            events.append("down")

    def uses(ctx: Context) -> Done:
        events.append(f"point on {ctx.setup}")
        return Done([make_run(store, np.full(10, 1, np.int64))])

    outcome = run_plan(Plan("t", [Point("a", uses), Point("b", uses)], setup=nodes), ResultsStore(store))
    assert events == ["up", "point on the-nodes", "point on the-nodes", "down"]
    assert len(outcome.runs) == 2


def test_bad_input_inside_a_point_propagates(store: Path) -> None:
    from jitterlab.core.errors import JitterlabError

    def refuses(_ctx: Context) -> Done:
        raise JitterlabError("no such thing")

    with pytest.raises(JitterlabError, match="no such thing"):
        run_plan(Plan("t", [Point("x", refuses)]), ResultsStore(store))

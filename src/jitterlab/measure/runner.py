"""The one run loop: every measuring capability describes *what* to run as a :class:`Plan`
of :class:`Point` s; :func:`run_plan` runs them and returns one :class:`Outcome`.

A point is one run (or one linked series of runs, like seed 002's four pipeline series)
and knows how to make it: start a native tool, a JVM, net agents, drain a monitor ring,
read a file. Everything around the points is here, once: warnings said once, the
stress-ng load around the whole plan (and its end recorded in every run), perf tracing
around each point, a stop signal (SIGINT, SIGTERM, SIGHUP: :mod:`jitterlab.core.signals`)
ending the plan with what was stored kept, a point that stored nothing counted as a
failure, and the exit code every measuring command returns.

Adding a capability means writing its points (and a describer for its tables); neither
this loop nor the store nor the command line's control flow changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jitterlab.core.warnings import CodedWarning, Warn, print_warning
from jitterlab.measure.load import LoadSpec, running_load
from jitterlab.measure.tracing import PerfTrace, tracing
from jitterlab.store import ResultsStore, Run

EXIT_OK = 0
EXIT_FAILED = 1  # a point stored nothing (its tool failed); the others' runs are kept
EXIT_INTERRUPTED = 130  # like a shell after SIGINT


@dataclass(frozen=True)
class Context:
    """What the runner hands each point."""

    store: ResultsStore
    warn: Warn
    meta: dict[str, Any]  # blocks every run of the plan carries (the load)
    trace: PerfTrace | dict[str, Any] | None = None  # this point's perf trace (--trace)
    setup: Any = None  # what the plan's setup yielded (for example the net nodes)


@dataclass
class Done:
    """What one point left behind."""

    runs: list[Run] = field(default_factory=list)
    interrupted: bool = False  # a stop signal cut it short; its runs are partial
    failure: str = ""  # why nothing was stored (set when ``runs`` is empty and not interrupted)
    result: Any = None  # what the point found beyond its runs, for the command to print (an analysis)


@dataclass(frozen=True)
class Point:
    """One run (or one linked series of runs) to make."""

    label: str
    execute: Callable[[Context], Done]


@dataclass(frozen=True)
class Plan:
    """What to run: the points in order and what surrounds them."""

    name: str
    points: Sequence[Point]
    warnings: tuple[CodedWarning, ...] = ()  # found while planning (a technique or collector skipped)
    load: LoadSpec | None = None  # stress-ng beside every point
    trace: bool = False  # perf tracing around each point
    setup: Callable[[], AbstractContextManager[Any]] | None = None  # entered once around the points
    about: str = ""  # one line on what is about to run, for the command to print first


@dataclass
class Outcome:
    """What a plan left: its runs in the order stored, whether a stop signal ended it, and
    the points that stored nothing."""

    runs: list[Run] = field(default_factory=list)
    interrupted: bool = False
    failures: list[str] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)  # each point's ``Done.result`` that was not None

    @property
    def exit_code(self) -> int:
        """130 when a stop signal ended the plan, 1 when a point stored nothing, else 0."""
        if self.interrupted:
            return EXIT_INTERRUPTED
        return EXIT_FAILED if self.failures else EXIT_OK


T = TypeVar("T")


def analysis_plan(
    name: str,
    label: str,
    analyse: Callable[[Warn], T],
    store_run: Callable[[T, ResultsStore], Run],
) -> Plan:
    """A file read or analysed into a run, as a plan of one point (an import, a video, sensor logs): ``analyse(warn)`` computes the
    result, ``store_run`` stores it as a run; the result itself comes back in
    ``Outcome.results`` (the command prints and draws it)."""

    def execute(ctx: Context) -> Done:
        result = analyse(ctx.warn)
        return Done([store_run(result, ctx.store)], result=result)

    return Plan(name, [Point(label, execute)])


def once(warn: Warn) -> Warn:
    """``warn`` that says each warning once (every point of a matrix meets the same facts)."""
    seen: set[CodedWarning] = set()

    def warn_once(w: CodedWarning) -> None:
        if w not in seen:
            seen.add(w)
            warn(w)

    return warn_once


@contextmanager
def _load_recorded(
    store: ResultsStore, spec: LoadSpec | None, outcome: Outcome, warn: Warn
) -> Iterator[dict[str, Any]]:
    """stress-ng around the plan; once it has stopped, whether it stopped cleanly is added to
    each run's ``load`` block (the runs were stored while it still ran)."""
    load: dict[str, Any] | None = None
    try:
        with running_load(spec) as load:
            yield {"load": load} if load else {}
    finally:
        if load:
            for run in outcome.runs:
                store.amend(run, {"load": load})
            if not load.get("stopped_cleanly", True):
                warn(CodedWarning("load-killed", "stress-ng had to be killed"))


def run_plan(
    plan: Plan,
    store: ResultsStore,
    warn: Warn = print_warning,
    on_stored: Callable[[Run], None] = lambda _run: None,
) -> Outcome:
    """Run every point of ``plan`` in order and return what was stored.

    A stop signal ends the plan after the point it arrived in (that point keeps what it
    recorded, marked partial); a point that stores nothing is named in
    :attr:`Outcome.failures` and the plan goes on. ``on_stored`` hears of each run as soon
    as it is stored (a log then shows progress through a long matrix). Bad input
    (:class:`~jitterlab.core.errors.JitterlabError`) propagates.
    """
    warn = once(warn)
    for message in plan.warnings:
        warn(message)
    outcome = Outcome()
    try:
        with (
            _load_recorded(store, plan.load, outcome, warn) as meta,
            plan.setup() if plan.setup else nullcontext() as setup,
        ):
            for point in plan.points:
                with tracing(plan.trace) as trace:
                    done = point.execute(Context(store, warn, meta, trace, setup))
                outcome.runs += done.runs
                if done.result is not None:
                    outcome.results.append(done.result)
                for run in done.runs:
                    on_stored(run)
                if not done.runs and not done.interrupted:
                    outcome.failures.append(f"{point.label}: {done.failure or 'nothing was stored'}")
                if done.interrupted:
                    outcome.interrupted = True
                    break
    except KeyboardInterrupt:  # between points, or while a point started or stopped
        outcome.interrupted = True
    for failure in outcome.failures:
        warn(CodedWarning("tool-failed", failure))
    return outcome

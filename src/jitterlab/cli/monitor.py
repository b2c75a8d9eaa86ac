"""``jitterlab monitor`` (live latency inside an experiment) and ``ssq score``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitterlab.cli.common import (
    Parser,
    load,
    non_negative_float,
    note,
    percentile_list,
    positive_seconds,
    print_json,
    probability,
    seconds,
    store_option,
    warn,
    writable_store,
)
from jitterlab.cli.measuring import json_context
from jitterlab.core.errors import JitterlabError
from jitterlab.core.render import render

if TYPE_CHECKING:  # the server, the trials and ssq bring numpy, pyarrow, pandas: imported to run
    from jitterlab.monitor import server


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("monitor", help="live latency inside an application: serve a channel, screen trials")
    monitor = p.add_subparsers(dest="monitor_command", required=True, parser_class=Parser)
    q = monitor.add_parser(
        "serve", help="drain a channel: classify, store as a run, serve a live page and Prometheus metrics"
    )
    q.add_argument("--channel", required=True)
    q.add_argument("--baseline", help="reference run whose stacked-z thresholds classify the samples")
    q.add_argument("--listen", default="127.0.0.1:9464", help="metrics endpoint (default 127.0.0.1:9464)")
    q.add_argument("--duration", type=seconds, help="stop after this long (default: until Ctrl-C/SIGTERM)")
    q.add_argument("--alpha", type=probability, default=0.01, help="significance of the trial test (0.01)")
    q.add_argument(
        "--ring-owner",
        type=user_id,
        help="also use a ring another user created (name or uid): an application running as that user",
    )
    q.add_argument(
        "--percentiles",
        type=percentile_list,
        default=(),
        help="also serve the latency at these percentiles on /metrics (e.g. 50,99,99.9,max)",
    )
    q.add_argument(
        "--native-error",
        type=probability,
        default=0.01,
        help="relative error of the native histogram on /metrics (0.01: schema 7; finest 0.0027: schema 8)",
    )
    q.add_argument(
        "--otlp",
        metavar="URL",
        help="also push the latency to an OpenTelemetry collector: its OTLP/HTTP receiver, e.g. "
        "http://127.0.0.1:4318/v1/metrics (an exponential histogram of every sample, each --otlp-interval)",
    )
    q.add_argument(
        "--otlp-interval", type=positive_seconds, default=10.0, help="how often --otlp pushes (10s)"
    )
    q.add_argument(
        "--json", action="store_true", help="end by printing the stored run's id and counts as JSON"
    )
    store_option(q, named=True)
    q = monitor.add_parser("trials", help="the trials of a monitor run with their screening verdicts")
    q.add_argument("run", metavar="RUN", help="the monitor run (id, name, unique part of an id, or folder)")
    q.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    store_option(q)
    q = monitor.add_parser("unlink", help="remove a channel's shared memory (or every unused one: --stale)")
    q.add_argument("--channel", help="the channel; with --stale a pattern such as 'lab-*' (default: all)")
    q.add_argument(
        "--stale", action="store_true", help="remove your rings that no server or application has open"
    )
    p = sub.add_parser("ssq", help="Simulator Sickness Questionnaire scores (Kennedy et al. 1993)")
    s = p.add_subparsers(dest="ssq_command", required=True, parser_class=Parser)
    q = s.add_parser("score", help="score a CSV of answers: subscales, total, pre/post, groups")
    q.add_argument("file", type=Path)
    q.add_argument("--pre-post", action="store_true", help="rows carry a phase column: pre or post")
    q.add_argument("--group", help="column naming each participant's group or condition")
    q.add_argument("--exclude-pre-above", type=non_negative_float, help="leave out participants sick before")
    q.add_argument("--trial-column", help="column naming each participant's monitored trial")
    q.add_argument("--trials", help="monitor run whose trials give each participant's delivered latency")
    q.add_argument("--ignore-column", action="append", default=[], metavar="NAME", help="leave it out")
    q.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    store_option(q)


def cmd_monitor(args: argparse.Namespace) -> int:
    if args.monitor_command == "unlink":
        return _unlink(args.channel, args.stale)
    if args.monitor_command == "trials":
        from jitterlab.monitor import trials

        results = trials.trial_results(load(args.run, args))
        if args.json:
            print_json(trials.results_json(results))
        else:
            print(render(trials.HEADERS, trials.rows(results), "llrrrrll"))
        return 0
    return _serve(args)


def _serve(args: argparse.Namespace) -> int:
    from jitterlab.measure.runner import run_plan
    from jitterlab.monitor import recorder, server

    until = "until --duration" if args.duration else "Ctrl-C or SIGTERM stops and stores it"

    def started(srv: server.Server) -> None:
        note(
            f"serving channel {args.channel}: live page http://{args.listen}/, metrics on "
            f"http://{args.listen}/metrics, run {srv.run_id} ({until})"
        )

    try:
        plan = server.serve_plan(
            args.channel,
            args.baseline,
            args.listen,
            args.alpha,
            args.duration,
            started,
            _progress,
            ring_owner=args.ring_owner,
            percentiles=args.percentiles,
            native_error=args.native_error,
            otlp=args.otlp,
            otlp_interval_s=args.otlp_interval,
        )
        outcome = run_plan(plan, writable_store(args), warn)
    except (JitterlabError, KeyboardInterrupt) as e:
        if args.json:  # main still prints the error line and sets the exit code
            by = f"interrupted by {e or 'SIGINT'}"  # Interrupted carries the signal's name
            _print_serve_json([], str(e) if isinstance(e, JitterlabError) else by)
        raise
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    for run in outcome.runs:
        monitor = run.meta["monitor"]
        note(
            f"stored {run.id}: {run.meta['samples']['rows']} samples, {len(monitor['trials'])} trials, "
            f"{monitor['ring_dropped']} dropped"
        )
    ring = Path("/dev/shm") / f"{recorder.RING_PREFIX}{args.channel}"
    if ring.exists():  # on purpose: the application may still record into it
        note(
            f"the channel's ring stays ({ring.stat().st_size / 2**20:.0f} MB in {ring.parent}) for the "
            f"application; remove it with: jitterlab monitor unlink --channel {args.channel} (or --stale)"
        )
    if args.json:
        stopped = "interrupted before the run was staged" if outcome.interrupted else None
        _print_serve_json(outcome.runs, None if outcome.runs else "; ".join(outcome.failures) or stopped)
    return outcome.exit_code


def _print_serve_json(runs: list[Any], reason: str | None) -> None:
    """``monitor serve --json``, one document whatever happened: with no run stored, the
    machine's context now, no runs and the reason (the error line and exit code unchanged)."""
    from jitterlab.monitor.server import stored_json

    print_json({"context": json_context(runs)} | stored_json(runs, reason))


def _unlink(channel: str | None, stale: bool) -> int:
    from jitterlab.monitor import recorder

    if not stale:
        if channel is None:
            raise JitterlabError("monitor unlink: name a channel (--channel NAME) or give --stale")
        if not recorder.unlink(recorder.check_channel(channel)):
            raise JitterlabError(f"no channel '{channel}' to remove")
        note(f"removed channel {channel}")
        return 0
    channels = recorder.stale_channels(channel or "*")
    for name in channels:
        recorder.unlink(name)
        note(f"removed channel {name} (no server or application had it open)")
    if not channels:
        note("no stale channels: every ring of yours is open in some process")
    return 0


def user_id(text: str) -> int:
    """A user named by name or uid (argparse type)."""
    import pwd

    try:
        return pwd.getpwnam(text).pw_uid
    except KeyError:
        pass
    if text.isdigit() and len(text) <= 10:
        return int(text)
    raise argparse.ArgumentTypeError(f"'{text}' is not a user name or uid")


def _progress(srv: server.Server) -> None:
    if sys.stderr.isatty():
        s = srv.state
        sys.stderr.write(f"\r{s.samples:,} samples, {s.ring_dropped:,} dropped, {len(s.trials)} trials")
        sys.stderr.flush()


def cmd_ssq(args: argparse.Namespace) -> int:
    from jitterlab.monitor import ssq, trials  # pandas, numpy: now
    from jitterlab.stats import summarize

    if args.trials and not args.trial_column:
        raise JitterlabError("--trials needs --trial-column (which trial each participant had)")
    a = args
    scored = ssq.score_file(a.file, a.pre_post, a.group, a.trial_column, a.exclude_pre_above, a.ignore_column)
    table = scored.table
    if args.trials:
        delivered = {r.tag: r for r in trials.trial_results(load(args.trials, args))}
        run = load(args.trials, args)
        column = args.trial_column.lower()
        missing = [t for t in table[column] if t not in delivered]
        if missing:
            raise JitterlabError(f"trial '{missing[0]}' is not in monitor run {run.id}")
        for key, pick in (("latency_mean_ms", "mean"), ("latency_p99_ms", "p99")):
            table[key] = [getattr(summarize(trials.tag_latencies(run, t)), pick) / 1e6 for t in table[column]]
        table["latency_contaminated"] = [delivered[t].verdict.contaminated for t in table[column]]
    if args.json:
        print_json(
            {
                "participants": table.to_dict(orient="records"),
                "groups": ssq.group_figures(scored, args.group),
                "excluded": scored.excluded,
            }
        )
        return 0
    headers, rows = ssq.group_table(scored, args.group)
    print(render(headers, rows, "ll" + "r" * (len(headers) - 2)))
    if scored.excluded:
        note(f"left out (pre total above {args.exclude_pre_above:g}): {', '.join(scored.excluded)}")
    print()
    print(render(*ssq.participant_table(table)))
    return 0


COMMANDS = {"monitor": cmd_monitor, "ssq": cmd_ssq}

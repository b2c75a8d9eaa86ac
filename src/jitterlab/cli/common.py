"""What every command module shares: the one-line-error parser, option helpers, and the
way warnings and errors are printed (progress and warnings on stderr, data on stdout)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from jitterlab.core.errors import JitterlabError
from jitterlab.core.percentiles import parse_percentiles
from jitterlab.core.units import parse_duration_ns
from jitterlab.core.warnings import CodedWarning, print_warning

if TYPE_CHECKING:  # the store brings numpy and pyarrow: imported when a command needs it
    from jitterlab.store import ResultsStore, Run

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # like a shell after SIGINT


class Parser(argparse.ArgumentParser):
    """argparse with the one-line error our CLI promises (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(EXIT_USAGE)


def non_negative_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"'{text}' must not be negative")
    return value


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"'{text}' is not a finite number")
    return value


def positive_float(text: str) -> float:
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be greater than 0")
    return value


def non_negative_float(text: str) -> float:
    value = _float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"'{text}' must not be negative")
    return value


def probability(text: str) -> float:
    """A number strictly between 0 and 1 (a significance level)."""
    value = _float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be between 0 and 1 (exclusive)")
    return value


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1")
    return value


def seconds(text: str) -> float:
    """A duration option in seconds (bare numbers are seconds): '2.5s', '500ms'."""
    return parse_duration_ns(text, default_unit="s") / 1e9


def millis(text: str) -> float:
    """A duration option in seconds (bare numbers are milliseconds): '33.3ms', '33.3'."""
    return parse_duration_ns(text, default_unit="ms") / 1e9


def offset_seconds(text: str) -> float:
    """A time offset in seconds, which may be negative (a log's intervals can start before its
    StartTime): '-0.5', '90', '2.5s', '500ms'."""
    try:
        return _float(text)
    except argparse.ArgumentTypeError:
        return parse_duration_ns(text, default_unit="s") / 1e9


def time_range_options(parser: argparse.ArgumentParser) -> None:
    """``--from``/``--to``: seconds from the run's start (an imported log's StartTime), like
    HistogramLogProcessor's -start/-end."""
    parser.add_argument(
        "--from",
        dest="from_s",
        type=offset_seconds,
        metavar="SECONDS",
        help="only from this many seconds after the start",
    )
    parser.add_argument(
        "--to",
        dest="to_s",
        type=offset_seconds,
        metavar="SECONDS",
        help="only up to this many seconds after the start",
    )


def expected_interval_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--expected-interval",
        metavar="DURATION",
        help="correct for coordinated omission as HdrHistogram does (the interval a closed-loop "
        "measurement meant between samples, e.g. 1ms); shown beside the measured figures",
    )


def expected_interval_ns(args: argparse.Namespace) -> int | None:
    text = getattr(args, "expected_interval", None)
    if text is None:
        return None
    value = parse_duration_ns(text, "ns")
    if value <= 0:
        raise JitterlabError("--expected-interval must be a positive duration such as 1ms")
    return value


def store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="results store folder (default ./jitterlab-results or $JITTERLAB_STORE)",
    )


def warn(w: CodedWarning) -> None:
    """Every warning a command prints: ``warning[code]: detail`` (codes: core/warning_codes.toml)."""
    print_warning(w)


def note(message: str) -> None:
    print(message, file=sys.stderr)


def print_json(document: Any) -> None:
    print(json.dumps(document, indent=2))


def load(ref: str, args: argparse.Namespace) -> Run:
    from jitterlab.store import ResultsStore, load_run

    return load_run(ref, ResultsStore(args.store))


def writable_store(args: argparse.Namespace) -> ResultsStore:
    """The store of ``--store``, checked writable before any work."""
    from jitterlab.store import ResultsStore

    store = ResultsStore(args.store)
    store.ensure_writable()
    return store


def percentile_list(text: str) -> tuple[float, ...]:
    """``--percentiles 50,90,99.9,max``: the one parser of percentile lists (core.percentiles)."""
    try:
        return parse_percentiles(text)
    except JitterlabError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--percentiles: ")) from None

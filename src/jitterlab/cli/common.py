"""What every command module shares: the one-line-error parser, option helpers, and the
way warnings and errors are printed (progress and warnings on stderr, data on stdout)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from jitterlab.core.errors import JitterlabError, escape_controls
from jitterlab.core.options import (
    YEAR_S,
    OptionError,
    Range,
    describe_duration,
    duration_text,
    parse_duration_s,
    parse_integer,
    parse_number,
)
from jitterlab.core.percentiles import parse_percentiles
from jitterlab.core.units import parse_duration_ns
from jitterlab.core.warnings import CodedWarning, print_warning

if TYPE_CHECKING:  # the store brings numpy and pyarrow: imported when a command needs it
    from jitterlab.store import ResultsStore, Run
    from jitterlab.store.reader import Engine

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # like a shell after SIGINT
MAX_INT = 2**62  # inside int64 with room to add: counts, bytes, ports' upper bounds are tighter
MAX_FLOAT = 1e15


class Parser(argparse.ArgumentParser):
    """argparse with the one-line error our CLI promises (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {escape_controls(message)} (see --help)\n")
        raise SystemExit(EXIT_USAGE)


class OptionType:
    """An argparse ``type`` from a core.options parser: its one-line error, which argparse
    prefixes with the option's name (``argument --rate: 'abc' is not a finite number ...``);
    ``kind`` and ``allowed`` are what docs/cli.md lists for the option."""

    def __init__(self, kind: str, parse: Callable[[str], Any], allowed: str) -> None:
        self.__name__ = self.kind = kind
        self.parse = parse
        self.allowed = allowed

    def __call__(self, text: str) -> Any:
        try:
            return self.parse(text)
        except OptionError as e:
            raise argparse.ArgumentTypeError(str(e)) from None


def integer(low: int | None = 0, high: int | None = MAX_INT) -> Callable[[str], int]:
    """A whole-number option in ``low..high`` (``1_000``, ``1e6`` accepted)."""
    allowed = Range(low, high)
    return OptionType("integer", lambda text: parse_integer(text, allowed), allowed.describe())


def number(
    low: float | None = None, high: float | None = None, *, low_open: bool = False, unit: str = ""
) -> Callable[[str], float]:
    """A finite real-number option in ``low..high`` (``low_open``: strictly above ``low``)."""
    allowed = Range(low, high, low_open=low_open, unit=unit)
    return OptionType("number", lambda text: parse_number(text, allowed), allowed.describe())


def duration(
    low: float = 0.0, high: float = YEAR_S, *, low_open: bool = False, unit: str = "s"
) -> Callable[[str], float]:
    """A duration option, in seconds: ``10s``, ``500ms``, ``250us``; a bare number is in
    ``unit``. ``low``/``high`` are seconds."""
    allowed = Range(low, high, low_open=low_open)
    shown = f"{describe_duration(allowed)}; " + (
        "a bare number is in s"
        if unit == "s"
        else f"with a unit (e.g. 20{unit}); a bare number other than 0 is refused"
    )
    return OptionType("duration", lambda text: parse_duration_s(text, allowed, unit), shown)


# The common shapes; an option with a natural range of its own passes it to the factories.
non_negative_int = integer(0)
positive_int = integer(1)
non_negative_float = number(0.0, MAX_FLOAT)
positive_float = number(0.0, MAX_FLOAT, low_open=True)
_open_unit = Range(0.0, 1.0, low_open=True, high_open=True)
probability = OptionType("number", lambda text: parse_number(text, _open_unit), _open_unit.describe())
seconds = duration()  # bare numbers are seconds: '2.5', '2.5s', '500ms'
millis = duration(unit="ms")  # a unit is needed: '33.3ms' (a bare '33.3' is refused, not read as ms)
positive_seconds = duration(low_open=True)  # a window or an interval: more than 0
rate_hz = number(0.0, 1e9, low_open=True, unit="Hz")  # every --rate: a float in Hz
seed = integer(0, 2**32 - 1)  # every --seed


def link_shape(text: str) -> dict[str, str]:
    """Every --shape (namespaces' links): ``rate=10mbit``, tbf's rate."""
    key, _, value = text.partition("=")
    if key != "rate" or not value:
        raise argparse.ArgumentTypeError(f"expected rate=10mbit, got '{text}'")
    return {"rate": value}


class DeprecatedAlias(argparse.Action):
    """An old spelling of an option: still works for this release, with a warning naming the
    new one (code ``deprecated-option``). Hidden from --help; docs/cli.md lists it."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option: str | None = None,
    ) -> None:
        warn(CodedWarning("deprecated-option", f"{option} is an old spelling: use {self.new}"))
        setattr(namespace, self.dest, values)


def deprecated_alias(
    parser: argparse.ArgumentParser, old: str, new: str, dest: str = "", **kwargs: Any
) -> None:
    """Accept ``old`` as ``new`` (same ``dest``; ``kwargs`` as the new option's ``type``)."""
    dest = dest or new.lstrip("-").replace("-", "_")
    parser.add_argument(old, dest=dest, action=DeprecatedAlias, new=new, help=argparse.SUPPRESS, **kwargs)


# A time offset in seconds, which may be negative (a log's intervals can start before its
# StartTime): '-0.5', '90', '2.5s', '500ms'.
offset_seconds = duration(-YEAR_S, YEAR_S)


def time_range_options(parser: argparse.ArgumentParser) -> None:
    """``--from``/``--to``: seconds from the run's start (an imported log's StartTime), like
    HistogramLogProcessor's -start/-end."""
    for flag, dest, words in (("--from", "from_s", "from"), ("--to", "to_s", "up to")):
        help_text = f"only {words} this many seconds after the start"
        parser.add_argument(flag, dest=dest, type=offset_seconds, metavar="SECONDS", help=help_text)


def expected_interval_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--expected-interval",
        metavar="DURATION",
        type=duration_text(low_open=True, unit="ns"),
        help="correct for coordinated omission as HdrHistogram does (the interval a closed-loop "
        "measurement meant between samples, e.g. 1ms); shown beside the measured figures",
    )


def expected_interval_ns(args: argparse.Namespace) -> int | None:
    text = getattr(args, "expected_interval", None)
    value = None if text is None else parse_duration_ns(text, "ns")
    if value is not None and value <= 0:
        raise JitterlabError("--expected-interval must be a positive duration such as 1ms")
    return value


def store_option(parser: argparse.ArgumentParser, named: bool = False) -> None:
    where = "results store folder (default ./jitterlab-results or $JITTERLAB_STORE)"
    parser.add_argument("--store", type=Path, default=None, help=where)
    trust = "as root, use a store another user owns: its owner's folders, drafts and leftovers are "
    trust += "trusted (without it root refuses such a store in one line; docs/security.md)"
    parser.add_argument("--trust-store-owner", action="store_true", help=trust)
    if named:  # a command that stores runs (store/names.py)
        parser.add_argument("--name", metavar="NAME", help="the stored run's name (unique; resolves as RUN)")


def cluster_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--cluster local:N|ADDRESS``: run ``what`` on a Dask cluster (docs/cluster.md)."""
    parser.add_argument(
        "--cluster",
        metavar="local:N|ADDRESS",
        help=f"compute {what} on a Dask cluster: N local worker processes, or a scheduler's address",
    )


def cluster_engine(args: argparse.Namespace, stack: contextlib.ExitStack) -> Engine | None:
    """The cluster of ``--cluster`` (started or reached, and closed with ``stack``), or None."""
    if not getattr(args, "cluster", None):
        return None
    from jitterlab.cluster.engine import engine

    return stack.enter_context(engine(args.cluster))


def warn(w: CodedWarning) -> None:
    """Every warning a command prints: ``warning[code]: detail`` (codes: core/warning_codes.toml)."""
    print_warning(w)


def note(message: str) -> None:
    print(message, file=sys.stderr)


def print_json(document: Any) -> None:
    """``--json`` output: floats without binary noise (core.tidy)."""
    from jitterlab.core.tidy import tidy_json

    json.dump(tidy_json(document), sys.stdout, indent=2)  # written as encoded: no whole string held
    print()


def print_context(runs: Sequence[Run]) -> None:
    """The context block heading a command's text output on stdout (measuring commands
    included): the machine ``runs`` were measured on, or where they came from."""
    from jitterlab.describe.context import context_header

    if runs:
        print(context_header(runs))


def load(ref: str, args: argparse.Namespace) -> Run:
    from jitterlab.store import ResultsStore, load_run

    return load_run(ref, ResultsStore(args.store))


def writable_store(args: argparse.Namespace) -> ResultsStore:
    """The store of ``--store``, checked writable (and ``--name`` free) before any work."""
    from jitterlab.store import ResultsStore, names

    store = ResultsStore(args.store)
    store.ensure_writable()
    return names.claim(store, getattr(args, "name", None), "--as" if args.command == "merge" else "--name")


def percentile_list(text: str) -> tuple[float, ...]:
    """``--percentiles 50,90,99.9,max``: the one parser of percentile lists (core.percentiles)."""
    try:
        return parse_percentiles(text)
    except JitterlabError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--percentiles: ")) from None

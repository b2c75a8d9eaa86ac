"""Analysis passes on a Dask distributed cluster (``--cluster local:N|ADDRESS``): the exact
summary (``show``), the stacked-z categories, windows and baseline screening
(``describe``) and the passes of ``merge``.

Workers read the run's row groups from the shared store (the same path on every host); a
:class:`ClusterScan` runs each pass of :mod:`jitterlab.stats.summary` and
:mod:`jitterlab.stats.outofcore` as one task per row group and sends back only the pass's
per-chunk result, which the client folds as the single-process path does (integers in any
order; the squares in row-group order), so every number equals the single-process
path's (docs/cluster.md). Dask is imported only here, and only when asked for
(``pip install 'jitterlab[cluster]'``).
"""

from __future__ import annotations

import contextlib
import importlib
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jitterlab.cluster.sample import ClusterSample
from jitterlab.cluster.scan import ClusterScan
from jitterlab.cluster.twopass import ClusterPasses, add_counts, value_counts
from jitterlab.core.errors import JitterlabError
from jitterlab.stats.summary import (
    SUMMARY_PERCENTILES,
    Moments,
    Summary,
    add_moments,
    integer_moments,
    percentiles_by,
    refine_by,
    summarize_chunks,
    summary_from,
)
from jitterlab.stats.valuetable import ValueCounter
from jitterlab.store.reader import Filter

WORKERS_WITHIN_S = 10
MISSING = "--cluster needs the optional package dask[distributed]: pip install 'jitterlab[cluster]'"


def local_cluster(workers: int) -> Any:
    """A Dask LocalCluster of ``workers`` single-threaded worker processes on this machine
    (its dashboard on a free loopback port, not 8787: no warning when another holds it)."""
    # typed as Any: the extra may be missing where mypy runs
    LocalCluster: Any = importlib.import_module("dask.distributed").LocalCluster
    return LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
    )


@contextlib.contextmanager
def connect(spec: str) -> Iterator[Any]:
    """A Dask client: ``local:N`` starts N worker processes here, anything else is the
    address of a running scheduler (``tcp://host:8786``)."""
    try:  # typed as Any: the extra may be missing where mypy runs
        distributed = importlib.import_module("dask.distributed")
    except ImportError:
        raise JitterlabError(MISSING) from None
    Client = distributed.Client
    if spec.startswith("local:"):
        try:
            n = int(spec.removeprefix("local:"))
        except ValueError:
            n = 0
        if n < 1:
            raise JitterlabError(f"--cluster {spec}: give local:N with N ≥ 1 worker processes")
        with local_cluster(n) as cluster, Client(cluster) as client:
            yield client
        return
    _probe(spec)
    try:
        client = Client(spec, timeout="10s")
    except (OSError, TimeoutError, ValueError) as e:
        raise JitterlabError(f"--cluster {spec}: no scheduler answers ({e})") from None
    try:
        try:  # a scheduler without workers would hold every task forever
            client.wait_for_workers(1, timeout=WORKERS_WITHIN_S)
        except (OSError, TimeoutError):
            raise JitterlabError(
                f"--cluster {spec}: the scheduler has no workers after {WORKERS_WITHIN_S} s "
                f"(start some: dask worker {spec})"
            ) from None
        yield client
    finally:
        client.close()


# What a Dask scheduler says first on a TCP connection: its handshake, one message framed as
# an 8-byte little-endian length and that many bytes (a few hundred) of msgpack naming its
# "compression", "python" and "pickle-protocol". A service that is not a scheduler (an HTTP
# server waits for a request; another sends anything) hung the client or made it allocate an
# absurd frame (issue 42 item 14): the probe reads at most HANDSHAKE_MAX bytes for at most
# PROBE_S seconds and names what answered.
PROBE_S = 5.0
HANDSHAKE_MAX = 1 << 16
_HANDSHAKE_KEYS = (b"compression", b"pickle-protocol")


def _probe(spec: str) -> None:
    """A TCP scheduler address that refuses connections is one line at once (Dask's client
    would retry until its 10 s time-out); one that answers is read for a Dask scheduler's
    handshake, with a time-out on the connection and on the handshake, and refused in one
    line saying what answered when it is something else; other schemes are left to Dask."""
    address = scheduler_address(spec)
    if address is None:
        return
    try:
        connection = socket.create_connection(address, timeout=PROBE_S)
    except (OSError, ValueError, UnicodeError) as e:
        why = getattr(e, "strerror", None) or " ".join(str(e).split()) or type(e).__name__
        raise JitterlabError(f"--cluster {spec}: no scheduler answers ({why})") from None
    with connection:
        what = _not_a_scheduler(connection)
    if what is not None:
        raise JitterlabError(f"--cluster {spec}: not a Dask scheduler: {what}")


def scheduler_address(spec: str) -> tuple[str, int] | None:
    """(host, port) of a TCP scheduler address (``tcp://HOST:PORT`` or ``HOST:PORT``); None
    for another scheme (left to Dask); one line when it is neither."""
    address = spec.removeprefix("tcp://")
    if "://" in address:
        return None
    host, _, port = address.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:8786
    if not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536 or len(spec) > 300:
        raise JitterlabError(
            f"--cluster {spec[:80]}: give local:N or a scheduler address such as tcp://HOST:8786"
        )
    return host, int(port)


def _not_a_scheduler(connection: socket.socket) -> str | None:
    """None when what ``connection`` sends first is a Dask handshake, else what it was."""
    deadline = time.monotonic() + PROBE_S
    received = b""
    need = 8
    while len(received) < need:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        connection.settimeout(left)
        try:
            block = connection.recv(min(need - len(received), HANDSHAKE_MAX))
        except TimeoutError:
            break
        except OSError as e:
            return f"the connection failed while reading its greeting ({e.strerror or e})"
        if not block:
            if not received:
                return "it closed the connection without a word"
            break
        received += block
        if len(received) >= 8 and need == 8:
            (length,) = struct.unpack("<Q", received[:8])
            if not 0 < length <= HANDSHAKE_MAX:
                return _what_answered(received + _more(connection, deadline))
            need = 8 + length
    if len(received) < need:
        if not received:
            return f"it accepted the connection but said nothing in {PROBE_S:g} s (an HTTP server?)"
        return _what_answered(received) + f" (then nothing more in {PROBE_S:g} s)"
    if not all(key in received for key in _HANDSHAKE_KEYS):
        return _what_answered(received)
    return None


def _more(connection: socket.socket, deadline: float) -> bytes:
    """What else the service sent at once (a status line to name it), never waiting long."""
    connection.settimeout(max(min(deadline - time.monotonic(), 0.2), 0.01))
    try:
        return connection.recv(120)
    except OSError:
        return b""


def _what_answered(data: bytes) -> str:
    if data.startswith(b"HTTP/"):
        status = data.split(b"\r\n", 1)[0][:60].decode("ascii", "replace")
        return f"an HTTP server answered ('{status}')"
    if data.startswith(b"SSH-"):
        return "an SSH server answered"
    return f"it sent {len(data)} bytes that are not a Dask handshake ({data[:16].hex()}…)"


class ClusterEngine:
    """Where describe's and merge's passes over a samples file run: on the cluster of
    ``client`` (the single-process counterpart is :data:`jitterlab.store.reader.LOCAL`)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def latency(self, path: Path, since: str = "t_send_ns", where: Filter | None = None) -> ClusterScan:
        return ClusterScan(self.client, path, since=since, where=where)

    def timed(self, path: Path, where: Filter | None = None) -> ClusterScan:
        return ClusterScan(self.client, path, timed=True, where=where)

    def summary(self, path: Path, since: str = "t_send_ns", where: Filter | None = None) -> Summary:
        return summarize_on_cluster(self.client, path, since, where)

    def sample(self, path: Path) -> ClusterSample:
        """The file's latencies as compare's sample whose passes run on the workers
        (``compare --cluster``): a :class:`ClusterSample`, an
        :class:`jitterlab.stats.compare.OrderedSample` as the local ones are."""
        return ClusterSample(self.client, path)

    def two_pass(self, path: Path, where: Filter | None = None) -> ClusterPasses | None:
        """describe's two passes over ``path`` on the workers (a
        :class:`jitterlab.stats.twopass.PassReader`); None with a filter (the radix passes
        then, on the workers, as here)."""
        return ClusterPasses(self.client, path) if where is None else None


@contextlib.contextmanager
def engine(spec: str) -> Iterator[ClusterEngine]:
    """:func:`connect`, as a :class:`ClusterEngine`."""
    with connect(spec) as client:
        yield ClusterEngine(client)


def summarize_on_cluster(
    client: Any, path: Path, since: str = "t_send_ns", where: Filter | None = None
) -> Summary:
    """:func:`jitterlab.store.reader.summarize_file` of ``path`` (of the samples ``where``
    keeps) computed by the cluster's workers in two passes: each row group's exact moments
    (added here: integers, so in any order the same mean and std), then each row group's
    value counts (the percentiles from the merged table; by radix refinement without the
    kernels)."""
    scan = ClusterScan(client, path, since=since, where=where)
    if not scan.groups:
        return summarize_chunks(lambda: iter(()))
    moments: Moments = (0, 0, 0, 0, 0)
    for part in scan.map(integer_moments):
        moments = add_moments(moments, part)
    if moments[0] == 0:
        return summarize_chunks(lambda: iter(()))
    count, lowest, highest = moments[:3]
    counter: ValueCounter | None = ValueCounter(lowest, highest)
    for counted in scan.map(value_counts, lowest, highest):
        if counted is None:  # a worker without the kernels: radix selection below
            counter = None
        elif counter is not None:
            add_counts(counter, counted)
    table = counter.table() if counter is not None else None
    if table is not None:  # every value counted, as summarize_file counts them
        p = table.percentiles(SUMMARY_PERCENTILES)
    else:
        p = percentiles_by(refine_by(scan), SUMMARY_PERCENTILES, (count, lowest, highest))
    return summary_from(moments, p)

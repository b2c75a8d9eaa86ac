"""A stored run (:class:`Run`): its run.json, its labels (policy asked and obtained,
technique, what it is) and, read on first use, its samples (through
:mod:`jitterlab.store.verify`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy, pyarrow and pandas are imported where samples are touched, so
    # that listing runs (run.json only) starts fast (issue 28 item 3)
    import numpy as np
    import pandas as pd
    import pyarrow as pa

from jitterlab.core.errors import CorruptRunError, JitterlabError
from jitterlab.core.fileio import (
    os_error_text,
)
from jitterlab.store.fsops import _plain_file_problem
from jitterlab.store.schema import (
    HISTOGRAM_FILE,
    RUN_JSON,
    SAMPLES_FILE,
    validate_run_json,
)
from jitterlab.store.verify import _read_samples


def _policy_name(policy: str, priority: Any) -> str:
    return f"{policy} {priority}" if policy in ("fifo", "rr") and priority else policy


def obtained_policy_label(meta: dict[str, Any]) -> str:
    """A run's policy label from its run.json: what was obtained, and a refusal of what was
    asked ("other — rr 90 refused"); see :attr:`Run.policy_label`."""
    config = meta.get("config") or {}
    asked = _policy_name(str(config.get("policy", "other")), config.get("priority"))
    obtained = meta.get("obtained") or {}
    placements = [p for p in obtained.get("placements") or [] if isinstance(p, dict) and p.get("policy")]
    if placements:
        got = sorted({_policy_name(str(p["policy"]), p.get("priority")) for p in placements})
        refused = any(p.get("policy_error") for p in placements)
    elif obtained.get("policies"):
        got = sorted({str(p) for p in obtained["policies"]})
        got = [asked if p == config.get("policy") else p for p in got]
        refused = False
    else:
        return asked
    if got == [asked] and not refused:
        return asked
    if config.get("policy") in (None, "unknown"):  # recovered: nothing asked that we know of
        return "+".join(got)
    return f"{'+'.join(got)} — {asked} {'partly refused' if asked in got else 'refused'}"


# Run.describe() is the describe room's (describe/notebook.py fills this when imported): the
# store never imports describe, the arrow stays one way (tests/test_architecture.py)
DESCRIBERS: dict[str, Callable[..., Any]] = {}


DESCRIBER_MODULE = "jitterlab.describe.notebook"


@dataclass
class Run:
    """A stored run: its metadata and, loaded on first use, its samples."""

    def __repr__(self) -> str:  # short: run.json stays in run.meta
        rows = (self.meta.get("samples") or {}).get("rows")
        what = "histogram only" if self.histogram_only else f"{rows:,} samples" if rows is not None else "?"
        name = f" {self.name!r}" if self.name else ""
        return f"<Run {self.id}{name}: {self.what}, {what}, {self.meta.get('status')}>"

    def describe(self) -> Any:
        """What ``jitterlab describe RUN`` prints, as an object: ``str()`` is the text,
        ``.to_dict()`` the JSON of ``describe --json``, ``.to_pandas()`` the summary."""
        if "describe" not in DESCRIBERS:
            import importlib

            importlib.import_module(DESCRIBER_MODULE)
        return DESCRIBERS["describe"](self)

    path: Path
    meta: dict[str, Any]
    verify: bool = True
    _table: pa.Table | None = field(default=None, repr=False)
    # the samples file once verified in this process (verified_samples_path): checked once
    # per command, however many passes read it
    _verified: Path | None = field(default=None, repr=False, compare=False)

    @property
    def id(self) -> str:
        return str(self.meta["id"])

    @property
    def name(self) -> str | None:
        """The run's human name (``--name``, ``merge --as``, ``rename``), or None."""
        name = self.meta.get("name")
        return str(name) if name else None

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.meta.get("config") or {})

    @property
    def partial(self) -> bool:
        return self.meta.get("status") == "partial"

    @property
    def requested_policy_label(self) -> str:
        """The scheduling policy asked for, with its priority for fifo/rr ("rr 90")."""
        c = self.config
        policy = str(c.get("policy", "other"))
        return f"{policy} {c['priority']}" if policy in ("fifo", "rr") and c.get("priority") else policy

    @property
    def policy_label(self) -> str:
        """The scheduling policy the kernel granted (``obtained`` in run.json), with its
        priority for fifo/rr ("rr 90"); when that is not what was asked for, the refusal is
        part of the name: "other — rr 90 refused" (some threads refused: "partly refused").
        Runs that do not record what they obtained (imports, models) carry what was asked."""
        return obtained_policy_label(self.meta)

    @property
    def label(self) -> str:
        """Short human name: the run's name when it has one, then what it is (technique, pairs
        and policy; for a merged or imported run, its sources: :meth:`what`)."""
        return f"{self.name} ({self.what})" if self.name else self.what

    @property
    def what(self) -> str:
        """What the run is: technique, pairs and policy, e.g. ``mutex ×1 rr 90``; a merge
        names its sources' labels, an import its file and format."""
        c = self.config
        if c.get("runtime") == "merge":
            sources = (self.meta.get("merge") or {}).get("sources") or []
            labels = [str(s.get("label") or s.get("name") or "?") for s in sources]
            shown = ", ".join(labels[:3]) + (f", … ({len(labels)})" if len(labels) > 3 else "")
            return f"merge of {shown}" if labels else f"merge {c.get('technique', '?')}"
        if c.get("runtime") == "import":
            return f"import of {Path(str(c.get('source', '?'))).name} ({c.get('source_format', '?')})"
        return f"{self.technique_label} ×{c.get('pairs', '?')} {self.policy_label}"

    @property
    def technique_label(self) -> str:
        """The technique with its series or variant (wait strategy, dispatcher) and collector,
        e.g. ``pekko/throughput-1[g1]``."""
        c = self.config
        what = str(c.get("technique", "?"))
        if c.get("series") or c.get("variant"):
            what += f"/{c.get('series') or c.get('variant')}"
        if c.get("gc"):
            what += f"[{c['gc']}]"
        return what

    @property
    def histogram_only(self) -> bool:
        """True for imported HdrHistogram logs: percentiles but no raw samples."""
        return self.meta.get("samples") is None and "histogram" in self.meta

    def file_problem(self) -> str:
        """What is wrong with the run's data file at a glance ("" when nothing is). The
        file is looked at without following a link: a run's files are plain files of its
        folder (issue 42 items 4-5), never another run's reached through a link."""
        info = self.meta.get("samples")
        if info is None:
            name = str((self.meta.get("histogram") or {}).get("file", HISTOGRAM_FILE))
            problem = _plain_file_problem(self.path / name)
            return f"{self.path / name}: histogram file is missing" if problem == "missing" else problem
        path = self.path / str(info.get("file", SAMPLES_FILE))
        problem = _plain_file_problem(path)
        if problem:
            return f"{path}: samples file is missing" if problem == "missing" else problem
        size = os.lstat(path).st_size
        if "bytes" in info and size != info["bytes"]:
            return f"{path}: corrupt (size {size} bytes, run.json recorded {info['bytes']}; truncated?)"
        return ""

    @property
    def table(self) -> pa.Table:
        if self._table is None:
            self._table = _read_samples(self)
        return self._table

    @property
    def loaded(self) -> bool:
        """True when the samples are in memory (read, or a time range of them), so an
        analysis uses them instead of streaming the file."""
        return self._table is not None

    def column(self, name: str) -> np.ndarray:
        import numpy as np

        column: np.ndarray = np.asarray(self.table.column(name).to_numpy())
        return column

    @cached_property
    def latency_ns(self) -> np.ndarray:
        """t_recv_ns - t_send_ns of every sample (int64)."""
        latency: np.ndarray = self.column("t_recv_ns") - self.column("t_send_ns")
        return latency

    @property
    def t_send_ns(self) -> np.ndarray:
        return self.column("t_send_ns")

    @property
    def t_recv_ns(self) -> np.ndarray:
        return self.column("t_recv_ns")

    @property
    def pair(self) -> np.ndarray:
        return self.column("pair")

    @property
    def seq(self) -> np.ndarray:
        return self.column("seq")

    def dataframe(self) -> pd.DataFrame:
        """Every sample as a DataFrame with a ``latency_ns`` column added."""
        df: pd.DataFrame = self.table.to_pandas()
        df["latency_ns"] = df["t_recv_ns"] - df["t_send_ns"]
        return df


def read_run_json(directory: Path) -> dict[str, Any]:
    path = directory / RUN_JSON
    try:
        meta = json.loads(path.read_bytes())  # NaN accepted: runs stored by earlier versions may hold it
    except FileNotFoundError as e:
        raise JitterlabError(f"{directory}: not a run (no {RUN_JSON})") from e
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise CorruptRunError(f"{path}: corrupt JSON ({e})") from e
    except OSError as e:
        raise CorruptRunError(f"{path}: unreadable ({os_error_text(e)})") from e
    return validate_run_json(meta, path)

"""The run format in one place: file and field names, the schema version, the metadata
blocks every run carries, and the validation of a run.json read from disk.

docs/run-format.md describes the same fields for people; ``schemas/`` beside this module
holds the machine-readable JSON Schema of what the harnesses write (``harness.json``),
which the C++, Java and Python writers are all tested against.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from jitterlab.core.errors import CorruptRunError
from jitterlab.core.version import __version__, build_info

SCHEMA_VERSION = 1
RUN_JSON = "run.json"
SAMPLES_FILE = "samples.parquet"
HISTOGRAM_FILE = "histogram.hlog"
SAMPLE_COLUMNS = ("pair", "seq", "t_send_ns", "t_recv_ns")
SUMMARY_KEYS = ("count", "min", "max", "mean", "std", "p50", "p90", "p99", "p99_9", "p99_99", "p99_999")

# A run id is a file name and a command-line word: keep it to this set.
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_id_part(text: str) -> str:
    """``text`` reduced to letters, digits, '.', '_' and '-' (at most 48 characters)."""
    return _ID_UNSAFE.sub("_", text).strip("._-")[:48] or "x"


def tool_block() -> dict[str, Any]:
    """Which jitterlab made a run."""
    info = build_info()
    return {
        "name": "jitterlab",
        "version": __version__,
        "git_commit": info.get("git_commit"),
        "compiler": info.get("compiler"),
    }


def run_meta(
    run_id: str,
    started: dt.datetime,
    environment: dict[str, Any] | None,
    doctor: list[dict[str, str]] | None,
    **blocks: Any,
) -> dict[str, Any]:
    """The blocks every run carries, whatever produced it.

    ``environment`` and ``doctor`` describe the machine the samples were measured on; an
    import passes None for both (it was not measured here) and says where it came from in
    its ``config.source`` instead.
    """
    meta: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": "run",
        "id": run_id,
        "created_utc": started.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds"),
        "status": "complete",
        "partial_reason": "",
        "tool": tool_block(),
    }
    if environment is not None:
        meta["environment"] = environment
    if doctor is not None:
        meta["doctor"] = doctor
    return meta | blocks


def harness_schema() -> dict[str, Any]:
    """The JSON Schema of ``harness.json`` (what every harness writes beside its samples)."""
    text = resources.files("jitterlab.store").joinpath("schemas/harness.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


# --- validation of run.json ------------------------------------------------------------

_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "kind": (str,),
    "created_utc": (str,),
    "status": (str,),
    "partial_reason": (str,),
    "config": (dict,),
    "obtained": (dict,),
    "environment": (dict,),
    "floor": (dict,),
    "timing": (dict,),
    "summary": (dict,),
    "tool": (dict,),
    "doctor": (list,),
    "harness": (dict,),
}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate_run_json(meta: Any, path: Path) -> dict[str, Any]:
    """``meta`` checked against the run format (types, not only presence); a
    :class:`CorruptRunError` naming the file and the field otherwise."""
    if not isinstance(meta, dict) or not isinstance(meta.get("id"), str):
        raise CorruptRunError(f"{path}: not a jitterlab run description")
    version = meta.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise CorruptRunError(f"{path}: schema_version must be an integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise CorruptRunError(
            f"{path}: schema_version {version} is newer than this jitterlab reads ({SCHEMA_VERSION})"
        )
    if not _ID_UNSAFE.sub("", meta["id"]) == meta["id"] or not meta["id"]:
        raise CorruptRunError(f"{path}: id {meta['id']!r} has characters a run id may not hold")
    for key, types in _TYPES.items():
        if key in meta and meta[key] is not None and not isinstance(meta[key], types):
            raise CorruptRunError(
                f"{path}: '{key}' must be {types[0].__name__}, got {type(meta[key]).__name__}"
            )
    samples = meta.get("samples")
    if samples is not None:
        if not isinstance(samples, dict):
            raise CorruptRunError(f"{path}: 'samples' must be an object or null")
        for key in ("rows", "bytes"):
            if key in samples and not (isinstance(samples[key], int) and samples[key] >= 0):
                raise CorruptRunError(f"{path}: 'samples.{key}' must be a non-negative integer")
        for key in ("file", "sha256"):
            if key in samples and not isinstance(samples[key], str):
                raise CorruptRunError(f"{path}: 'samples.{key}' must be a string")
        if "/" in str(samples.get("file", "")) or str(samples.get("file", "")).startswith("."):
            raise CorruptRunError(f"{path}: 'samples.file' must name a file inside the run folder")
    elif not isinstance(meta.get("histogram"), dict):
        raise CorruptRunError(f"{path}: a run needs 'samples' or 'histogram'")
    latency = (meta.get("summary") or {}).get("latency_ns")
    if not isinstance(latency, dict):
        raise CorruptRunError(f"{path}: 'summary.latency_ns' is missing")
    for key in SUMMARY_KEYS:
        value = latency.get(key)
        if value is not None and not _number(value):
            raise CorruptRunError(f"{path}: 'summary.latency_ns.{key}' must be a number")
    if not isinstance(latency.get("count", 0), int):
        raise CorruptRunError(f"{path}: 'summary.latency_ns.count' must be an integer")
    warnings = (meta.get("obtained") or {}).get("warnings", [])
    if not isinstance(warnings, list):
        raise CorruptRunError(f"{path}: 'obtained.warnings' must be a list")
    config = meta.get("config") or {}
    pairs = config.get("pairs")
    if pairs is not None and not (isinstance(pairs, int) and pairs >= 1):
        raise CorruptRunError(f"{path}: 'config.pairs' must be a positive integer")
    return meta

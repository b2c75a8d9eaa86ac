"""The run format in one place: file and field names, the schema version, the metadata
blocks every run carries, and the validation of a run.json read from disk.

docs/run-format.md describes the same fields for people; ``schemas/`` beside this module
holds the machine-readable JSON Schema of what the harnesses write (``harness.json``),
which the C++, Java and Python writers are all tested against.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

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


_RUN_ID = re.compile(r"[0-9]{8}-[0-9]{6}-[A-Za-z0-9._-]{1,200}")


def valid_run_id(run_id: object) -> bool:
    """Whether ``run_id`` is one the store makes (``new_run_id``): a time stamp, then letters,
    digits, '.', '_' and '-' only, so it is one file name in the store and never a path."""
    return isinstance(run_id, str) and _RUN_ID.fullmatch(run_id) is not None and ".." not in run_id


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


@functools.cache
def harness_schema() -> dict[str, Any]:
    """The JSON Schema of ``harness.json`` (what every harness writes beside its samples)."""
    text = resources.files("jitterlab.store").joinpath("schemas/harness.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def _harness_validator() -> Any:
    return jsonschema.Draft202012Validator(harness_schema())


def strict_json(data: bytes | str) -> Any:
    """JSON as the standard has it: NaN and Infinity literals are refused (Python's json
    module accepts them; the native reader and most others do not)."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(data, parse_constant=refuse)


def read_harness_json(path: Path) -> tuple[dict[str, Any], str]:
    """(harness.json checked against its schema, why it was set aside). A file that does
    not match is set aside — ({}, reason) — so the samples are still stored, marked partial."""
    if not path.exists():
        return {}, "harness.json missing (the tool died)"
    try:
        doc = strict_json(path.read_bytes())
        errors = [e for e in _harness_validator().iter_errors(doc) if not _new_warning_code(e)]
    except (OSError, ValueError, RecursionError) as e:
        return {}, f"harness.json unreadable ({e})"
    if errors:
        first = jsonschema.exceptions.best_match(errors)
        where = "/".join(str(p) for p in first.absolute_path) or "top level"
        return {}, f"harness.json does not match its schema at {where}: {first.message}"
    return dict(doc), ""


def _new_warning_code(error: Any) -> bool:
    """A warning code outside this jitterlab's set (a newer harness wrote it): kept as written,
    never a reason to set harness.json aside and mark the run partial."""
    path = list(error.absolute_path)
    return error.validator == "enum" and len(path) == 3 and path[0] == "warnings" and path[2] == "code"


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
    if pairs is not None and not (isinstance(pairs, int) and not isinstance(pairs, bool) and pairs >= 1):
        raise CorruptRunError(f"{path}: 'config.pairs' must be a positive integer")
    _check_types(config, CONFIG_TYPES, "config", path)
    _check_types(
        meta.get("timing") or {},
        dict.fromkeys(("started_realtime_ns", "t_start_ns", "t_end_ns"), int),
        "timing",
        path,
    )
    for block, fields in NESTED_BLOCKS.items():
        _check_types(meta.get(block) or {}, fields, block, path)
    return meta


# Fields that readers use, with their type (None is always allowed: "not known").
CONFIG_TYPES: dict[str, type] = {
    "runtime": str,
    "technique": str,
    "policy": str,
    "series": str,
    "variant": str,
    "gc": str,
    "source": str,
    "source_format": str,
    "priority": int,
    "samples": int,
    "samples_per_pair": int,  # the name before "samples" (older runs)
}
NESTED_BLOCKS: dict[str, dict[str, type]] = {
    "floor": {"clock_overhead_ns": dict, "c2c_one_way_ns": dict},
    "obtained": {"policies": list, "placements": list, "spin_mode": str},
    "environment": {"host": str, "cpu_model": str, "kernel": str, "governors": dict, "virtualization": str},
    "histogram": {"file": str, "windows": list, "intervals": int},
    "jvm": {"pause_events": list},
    "trace": {"available": bool, "file": str, "events": dict, "spike_cpu": dict},
}


def _check_types(block: Any, types: dict[str, type], name: str, path: Path) -> None:
    if not isinstance(block, dict):
        raise CorruptRunError(f"{path}: '{name}' must be an object")
    for key, kind in types.items():
        value = block.get(key)
        if value is None:
            continue
        wrong = not isinstance(value, kind) or (kind is int and isinstance(value, bool))
        if wrong:
            raise CorruptRunError(
                f"{path}: '{name}.{key}' must be {kind.__name__}, got {type(value).__name__}"
            )


def samples_per_pair(config: dict[str, Any]) -> int | None:
    """Samples per pair (per series) a run asked for, or recorded when nothing was asked:
    ``config.samples``, named ``samples_per_pair`` by runs stored before it."""
    value = config.get("samples", config.get("samples_per_pair"))
    return int(value) if isinstance(value, int) else None

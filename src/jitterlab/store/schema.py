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
def _schema(name: str) -> dict[str, Any]:
    text = resources.files("jitterlab.store").joinpath(f"schemas/{name}.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def _validator(name: str) -> Any:
    import jsonschema  # here, not at the top: an empty store is listed without it (issue 28 item 3)

    return jsonschema.Draft202012Validator(_schema(name))


def _best_match(errors: Any) -> Any:
    import jsonschema

    return jsonschema.exceptions.best_match(errors)


def harness_schema() -> dict[str, Any]:
    """The JSON Schema of ``harness.json`` (what every harness writes beside its samples)."""
    return _schema("harness")


def summary_fields(figures: Any) -> dict[str, Any]:
    """A summary in ``--json`` output under the name run.json gives it, ``summary.latency_ns``
    (one name everywhere); ``summary_ns``, the name ``--json`` used before, stays beside it so
    that readers of the old name keep working (docs/run-format.md). ``summary.unresolved``
    lists the percentile keys the count does not resolve (docs/statistics.md): their figure
    is the type-7 interpolation, kept for those readers, never a figure to publish."""
    from jitterlab.core.percentiles import unresolved_keys

    return {"summary": {"latency_ns": figures, "unresolved": unresolved_keys(figures)}, "summary_ns": figures}


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
        errors = [e for e in _validator("harness").iter_errors(doc) if not _new_warning_code(e)]
    except (OSError, ValueError, RecursionError) as e:
        return {}, f"harness.json unreadable ({e})"
    if errors:
        first = _best_match(errors)
        where = "/".join(str(p) for p in first.absolute_path) or "top level"
        return {}, f"harness.json does not match its schema at {where}: {first.message}"
    return dict(doc), ""


def _new_warning_code(error: Any) -> bool:
    """A warning code outside this jitterlab's set (a newer harness wrote it): kept as written,
    never a reason to set harness.json aside and mark the run partial."""
    path = list(error.absolute_path)
    return error.validator == "enum" and len(path) == 3 and path[0] == "warnings" and path[2] == "code"


# --- validation of run.json ------------------------------------------------------------


def run_schema() -> dict[str, Any]:
    """The JSON Schema of ``run.json``: every member a reader uses, with its type."""
    return _schema("run")


def draft_problem(meta: dict[str, Any]) -> str | None:
    """Why a draft run.json left by a killed recorder may not be stored (None when it may):
    its members checked against the run format's schema, except those storing fills in
    (``schema_version``, ``samples``, ``summary``). A draft is outside input: ``config: true``
    was an internal error in ``recover``."""
    filled = ("schema_version", "samples", "summary")
    errors = [
        e
        for e in _validator("run").iter_errors(meta)
        if not (e.absolute_path and e.absolute_path[0] in filled)
        and not (e.validator == "required" and not e.absolute_path)
    ]
    if not errors:
        return None
    first = _best_match(errors)
    where = ".".join(str(p) for p in first.absolute_path) or "top level"
    return f"'{where}' {_schema_message(first)}"


def validate_run_json(meta: Any, path: Path) -> dict[str, Any]:
    """``meta`` checked against the run format's JSON Schema (types of every member a reader
    uses, list items included) and the rules a schema cannot say; a :class:`CorruptRunError`
    naming the file and the member's path otherwise (issue 24 item 8)."""
    if not isinstance(meta, dict) or not isinstance(meta.get("id"), str):
        raise CorruptRunError(f"{path}: not a jitterlab run description")
    version = meta.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise CorruptRunError(
            f"{path}: schema_version {version} is newer than this jitterlab reads ({SCHEMA_VERSION})"
        )
    errors = list(_validator("run").iter_errors(meta))
    if errors:
        first = _best_match(errors)
        where = ".".join(str(p) for p in first.absolute_path) or "top level"
        raise CorruptRunError(f"{path}: '{where}' {_schema_message(first)}")
    if _ID_UNSAFE.sub("", meta["id"]) != meta["id"]:
        raise CorruptRunError(f"{path}: id {meta['id']!r} has characters a run id may not hold")
    samples = meta.get("samples")
    if samples is not None:
        name = str(samples.get("file", SAMPLES_FILE))
        if not name or "/" in name or "\x00" in name or name.startswith("."):
            raise CorruptRunError(f"{path}: 'samples.file' must name a file inside the run folder")
        if len(name.encode("utf-8", "surrogatepass")) > 255:  # NAME_MAX: stat() would fail (fuzz, issue 42)
            raise CorruptRunError(f"{path}: 'samples.file' is longer than a file name may be")
    elif not isinstance(meta.get("histogram"), dict):
        raise CorruptRunError(f"{path}: a run needs 'samples' or 'histogram'")
    for block in ("histogram", "trace"):  # issue 42 item 5 and its leftover: as samples.file
        member = meta.get(block)
        if isinstance(member, dict) and member.get("file") is not None:
            name = str(member["file"])
            if not name or "/" in name or "\x00" in name or name.startswith("."):
                raise CorruptRunError(f"{path}: '{block}.file' must name a file inside the run folder")
            if len(name.encode("utf-8", "surrogatepass")) > 255:
                raise CorruptRunError(f"{path}: '{block}.file' is longer than a file name may be")
    return meta


def _schema_message(error: Any) -> str:
    """A schema error in a few words, without echoing a (possibly huge or hostile) value."""
    if error.validator == "type":
        wanted = error.validator_value
        kinds = [wanted] if isinstance(wanted, str) else [k for k in wanted if k != "null"]
        return f"must be {' or '.join(kinds)}, got {_json_type(error.instance)}"
    if error.validator == "required":
        return "is missing a member: " + str(error.message).split(" is a required property")[0][:60]
    if error.validator == "minimum":
        return f"must be at least {error.validator_value}"
    if error.validator == "minLength":
        return "must not be empty"
    return "does not match the run format"


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def samples_per_pair(config: dict[str, Any]) -> int | None:
    """Samples per pair (per series) a run asked for, or recorded when nothing was asked:
    ``config.samples``, named ``samples_per_pair`` by runs stored before it."""
    value = config.get("samples", config.get("samples_per_pair"))
    return int(value) if isinstance(value, int) else None

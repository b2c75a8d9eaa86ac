"""`jitterlab inject`: the injection proxy and its validation (thesis ch. 6 §3.3, §7.1).

The proxy is the native ``jitterlab-inject proxy``. Validation sends timestamped
datagrams with the native probe over loopback in three settings — straight to the
receiver, through a pass-through proxy (zero model) and through the model's proxy — and
stores each as a run. The realised delays are then compared with the model
(:mod:`jitterlab.simulate.validation`); the describe room draws the comparison.
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitterlab.core.errors import JitterlabError
from jitterlab.core.programs import native_program
from jitterlab.core.warnings import Warn
from jitterlab.measure.jobs import NativeJob, common_meta, run_native_job
from jitterlab.measure.runner import Context, Done, Outcome, Plan, Point, run_plan
from jitterlab.simulate.model import load_model
from jitterlab.simulate.validation import Validation, compare_to_model
from jitterlab.store import ResultsStore, Run
from jitterlab.store.rawfile import RawSamples, read_raw_samples

SETTINGS = ("direct", "pass-through", "model")


def free_udp_port() -> int:
    """A loopback UDP port free right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proxy_argv(
    model: Path | None,
    listen: str,
    forward: str,
    tcp: bool = False,
    seed: int = 0,
    reorder: bool = False,
    extra: list[str] | None = None,
) -> list[str]:
    """The command line of the native proxy (``model`` None: a pass-through stage)."""
    argv = [str(native_program("jitterlab-inject")), "proxy", "--listen", listen, "--forward", forward]
    argv += ["--model", str(model)] if model is not None else ["--zero"]
    argv += ["--seed", str(seed)]
    if tcp:
        argv.append("--tcp")
    if reorder:
        argv.append("--reorder")
    return argv + (extra or [])


class ProxyProcess:
    """The native proxy as a child process: started and listening on construction,
    stopped with SIGINT by ``stop()``, which returns its final statistics."""

    def __init__(self, argv: list[str], workdir: Path) -> None:
        self.stats_json = workdir / "proxy.json"
        self.proc = subprocess.Popen(
            [*argv, "--stats-json", str(self.stats_json), "--stats-interval", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        line = self.proc.stdout.readline()
        if not line.startswith("listening"):
            self.proc.wait()
            last = (self.proc.stderr.read().strip().splitlines() or [f"exit code {self.proc.returncode}"])[-1]
            raise JitterlabError(last.split(": error: ", 1)[-1])

    def stop(self) -> dict[str, Any]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return json.loads(self.stats_json.read_text()) if self.stats_json.exists() else {}


@contextmanager
def running_proxy(argv: list[str]) -> Iterator[ProxyProcess]:
    """A proxy for the duration of a ``with`` block (stopped on the way out, whatever happens)."""
    with tempfile.TemporaryDirectory(prefix="jitterlab-inject-") as tmp:
        proxy = ProxyProcess(argv, Path(tmp))
        try:
            yield proxy
        finally:
            proxy.stop()


@dataclass(frozen=True)
class ValidateOptions:
    model_path: Path
    count: int = 10_000
    rate_hz: int = 1_000
    size: int = 64
    seed: int = 1
    reorder: bool = False
    busy_poll: bool = False


@dataclass
class SettingResult:
    setting: str
    run: Run  # end to end, as the probe measured it
    proxy_stats: dict[str, Any] = field(default_factory=dict)
    injected: Run | None = None  # the proxy's own record of what it added


def probe_job(o: ValidateOptions, setting: str, target: str, receive: str, meta: dict[str, Any]) -> NativeJob:
    config = {
        "runtime": "udp-loopback",
        "technique": f"inject-{setting}",
        "pairs": 1,
        "policy": "other",
        "samples": o.count,
        "rate_hz": o.rate_hz,
        "datagram_bytes": o.size,
        "setting": setting,
        "model": str(o.model_path) if setting == "model" else None,
        "seed": o.seed,
        "reorder": o.reorder,
        "busy_poll": o.busy_poll,
    }

    def extra(harness: dict[str, Any]) -> dict[str, Any]:
        keys = ("sent", "received", "lost", "duplicates", "foreign", "send_errors")
        return {"probe": {k: harness.get(k) for k in keys}}

    args = ["probe", "--target", target, "--receive", receive, "--samples", str(o.count)]
    args += ["--rate", str(o.rate_hz), "--size", str(o.size)]
    return NativeJob(
        program="jitterlab-inject",
        args=args,
        config=config,
        id_parts=("inject", setting),
        label=f"inject {setting}",
        total=o.count,
        extra_meta=extra,
        meta=meta,
    )


def _setting_point(o: ValidateOptions, setting: str) -> Point:
    """One setting: the probe's run, and for a proxy its own record of what it added."""

    def execute(ctx: Context) -> Done:
        print(f"inject validate: {setting} ({o.count:,} datagrams at {o.rate_hz:,} Hz)", file=sys.stderr)
        receive = f"127.0.0.1:{free_udp_port()}"
        if setting == "direct":
            return run_native_job(ctx, probe_job(o, setting, receive, receive, {}))
        listen = f"127.0.0.1:{free_udp_port()}"
        model = o.model_path if setting == "model" else None
        with tempfile.TemporaryDirectory(prefix="jitterlab-record-") as tmp:
            record = Path(tmp) / "injected.jlraw"
            extra = ["--record", str(record)] + (["--busy-poll"] if o.busy_poll else [])
            argv = proxy_argv(model, listen, receive, seed=o.seed, reorder=o.reorder, extra=extra)
            with running_proxy(argv) as proxy:

                def stop_proxy(_raw: RawSamples, _meta: dict[str, Any], _staging: Path) -> dict[str, Any]:
                    # The proxy's statistics exist once it stops: stop it before the run is stored.
                    return {"proxy": proxy.stop()}

                job = probe_job(o, setting, listen, receive, {})
                job.finish_meta = stop_proxy
                done = run_native_job(ctx, job)
            if done.runs and record.exists():
                done.runs.append(store_injected(ctx.store, record, done.runs[0], setting))
        time.sleep(0.2)  # let this setting's sockets close before the next
        return done

    return Point(f"inject {setting}", execute)


def settings_of(runs: list[Run]) -> dict[str, SettingResult]:
    """The stored runs of a validation, by setting."""
    results: dict[str, SettingResult] = {}
    for run in runs:
        setting = str(run.config.get("setting"))
        if run.config.get("technique") == f"inject-{setting}":
            results[setting] = SettingResult(setting, run, dict(run.meta.get("proxy") or {}))
    for run in runs:
        setting = str(run.config.get("setting"))
        if run.config.get("technique") == f"inject-{setting}/injected" and setting in results:
            results[setting].injected = run
    return results


def store_injected(store: ResultsStore, record: Path, probe_run: Run, setting: str) -> Run:
    """The proxy's own record (arrival at the proxy → release) as a run of its own: the
    delay the injector actually added, free of the loopback floor."""
    staging = store.staging_dir(store.new_run_id("inject", setting, "injected"), lock=True)
    run_id = staging.name
    meta = common_meta(run_id, dt.datetime.now(dt.timezone.utc)) | {
        "status": "complete",
        "partial_reason": "",
        "config": probe_run.config | {"technique": f"inject-{setting}/injected", "probe_run": probe_run.id},
        "proxy": probe_run.meta.get("proxy", {}),
    }
    return store.commit(staging, read_raw_samples(record), meta)


def validation_plan(o: ValidateOptions) -> Plan:
    """Straight to the receiver, through a pass-through proxy and through the model's."""
    return Plan("inject validate", [_setting_point(o, setting) for setting in SETTINGS])


def validate(
    store: ResultsStore, o: ValidateOptions, warn: Warn
) -> tuple[Outcome, dict[str, SettingResult], Validation | None]:
    """The three settings measured, and the model's proxy compared with the model (None
    when a setting is missing: interrupted, or its probe stored nothing)."""
    model = load_model(o.model_path)
    outcome = run_plan(validation_plan(o), store, warn)
    results = settings_of(outcome.runs)
    if outcome.interrupted or set(results) != set(SETTINGS):
        return outcome, results, None
    through = results["model"]
    if through.injected is None:
        raise JitterlabError("the model's proxy left no record of what it injected")
    return (
        outcome,
        results,
        compare_to_model(
            model,
            through.injected,
            through.run,
            passthrough=results["pass-through"].run,
            direct=results["direct"].run,
            seed=o.seed,
            reorder=o.reorder,
        ),
    )

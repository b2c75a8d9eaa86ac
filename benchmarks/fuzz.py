"""Fuzz every parser of outside input: mutated files must be read or refused with one
JitterlabError line, never an internal error, a hang or a crash.

Targets (each takes the bytes of a file):
  run-json   run.json of a small stored run, then what `show` and `describe` compute from it
  model      a latency model: the Python validator and the native engine (jitterlab.Injector)
             must both accept or both refuse it, and neither may fail otherwise
  hlog       an HdrHistogram interval log (import)
  csv        a CSV of samples (import)
  raw        the harnesses' raw sample file
  harness    harness.json as the job runner merges it into run.json
  frame-log  a motion-to-photon frames.csv (mtp ingest) and a tracker.csv of quaternions
  hosts      a net bench hosts.toml (names, ssh targets, addresses, agents, clock)
  ssq        a Simulator Sickness Questionnaire CSV (ssq score, with --pre-post and groups)
  topo-state a net topology's state file (--topo NAME, topo down/list)
  draft      a staging folder left by a killed recorder (run.draft.json and a sample part),
             as `recover` stores it, then `show` of what was stored
  ring       a monitor ring's shared-memory file (header and slots) as `serve` opens and
             drains it (the native reader; a crash here ends the process: the input being
             run is kept as findings/.../ring-current.input). A file shorter than the
             header or without its magic is refused by the reader only after it has waited
             1 s for a creator that never comes (by design: how a server and a writer started
             together meet); the header is parsed here first and such an input goes to the
             reader once per run (the refusal checked), the others are counted as "header
             refusals" and not waited for
  options    the text of a duration / whole-number / number option (core.options): refused
             in one line or a value inside the option's range
  durations  the text given to every duration option of the CLI, through the real parser
             (`bench --pause TEXT`, `hiccup --duration=TEXT`, `describe --window`, ...):
             exit 2 with one line, or a value the measuring code's parser takes too
  cluster    a --cluster address (parsed, never connected to) and the first bytes a service
             at it sends, through the scheduler probe over a socket pair: a Dask handshake
             or one line naming what answered
  staging    a leftover killed after its samples file was complete (issue 42 item 8): a
             mutated samples.parquet beside harness.json, as `recover` stores it, then
             `show` and `runs --strict` of what was stored
  run-files  the run.json fields that name files (samples.file, histogram.file, trace.file) set to odd
             names (absolute, `..`, links, folders, empty, long), then `show` and `describe`

Every target runs in this process, no subprocess per input: a JitterlabError is a
refusal (fine), any other exception a finding. The files a target reads are written in a
private folder on tmpfs (/dev/shm when there is one: --workdir), or handed over as bytes
where the parser reads a stream (hlog).

Mutations start from valid seed files: byte flips, inserts, deletes, truncations and chunk
copies, and for JSON files a node replaced by a value of another type. Seeded: a run is
reproducible from --seed. A slow input (over --hang-ms) counts as a hang.

    python benchmarks/fuzz.py --seconds 600            # every target, in turn
    python benchmarks/fuzz.py --target model --execs 100000 --seed 7
    python benchmarks/fuzz.py --seconds 300 --jobs 4    # 4 processes, seeds 1..4

It prints, per target, executions, executions per second, the projected time to 10^6
executions at that rate (one job), distinct inputs, findings and hangs; findings are
written to --findings (default ./fuzz-findings/) with the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import io
import json
import math
import os
import random
import shutil
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.cli.main import build_parser
from jitterlab.cluster import engine as cluster_probe
from jitterlab.core.errors import CorruptRunError, JitterlabError
from jitterlab.core.options import Range, parse_duration_s, parse_integer, parse_number
from jitterlab.core.units import parse_duration_ns
from jitterlab.describe.analysis import describe_run, run_summary
from jitterlab.describe.export import ExportOptions, export_run
from jitterlab.describe.text import describe_text, show_text
from jitterlab.measure.jobs import obtained, recover
from jitterlab.monitor import recorder, ssq
from jitterlab.mtp import framelog
from jitterlab.net import nodes as net_nodes
from jitterlab.net import topo
from jitterlab.simulate.injector import Injector
from jitterlab.simulate.model import load_model, model_to_json, parametric_model
from jitterlab.store import ResultsStore, load_run
from jitterlab.store.hdr.streams import read_figures
from jitterlab.store.ingest import import_csv
from jitterlab.store.rawfile import RECORD_DTYPE, read_raw_samples, write_raw_samples
from jitterlab.store.runs import verified_samples_path
from jitterlab.store.schema import RUN_JSON, SAMPLES_FILE, read_harness_json
from jitterlab.store.staging import DRAFT_JSON, PARTS_DIR

# the monitor ring's header (native/src/monitor.cpp, docs/monitor.md): magic at offset 0,
# then version, entry size, capacity and the hint; 384 bytes with its three aligned indices
RING_MAGIC = 0x6A6C6D6F6E697431  # "jlmonit1", little-endian u64
RING_HEADER_BYTES = 384
PROJECTED_EXECUTIONS = 1_000_000

ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**63,
    -(2**63),
    1e308,
    -1e-308,
    "",
    "x",
    "1",
    [],
    {},
    [5],
    {"a": 1},
]


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        pos = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(pos, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[pos:pos] = bytes([rng.randrange(256)]) * rng.randint(1, 8)
        elif op == 2 and b:
            del b[pos : pos + rng.randint(1, 16)]
        elif op == 3:
            del b[pos:]
        elif op == 4 and b:
            start = rng.randrange(len(b))
            b[pos:pos] = b[start : start + rng.randint(1, 64)]
    return bytes(b)


def _nodes(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _nodes(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:20]):
            out += _nodes(v, (*path, i))
    return out


def mutate_json(data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        return mutate_bytes(data, rng)
    doc = json.loads(data)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(_nodes(doc)[1:] or [()])
        if not path:
            doc = copy.deepcopy(rng.choice(ODD_VALUES))
            break
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if rng.random() < 0.15 and isinstance(parent, dict):
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice([*ODD_VALUES, float("nan"), float("inf")]))
    return json.dumps(doc).encode()


class Targets:
    """Seed files and the code under test, in a private temporary folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        rng = np.random.default_rng(0)
        latency = np.concatenate([rng.normal(10_000, 500, 190), rng.normal(80_000, 5_000, 10)]).astype(
            np.int64
        )
        records = np.zeros(latency.size, dtype=RECORD_DTYPE)
        records["seq"] = np.arange(latency.size)
        records["t_send_ns"] = 1_000_000_000 + np.arange(latency.size) * 10_000_000
        records["t_recv_ns"] = records["t_send_ns"] + latency
        self.raw_seed = root / "seed.jlraw"
        write_raw_samples(self.raw_seed, records)
        store = ResultsStore(root / "store")
        csv_seed = root / "seed.csv"
        csv_seed.write_text(
            "t_send_ns,t_recv_ns\n" + "".join(f"{s},{r}\n" for s, r in records[["t_send_ns", "t_recv_ns"]])
        )
        run = import_csv(csv_seed, store)
        self.run_dir = run.path
        self.run_json_seed = (run.path / RUN_JSON).read_bytes()
        hlog = root / "seed.hlog"
        export_run(run, "hlog", hlog, ExportOptions(window_ns=300_000_000))
        model = root / "seed-model.json"
        model.write_text(
            json.dumps(model_to_json(parametric_model(normal=(2e6, 2e5), spikes=[(2e7, 0.5)], points=16)))
        )
        self.seeds: dict[str, bytes] = {
            "run-json": self.run_json_seed,
            "model": model.read_bytes(),
            "hlog": hlog.read_bytes(),
            "csv": csv_seed.read_bytes(),
            "raw": self.raw_seed.read_bytes(),
            "harness": json.dumps(
                {
                    "placements": [
                        {"role": "sender", "pair": 0, "policy": "other", "priority": 0, "cpus": [0]}
                    ],
                    "spin_mode": "busy",
                    "mlock": {"requested": True, "obtained": True, "error": ""},
                    "warnings": [{"code": "spin-fallback", "detail": "x"}],
                }
            ).encode(),
        }
        self.csv_store = ResultsStore(root / "imports")
        logs = root / "logs"
        framelog.write_synth_logs(logs, framelog.LogSpec(duration_s=1.0), framelog.Rig(), raw=True)
        self.seeds["frame-log"] = (logs / "frames.csv").read_bytes()
        self.seeds["tracker"] = (logs / "tracker.csv").read_bytes()[:4000]

        self.seeds["hosts"] = (
            b'[[host]]\nname = "a"\naddress = "10.0.0.1"\nssh = "root@10.0.0.1"\nagent = "/usr/bin/x"\n'
            b'ssh_options = ["-p", "22"]\n[[host]]\nname = "b"\naddress = "h.example"\nssh = "b"\n'
            b'[clock]\nmode = "ptp"\nerror_ns = 1000\n'
        )
        items = ",".join(f"q{i}" for i in range(1, 17))
        rows = [
            f"p{k},{phase},g{k % 2},t{k},{','.join(str((k + i) % 4) for i in range(16))}"
            for k in range(4)
            for phase in ("pre", "post")
        ]
        self.seeds["ssq"] = (f"participant,phase,group,trial,{items}\n" + "\n".join(rows) + "\n").encode()
        topo.STATE_DIR = root / "topo-state"  # this process only: the fuzz never touches the real one
        self.topo_name = "jl-fuzz0"
        self.seeds["topo-state"] = json.dumps(
            {
                "name": self.topo_name,
                "nodes": [f"{self.topo_name}-n0", f"{self.topo_name}-n1"],
                "router": f"{self.topo_name}-r",
                "subnet": "10.213.0.0/16",
                "shape": {"rate": "10mbit"},
                "created_by_pid": 1,
                "created_s": 1.0,
                "links": [
                    {
                        "a": i,
                        "b": -1,
                        "a_addr": f"10.213.{i + 1}.2",
                        "b_addr": f"10.213.{i + 1}.1",
                        "a_dev": f"v{i}",
                        "b_dev": f"r{i}",
                    }
                    for i in range(2)
                ],
            }
        ).encode()

        self.draft_store = ResultsStore(root / "drafts")
        self.draft_id = json.loads(self.run_json_seed)["id"]
        staging = self.draft_store.staging_dir(self.draft_id)
        self.draft_store.write_sample_part(
            staging, 0, 0, records["seq"], records["t_send_ns"], records["t_recv_ns"]
        )
        self.seeds["part"] = (staging / PARTS_DIR / "part-000000.parquet").read_bytes()
        self.draft_store.discard_staging(staging)
        draft = json.loads(self.run_json_seed)
        for gone in ("summary", "samples", "status"):
            draft.pop(gone, None)
        self.seeds["draft"] = json.dumps(draft).encode()

        self.ring_channel = f"fuzz-{os.getpid()}"
        recorder.unlink(self.ring_channel)
        with recorder.Monitor(self.ring_channel, capacity=64) as monitor:
            for k in range(40):
                if k % 10 == 0:
                    with monitor.trial(f"t{k}"):
                        monitor.record(1_000 + k)
                monitor.record(10_000 + k)
        self.ring_path = Path(f"/dev/shm/jitterlab-monitor-{self.ring_channel}")
        self.seeds["ring"] = self.ring_path.read_bytes()
        recorder.unlink(self.ring_channel)
        assert len(self.seeds["ring"]) == RING_HEADER_BYTES + 64 * 64, "the ring's layout changed"
        assert int.from_bytes(self.seeds["ring"][:8], "little") == RING_MAGIC, "the ring's magic changed"
        self.header_refusals = 0  # ring inputs refused by the header check here (see the docstring)
        self.seeds["options"] = b"1.5ms"
        self.seeds["durations"] = b"250us"
        # what a scheduler says first (cluster/engine.py): an 8-byte length, then msgpack
        # naming compression, python and pickle-protocol; then an address
        handshake = b"\x83\xabcompression\xc0\xa6python\x93\x03\x0b\x07\xafpickle-protocol\x05"
        self.seeds["cluster"] = len(handshake).to_bytes(8, "little") + handshake
        self.seeds["cluster-address"] = b"tcp://127.0.0.1:8786"
        self.parsers: dict[str, Any] = {}
        self.staging_store = ResultsStore(root / "leftovers")
        self.seeds["staging"] = (run.path / SAMPLES_FILE).read_bytes()
        self.seeds["run-files"] = b"samples.parquet"
        self.files_run = import_csv(csv_seed, ResultsStore(root / "named")).path
        self.files_json = json.loads((self.files_run / RUN_JSON).read_bytes())
        (root / "private.parquet").write_bytes(self.seeds["staging"])
        (self.files_run / "elsewhere").mkdir()
        (self.files_run / "linked.parquet").symlink_to(root / "private.parquet")
        self.findings = root / "findings"  # run_targets points it at --findings

    def close(self) -> None:
        recorder.unlink(self.ring_channel)

    def mutate(self, target: str, rng: random.Random) -> bytes:
        seed = self.seeds[target]
        json_like = target in ("run-json", "model", "harness", "topo-state", "draft")
        return mutate_json(seed, rng) if json_like else mutate_bytes(seed, rng)

    def run(self, target: str, data: bytes) -> None:
        getattr(self, "t_" + target.replace("-", "_"))(data)

    def _file(self, name: str, data: bytes) -> Path:
        path = self.root / name
        path.write_bytes(data)
        return path

    def t_run_json(self, data: bytes) -> None:
        (self.run_dir / RUN_JSON).write_bytes(data)
        run = load_run(self.run_dir)
        show_text(run, run_summary(run))
        if not run.histogram_only:
            describe_text(describe_run(run))

    def t_model(self, data: bytes) -> None:
        path = self._file("model.json", data)
        python_ok = native_ok = True
        python_error = native_error = ""
        try:
            load_model(path)
        except JitterlabError as e:
            python_ok, python_error = False, str(e)
        try:
            Injector(path).close()
        except JitterlabError as e:
            native_ok, native_error = False, str(e)
        if python_ok != native_ok:
            raise AssertionError(
                f"validators disagree: python {python_error or 'accepts'}; native {native_error or 'accepts'}"
            )

    def t_hlog(self, data: bytes) -> None:
        read_figures(io.BytesIO(data), "x.hlog")  # the reader takes lines of bytes: no file needed

    def t_csv(self, data: bytes) -> None:
        import_csv(self._file("x.csv", data), self.csv_store)
        for run_dir in self.csv_store.run_dirs():  # keep the folder small
            for f in run_dir.iterdir():
                f.unlink()
            run_dir.rmdir()

    def t_raw(self, data: bytes) -> None:
        read_raw_samples(self._file("x.jlraw", data))

    def t_frame_log(self, data: bytes) -> None:
        # both parsers run on every input: a refusal (JitterlabError) of the first is fine
        with contextlib.suppress(JitterlabError):
            framelog.from_frames_csv(self._file("frames.csv", data), framelog.Rig())
        framelog.tracker_check(self._file("tracker.csv", self.mutate_seed("tracker", data)), framelog.Rig())

    def mutate_seed(self, name: str, data: bytes) -> bytes:
        """A mutation of another seed, drawn from ``data`` (so a run stays reproducible)."""
        return mutate_bytes(self.seeds[name], random.Random(hashlib.sha256(data).digest()))

    def t_harness(self, data: bytes) -> None:
        harness, _ = read_harness_json(self._file("harness.json", data))  # set aside, never raised
        obtained(harness)

    def t_hosts(self, data: bytes) -> None:
        net_nodes.from_hosts(self._file("hosts.toml", data))

    def t_ssq(self, data: bytes) -> None:
        path = self._file("ssq.csv", data)
        ssq.score_file(path)
        scored = ssq.score_file(
            path, pre_post=True, group="group", trial_column="trial", exclude_pre_above=20
        )
        ssq.group_table(scored, "group")

    def t_draft(self, data: bytes) -> None:
        store = self.draft_store
        for run_dir in store.run_dirs():  # keep the store small
            shutil.rmtree(run_dir)
        staging = store.staging_root() / self.draft_id
        shutil.rmtree(staging, ignore_errors=True)
        staging = store.staging_dir(self.draft_id)
        (staging / PARTS_DIR).mkdir(mode=0o700)
        part = self.seeds["part"]
        if data and data[-1] % 4 == 0:  # now and then a damaged part beside the draft
            part = self.mutate_seed("part", data)
        (staging / PARTS_DIR / "part-000000.parquet").write_bytes(part)
        (staging / DRAFT_JSON).write_bytes(data)
        for run in recover(store, lambda _: None):
            stored = load_run(run.path)
            show_text(stored, run_summary(stored))

    def t_ring(self, data: bytes) -> None:
        if len(data) < RING_HEADER_BYTES or int.from_bytes(data[:8], "little") != RING_MAGIC:
            # no creator will ever size it or store the magic: the reader waits 1 s, then
            # refuses; the first such input of a run goes to it and must be refused
            self.header_refusals += 1
            if self.header_refusals > 1:
                return
            self._ring_native(data)
            raise AssertionError("the reader accepted a ring without its header or magic")
        self._ring_native(data)

    def _ring_native(self, data: bytes) -> None:
        self.findings.mkdir(parents=True, exist_ok=True)
        current = self.findings / "ring-current.input"
        current.write_bytes(data)  # left behind only if the native reader crashes the process
        recorder.unlink(self.ring_channel)
        fd = os.open(self.ring_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        reader = recorder.Reader(self.ring_channel, batch=256)
        try:
            reader.hint()
            for _ in range(3):
                reader.drain(stale_ns=0)
            _ = reader.dropped
        finally:
            reader.close()
            current.unlink()

    def t_options(self, data: bytes) -> None:
        text = data.decode("utf-8", "surrogateescape")  # as argv arrives
        for allowed in (Range(0, 1e6, low_open=True, unit="s"), Range(1e-6, 3600)):
            with contextlib.suppress(JitterlabError):
                seconds = parse_duration_s(text, allowed)
                if seconds not in allowed:
                    raise AssertionError(f"duration {text!r} gave {seconds} outside {allowed.describe()}")
        for whole in (Range(1, 2**31), Range(0, None)):
            with contextlib.suppress(JitterlabError):
                n = parse_integer(text, whole)
                if not isinstance(n, int) or n not in whole:
                    raise AssertionError(f"integer {text!r} gave {n!r} outside {whole.describe()}")
        allowed = Range(0, 1e9, low_open=True)
        with contextlib.suppress(JitterlabError):
            x = parse_number(text, allowed)
            if not math.isfinite(x) or x not in allowed:
                raise AssertionError(f"number {text!r} gave {x} outside {allowed.describe()}")

    # every duration option of the CLI: (argv before the option, the option, parsed again
    # by the measuring code from the text kept)
    DURATION_OPTIONS: tuple[tuple[tuple[str, ...], str, bool], ...] = (
        (("bench",), "--pause", True),
        (("bench", "--scenario", "pipeline"), "--interval", True),
        (("bench", "--policy", "deadline"), "--dl-runtime", True),
        (("bench", "--policy", "deadline"), "--dl-deadline", True),
        (("bench", "--policy", "deadline"), "--dl-period", True),
        (("hiccup",), "--duration", True),
        (("hiccup",), "--threshold", True),
        (("inject",), "--stats-interval", True),
        (("inject",), "--duration", False),
        (("model", "make", "-o", "m.json"), "--constant", True),
        (("describe", "R"), "--expected-interval", True),
        (("describe", "R"), "--window", False),
        (("describe", "R"), "--from", False),
        (("export", "R"), "--window", False),
        (("monitor", "record"), "--duration", False),
        (("net", "bench"), "--duration", False),
    )

    def t_durations(self, data: bytes) -> None:
        text = data.decode("utf-8", "surrogateescape").replace("\x00", "")  # as argv arrives
        for before, option, as_text in self.DURATION_OPTIONS:
            parser = self.parsers.get(before[0])
            if parser is None:
                parser = self.parsers[before[0]] = build_parser(before[0])
            for argv in ([*before, option, text], [*before, f"{option}={text}"]):
                try:
                    with contextlib.redirect_stderr(io.StringIO()) as said:
                        args = parser.parse_args(argv)
                except SystemExit as e:
                    lines = said.getvalue().strip().splitlines()
                    if e.code != 2 or len(lines) != 1:
                        raise AssertionError(f"{argv!r}: exit {e.code}, said {said.getvalue()!r}") from None
                    continue
                value = getattr(args, option.lstrip("-").replace("-", "_"), None)
                if as_text and isinstance(value, str) and value != "auto":
                    parse_duration_ns(value, "ns")  # the range was checked: it must parse again

    def t_cluster(self, data: bytes) -> None:
        address = self.mutate_seed("cluster-address", data).decode("utf-8", "surrogateescape")
        with contextlib.suppress(JitterlabError):
            parsed = cluster_probe.scheduler_address(address)  # never connected to
            if parsed is not None and not 0 < parsed[1] < 65536:
                raise AssertionError(f"{address!r} gave port {parsed[1]}")
        ours, theirs = socket.socketpair()
        with ours, theirs:
            theirs.sendall(data[: 1 << 16])
            theirs.shutdown(socket.SHUT_WR)
            said = cluster_probe._not_a_scheduler(ours)
        if said is not None and (not said or "\n" in said):
            raise AssertionError(f"the probe said {said!r}")

    def t_staging(self, data: bytes) -> None:
        store = self.staging_store
        for run_dir in store.run_dirs():  # keep the store small
            shutil.rmtree(run_dir)
        staging = store.staging_root() / self.draft_id
        shutil.rmtree(staging, ignore_errors=True)
        staging = store.staging_dir(self.draft_id)
        (staging / SAMPLES_FILE).write_bytes(data)
        (staging / "harness.json").write_bytes(self.seeds["harness"])
        for run in recover(store, lambda _: None):
            stored = load_run(run.path)
            show_text(stored, run_summary(stored))
            try:
                verified_samples_path(stored)  # what runs --strict checks
            except CorruptRunError as e:
                raise AssertionError(f"recover stored a run its own check refuses: {e}") from None
        shutil.rmtree(staging, ignore_errors=True)  # a refused leftover stays: not for the next input

    ODD_NAMES = (
        "/etc/passwd", "../samples.parquet", "..", ".", "", "elsewhere", "linked.parquet", "run.json",
        "samples.parquet/", "./samples.parquet", "a" * 300, "samples.parquet\x00x", "~/x", "\\x",
        "samples.parquet",
    )  # fmt: skip

    def t_run_files(self, data: bytes) -> None:
        rng = random.Random(hashlib.sha256(data).digest())
        name: Any = rng.choice(self.ODD_NAMES) if data[:1] in (b"", b"s") else data.decode("utf-8", "replace")
        doc = copy.deepcopy(self.files_json)
        which = rng.random()
        if which < 0.25:
            doc["histogram"] = {"file": name}
            doc["samples"] = None if rng.random() < 0.5 else doc["samples"]
        elif which < 0.5:  # the trace events describe reads to attribute spikes
            spike_cpu = {"available": True, "from": "pair"}
            doc["trace"] = {"available": True, "file": name, "events": {}, "spike_cpu": spike_cpu}
        else:
            doc["samples"]["file"] = name
        if rng.random() < 0.5:
            doc["samples"].pop("sha256", None) if isinstance(doc.get("samples"), dict) else None
        (self.files_run / RUN_JSON).write_text(json.dumps(doc))
        run = load_run(self.files_run)
        show_text(run, run_summary(run))
        if not run.histogram_only:
            describe_text(describe_run(run))

    def t_topo_state(self, data: bytes) -> None:
        topo.STATE_DIR.mkdir(exist_ok=True)
        (topo.STATE_DIR / f"{self.topo_name}.json").write_bytes(data)
        loaded = topo.load(self.topo_name)
        topo._pid_alive(loaded.created_by_pid)  # what `net topo list` and `down --all` ask
        loaded.address(0, 1)  # what a bench on it asks first


TARGETS = (
    "run-json",
    "model",
    "hlog",
    "csv",
    "raw",
    "harness",
    "frame-log",
    "hosts",
    "ssq",
    "topo-state",
    "draft",
    "ring",
    "options",
    "durations",
    "cluster",
    "staging",
    "run-files",
)


def fuzz(
    targets: Targets,
    target: str,
    rng: random.Random,
    until: Callable[[int], bool],
    hang_s: float,
    findings: Path,
) -> dict[str, Any]:
    seen: set[bytes] = set()
    execs = found = hangs = 0
    began = time.perf_counter()
    while not until(execs):
        data = targets.mutate(target, rng)
        seen.add(hashlib.blake2b(data, digest_size=12).digest())
        start = time.perf_counter()
        try:
            targets.run(target, data)
        except JitterlabError:
            pass
        except Exception:
            found += 1
            findings.mkdir(parents=True, exist_ok=True)
            name = f"{target}-{found}"
            (findings / f"{name}.input").write_bytes(data)
            (findings / f"{name}.txt").write_text(traceback.format_exc())
        if time.perf_counter() - start > hang_s:
            hangs += 1
            findings.mkdir(parents=True, exist_ok=True)
            (findings / f"{target}-hang-{hangs}.input").write_bytes(data)
        execs += 1
    return {
        "target": target,
        "executions": execs,
        "seconds": time.perf_counter() - began,
        "distinct_inputs": len(seen),
        "findings": found,
        "hangs": hangs,
        "header_refusals": targets.header_refusals if target == "ring" else 0,
    }


def rate_text(executions: int, seconds: float) -> str:
    """Executions per second and the projected time to 10^6 executions at that rate."""
    rate = executions / seconds if seconds > 0 else 0.0
    if rate <= 0:
        return f"{0:>9,.0f}/s  10^6 in  never"
    hours = PROJECTED_EXECUTIONS / rate / 3600
    return f"{rate:>9,.0f}/s  10^6 in {hours:6.1f} h"


def stop_rule(seconds: float | None, execs: int | None) -> Callable[[int], bool]:
    """When one target's run ends: after ``seconds``, else after ``execs`` (default 2000)."""
    if seconds is not None:
        deadline = time.monotonic() + seconds
        return lambda _: time.monotonic() >= deadline
    limit = execs or 2_000
    return lambda done: done >= limit


def default_workdir() -> Path | None:
    """tmpfs when there is one (every input is a file written, read and removed: on a loaded
    disk each write costs milliseconds), else the system's temporary folder."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


def run_targets(
    chosen: list[str],
    seed: int,
    seconds: float | None,
    execs: int | None,
    hang_ms: float,
    findings: Path,
    workdir: Path | None = None,
) -> list[dict[str, Any]]:
    """One process's share: every chosen target in turn, in its own temporary folder."""
    results = []
    with tempfile.TemporaryDirectory(prefix="jitterlab-fuzz-", dir=workdir) as tmp:
        targets = Targets(Path(tmp))
        targets.findings = findings / f"seed-{seed}"
        try:
            for n, target in enumerate(chosen):
                rng = random.Random(seed * 1_000 + n)
                result = fuzz(
                    targets, target, rng, stop_rule(seconds, execs), hang_ms / 1e3, targets.findings
                )
                results.append(result)
                ring = f"  ({result['header_refusals']:,} header refusals)" if target == "ring" else ""
                print(
                    f"{target:10} {result['executions']:>10,} executions "
                    f"{rate_text(result['executions'], result['seconds'])}  {result['distinct_inputs']:>10,} "
                    f"distinct inputs  {result['findings']} findings  {result['hangs']} hangs  (seed {seed}){ring}",
                    flush=True,
                )
        finally:
            targets.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", choices=TARGETS, action="append", help="repeatable (default: all)")
    parser.add_argument("--seconds", type=float, help="time per target (and per job)")
    parser.add_argument("--execs", type=int, help="executions per target and job (default 2000)")
    parser.add_argument("--seed", type=int, default=1, help="job k runs with seed SEED + k")
    parser.add_argument("--jobs", type=int, default=1, help="processes, each with its own seed (default 1)")
    parser.add_argument("--hang-ms", type=float, default=5_000)
    parser.add_argument("--findings", type=Path, default=Path("fuzz-findings"))
    parser.add_argument(
        "--workdir", type=Path, default=default_workdir(), help="where inputs are written (default /dev/shm)"
    )
    args = parser.parse_args(argv)
    chosen = args.target or list(TARGETS)
    started = time.monotonic()
    work = [
        (chosen, args.seed + k, args.seconds, args.execs, args.hang_ms, args.findings, args.workdir)
        for k in range(args.jobs)
    ]
    if args.jobs == 1:
        per_job = [run_targets(*work[0])]
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            per_job = pool.starmap(run_targets, work)
    results = [r for job in per_job for r in job]
    total = {k: sum(r[k] for r in results) for k in ("executions", "distinct_inputs", "findings", "hangs")}
    for target in chosen:
        mine = [r for r in results if r["target"] == target]
        done = sum(r["executions"] for r in mine)
        per_job_s = sum(r["seconds"] for r in mine) / len(mine)  # the jobs ran side by side
        print(
            f"target {target:10} {done:>10,} executions {rate_text(done, per_job_s)}  "
            f"{sum(r['findings'] for r in mine)} findings  {sum(r['hangs'] for r in mine)} hangs"
        )
    print(
        f"total      {total['executions']:>10,} executions  {total['distinct_inputs']:>10,} distinct inputs  "
        f"{total['findings']} findings  {total['hangs']} hangs  in {time.monotonic() - started:.0f} s, {args.jobs} jobs"
    )
    return 1 if total["findings"] or total["hangs"] else 0


if __name__ == "__main__":
    sys.exit(main())

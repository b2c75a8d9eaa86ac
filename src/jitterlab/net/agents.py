"""Node agents and the control protocol (docs/net.md).

One agent program (``jitterlab-net``) runs on every node, started with ``ip netns exec`` on
a namespace or with ``ssh -o BatchMode=yes`` on a host; the coordinator talks to each over
its stdin/stdout with the same line protocol either way. An agent exits when its stdin
closes, so a coordinator killed by any signal leaves no agent behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import shlex
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from jitterlab.core.errors import CorruptRunError, JitterlabError
from jitterlab.core.fileio import open_output
from jitterlab.core.programs import native_program
from jitterlab.core.version import __version__
from jitterlab.store.rawfile import (
    HEADER_BYTES,
    NET_RECORD_DTYPE,
    RawSamples,
    raw_image_size,
    read_raw_samples,
)

# 2: records are the run format's raw file (docs/run-format.md), no longer a 40-byte record of
# the agents' own; 3: a server's ``part`` hands its records over (``collect`` gives only those
# no part gave), so a stream receiver's memory no longer grows with the stream
PROTOCOL = 3
COPY_BYTES = 8 << 20  # a samples block is copied from the pipe to its file this much at a time


@dataclass(frozen=True)
class Launcher:
    """How a node's agent starts: inside a namespace, or on a host over ssh."""

    node: str  # a display name
    netns: str | None = None
    ssh: str | None = None  # an ssh target (user@host)
    ssh_options: tuple[str, ...] = ()
    agent: str | None = None  # the agent's path on the host (default: this machine's)
    program: tuple[str, ...] = ()  # another agent program's argv (the JVM's pekko-artery agent)

    def tool(self, name: str) -> str:
        """Where another native program of the same install is on this node: beside its
        agent (hosts.toml's ``agent``), or this machine's."""
        if self.agent:
            return f"{self.agent.rsplit('/', 1)[0]}/{name}"
        return str(native_program(name))

    def argv(self) -> list[str]:
        program = list(self.program) or [self.agent or str(native_program("jitterlab-net"))]
        if self.ssh:
            remote = " ".join(shlex.quote(word) for word in program)
            return [
                "ssh",
                "-o",
                "BatchMode=yes",
                "-o",
                "ConnectTimeout=5",
                *self.ssh_options,
                "--",  # the target is never read as an option, whatever it holds
                self.ssh,
                remote,
            ]
        if self.netns:
            return ["ip", "netns", "exec", self.netns, *program]
        return program


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    # the coordinator stops a measuring agent with SIGINT: a coordinator started with SIGINT
    # ignored (a shell's background job) would hand that on, and a JVM keeps an ignored signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn(launcher: Launcher) -> subprocess.Popen[bytes]:
    """Start what ``launcher`` names (an agent, or another program with ``program``), its
    stdin and stdout piped for the line protocol; it dies with this process."""
    return subprocess.Popen(
        launcher.argv(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_die_with_parent,
        start_new_session=True,  # Ctrl-C reaches the coordinator, which stops the agents in order
    )


def where(launcher: Launcher) -> str:
    """How a message names a node: ``node NAME`` and, over ssh, its target."""
    return f"node {launcher.node}" + (f" (ssh {launcher.ssh})" if launcher.ssh else "")


class Agent:
    """One running agent: send a command line, read its answers."""

    def __init__(self, launcher: Launcher) -> None:
        self.launcher = launcher
        # where a "part N" block goes (what a measuring agent hands over while it runs, about
        # every second): a whole raw sample file of N records, as it came; None: read and dropped
        self.on_part: Callable[[bytes], None] | None = None
        # what runs while a stream sender waits between two steps (``stepped K``): nothing is
        # measured then; "next" follows it
        self.on_step: Callable[[], None] | None = None
        self.proc = spawn(launcher)
        hello = self._line()
        words = hello.split()
        if len(words) < 4 or words[0] != "hello":
            why = self._failure(hello)
            self.close()
            raise JitterlabError(f"{self._where()}: the agent did not start: {why}")
        self.version, self.protocol = words[2], int(words[3])
        self.transports = words[4].split(",") if len(words) > 4 else []
        if self.version != __version__ or self.protocol != PROTOCOL:
            self.close()
            raise JitterlabError(
                f"{self._where()}: agent version {self.version} (protocol {self.protocol}) differs from this "
                f"coordinator's {__version__} (protocol {PROTOCOL}): install the same jitterlab there"
            )

    def _where(self) -> str:
        return where(self.launcher)

    def _failure(self, line: str) -> str:
        try:
            err = self.proc.communicate(timeout=5)[1].decode(errors="replace").strip()
        except (subprocess.TimeoutExpired, ValueError, OSError):  # ValueError: read already, pipes closed
            err = ""
        last = err.splitlines()[-1] if err else line.strip() or "no answer"
        return last

    def _line(self) -> str:
        """The agent's next line; "" when it has exited (also once ``_failure`` has read its
        output to the end and closed the pipe: another thread may be reading this agent)."""
        out: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
        try:
            return out.readline().decode(errors="replace")
        except ValueError:  # readline of closed file
            return ""

    def send(self, line: str) -> None:
        stdin: IO[bytes] = self.proc.stdin  # type: ignore[assignment]
        try:
            stdin.write((line + "\n").encode())
            stdin.flush()
        except (BrokenPipeError, ValueError):  # ValueError: the pipe was already closed
            raise JitterlabError(f"{self._where()}: the agent exited ({self._failure('')})") from None

    def expect(self, word: str, progress: Callable[[int, int], None] | None = None) -> str:
        """The next line starting with ``word`` (progress lines go to ``progress``)."""
        while True:
            line = self._line()
            if not line:
                raise JitterlabError(f"{self._where()}: the agent exited ({self._failure('')})")
            if line.startswith("progress "):
                if progress:
                    _, done, total = line.split()
                    progress(int(done), int(total))
                continue
            if line.startswith("part "):
                part = self._block(int(line.split()[1]))
                if self.on_part:
                    self.on_part(part)
                continue
            if line.startswith("stepped "):  # a stream sender waits between steps for "next"
                try:
                    if self.on_step:
                        self.on_step()
                finally:  # also when interrupted meanwhile: the sender must not wait for ever
                    with contextlib.suppress(JitterlabError):
                        self.send("next")
                continue
            if line.startswith("error "):
                raise JitterlabError(f"{self._where()}: {line[6:].strip()}")
            if line.startswith(word):
                return line.strip()

    def records(self, path: Path) -> RawSamples:
        """The ``samples N`` block that follows a result, copied from the pipe to ``path``
        as it comes (a few MiB at a time, never the whole block in memory; written
        atomically) and checked by the run format's raw-file reader: its records are
        :data:`NET_RECORD_DTYPE`, the columns the run stores, read from ``path`` as used."""
        count = int(self.expect("samples").split()[1])
        out: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
        with open_output(path) as f:
            try:
                head = out.read(HEADER_BYTES)
                f.write(head)
                left = (
                    raw_image_size(head, count, f"{self._where()}: its samples") - HEADER_BYTES
                    if len(head) == HEADER_BYTES
                    else 0
                )
                while left:
                    data = out.read(min(left, COPY_BYTES))
                    if not data:
                        break  # the agent died while writing: the reader keeps the whole records
                    f.write(data)
                    left -= len(data)
            except ValueError:  # the pipe was closed meanwhile (see _line): nothing more came
                pass
        try:
            raw = read_raw_samples(path)
        except CorruptRunError as e:
            raise JitterlabError(f"{self._where()}: its samples: {e}") from None
        if raw.dtype != NET_RECORD_DTYPE:
            raise JitterlabError(f"{self._where()}: its samples are not net records")
        return raw

    def _block(self, count: int) -> bytes:
        """The raw sample file of ``count`` records that follows a ``samples``/``part`` line
        (header, records, footer: its size follows from the header's record size). Cut short
        when the agent died while writing it: the reader keeps its whole records."""
        out: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
        try:
            head = out.read(HEADER_BYTES)
            if len(head) < HEADER_BYTES:
                return head
            size = raw_image_size(head, count, f"{self._where()}: a block")
            return head + out.read(size - HEADER_BYTES)
        except ValueError:  # the pipe was closed meanwhile (see _line): nothing more came
            return b""

    def serve(self, transport: str, bind: str, advertise: str, port: int, payload: int, node: int) -> int:
        """Listen; ``advertise`` is the address the others reach this node at (Artery needs it)."""
        self.send(
            f"serve transport={transport} bind={bind} advertise={advertise} port={port} payload={payload} node={node}"
        )
        return int(self.expect("serving").split()[1])

    def pull_part(self) -> bytes:
        """What a serving agent recorded since the last pull (``part`` answers ``part N`` and
        a raw sample file of N records): the coordinator asks about every second while a
        stream runs."""
        self.send("part")
        line = self._line()
        if line.startswith("part "):
            return self._block(int(line.split()[1]))
        if line.startswith("error "):
            raise JitterlabError(f"{self._where()}: {line[6:].strip()}")
        raise JitterlabError(f"{self._where()}: the agent exited ({self._failure(line)})")

    def collect(self, path: Path) -> tuple[dict[str, Any], RawSamples]:
        """A serving agent's result and its records (copied to ``path``: :meth:`records`)."""
        self.send("collect")
        result = parse_result(self.expect("result"))
        return result, self.records(path)

    def close(self) -> None:
        """Ask the agent to quit; stop it if it does not."""
        if self.proc.poll() is None:
            with contextlib.suppress(JitterlabError):
                self.send("quit")
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()


def parse_result(line: str) -> dict[str, Any]:
    """``result k=v ...`` as a dict (numbers as int)."""
    fields: dict[str, Any] = {}
    for word in line.split()[1:]:
        key, _, value = word.partition("=")
        fields[key] = int(value) if value.lstrip("-").isdigit() else value
    return fields

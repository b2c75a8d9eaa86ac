"""What ``net bench`` is asked to run: scenarios, transports, the options and their presets,
checked before anything starts.

Kept apart from :mod:`jitterlab.net.bench` (numpy, scipy, the store) so that the command
line builds its parser, and ``net topo up/down`` runs, without importing them.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.core.errors import JitterlabError

SCENARIOS = ("ping", "open-loop", "stream", "frame-sync")
NATIVE_TRANSPORTS = ("udp", "tcp", "caf-io")
JVM_TRANSPORTS = ("pekko-artery",)
TRANSPORTS = NATIVE_TRANSPORTS + JVM_TRANSPORTS
HEADER_BYTES = 32  # native/net/wire.hpp
MAX_PAYLOAD = 65000


@dataclass(frozen=True)
class NetOptions:
    scenarios: tuple[str, ...] = ("ping",)
    transports: tuple[str, ...] = ("udp",)
    nodes: int = 2  # frame-sync: the renderer and nodes - 1 render nodes
    duration_s: float = 10.0
    warmup_s: float = 1.0
    payload: int = 64
    rate_hz: float = 1000.0  # open-loop
    messages: int = 100_000  # stream: messages per step
    steps: int = 5
    fps: float = 60.0  # frame-sync
    states: int = 12  # state messages per frame and render node (12 x 60 fps = the seed's 720/s)
    sync: tuple[bool, ...] = (True, False)
    timeout_s: float = 1.0
    port: int = 0


# Seed 004 (Wiebusch et al.): ping, throughput, distributed rendering with 2 and 9 render nodes.
PRESETS: dict[str, NetOptions] = {
    "seed-004": NetOptions(
        scenarios=("ping", "open-loop", "stream", "frame-sync"),
        transports=("udp", "tcp", "caf-io", "pekko-artery"),
        nodes=3,
        duration_s=10.0,
        warmup_s=2.0,  # the JVM agents compile their hot path first
        rate_hz=1000.0,
        messages=100_000,
        steps=5,
    )
}


def check_options(o: NetOptions) -> None:
    """Bad input as one line, before anything starts."""
    for s in o.scenarios:
        if s not in SCENARIOS:
            raise JitterlabError(f"unknown scenario {s!r}; choose from {', '.join(SCENARIOS)}")
    for t in o.transports:
        if t not in TRANSPORTS:
            raise JitterlabError(f"unknown transport {t!r}; choose from {', '.join(TRANSPORTS)}")
    if o.nodes < 2:
        raise JitterlabError(f"--nodes must be at least 2 (a sender and a receiver), got {o.nodes}")
    if not HEADER_BYTES <= o.payload <= MAX_PAYLOAD:
        raise JitterlabError(
            f"--payload must be {HEADER_BYTES}..{MAX_PAYLOAD} bytes (the message header is {HEADER_BYTES} B), got {o.payload}"
        )
    if not 0 < o.rate_hz <= 1_000_000:
        raise JitterlabError(f"--rate must be in (0, 1000000] messages/s, got {o.rate_hz:g}")
    if o.duration_s <= 0:
        raise JitterlabError("--duration must be positive")


SEED_004_IMPAIRMENT = "delay=100ms"

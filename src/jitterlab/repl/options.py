"""What ``repl bench`` runs: :class:`ReplOptions` and the named :data:`PRESETS`.

Kept apart from :mod:`jitterlab.repl.bench` (numpy, the store, the native runner) so that the
parser and ``--help`` stay light: ``repl bench --preset`` offers ``sorted(PRESETS)``, the one
definition of the presets (tests/cli/test_startup.py checks ``--help`` imports no numpy).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ReplOptions:
    clients: tuple[int, ...] = (2, 5, 10, 25)
    rate_hz: float = 90.0
    server_tick_hz: float = 120.0
    payload: int = 144
    observers: int = 2
    duration_s: float = 30.0
    warmup_s: float = 1.0
    port: int = 0
    pin_server: int | None = None  # None: CPU 0 when two or more CPUs are allowed
    pin_clients: int | None = None  # None: CPU 1 likewise
    policy: str = "other"
    priority: int = 0
    mlock: bool = True
    # across nodes (namespaces): the server on node 0 and the clients split over `client_nodes`
    # more; 0 with no `topo`: everything on this host's loopback
    client_nodes: int = 0
    topo: str | None = None  # an existing topology (`net topo up`); None: made for the command
    router: bool = False
    shape: dict[str, str] | None = None
    impair: str | None = None  # an --impair spec (net/impair.py) on the router's links
    hosts: Path | None = None  # hosts.toml (net/nodes.py): the server on the first host, over ssh

    @property
    def networked(self) -> bool:
        return self.client_nodes > 0 or self.topo is not None or self.hosts is not None


# The seed's EP1 (Latoschik et al. 2019, §5): VR clients replicate at 90 Hz, the server ticks at 120.
PRESETS: dict[str, ReplOptions] = {
    "seed-003": ReplOptions(clients=(2, 5, 10, 25, 50, 75, 100, 125), rate_hz=90.0, server_tick_hz=120.0)
}

"""The injection validation drawn for people: QQ plots and the settings' table.

It reads a validation result through :class:`ValidationView` (the fields it needs), so the
describe room does not import the simulate room that computed it.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import numpy as np

from jitterlab.core.html import figure_img, html_table
from jitterlab.core.palette import BLUE
from jitterlab.core.units import format_ns
from jitterlab.describe.tables import level_cell
from jitterlab.stats import percentiles
from jitterlab.store import Run


class ValidationView(Protocol):
    """What the drawing reads of a validation result (read-only)."""

    @property
    def injected_ns(self) -> np.ndarray: ...

    @property
    def injected_reference_ns(self) -> np.ndarray: ...

    @property
    def realised_ns(self) -> np.ndarray: ...

    @property
    def reference_ns(self) -> np.ndarray: ...

    @property
    def passthrough_ns(self) -> np.ndarray: ...

    @property
    def direct_ns(self) -> np.ndarray: ...

    @property
    def ks(self) -> float: ...

    @property
    def ks_end_to_end(self) -> float: ...

    @property
    def quantile_error_ns(self) -> dict[str, float]: ...


def qq_figure_html(v: ValidationView) -> str:
    import matplotlib.pyplot as plt

    p = np.linspace(0.5, 99.99, 400)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.6))
    pairs = [
        (axes[0], v.injected_reference_ns, v.injected_ns, "injected: model vs what the proxy added"),
        (axes[1], v.reference_ns, v.realised_ns, "end to end: model + floor vs measured"),
        (axes[2], v.direct_ns, v.passthrough_ns, "floor: direct vs pass-through proxy"),
    ]
    for ax, x, y, title in pairs:
        qx, qy = percentiles(x, p.tolist()) / 1e3, percentiles(y, p.tolist()) / 1e3
        lo, hi = min(qx.min(), qy.min()), max(qx.max(), qy.max())
        ax.plot([lo, hi], [lo, hi], color="#999", lw=1, label="diagonal")
        ax.scatter(qx, qy, s=6, color=BLUE)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("direct (µs)" if ax is axes[2] else "expected quantile (µs)")
        ax.set_ylabel("measured quantile (µs)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return figure_img(fig, "QQ plots of the injected delay against the model, and of the proxy's floor")


def validation_html(
    runs: Mapping[str, Run], proxy_stats: Mapping[str, dict[str, object]], v: ValidationView, model_path: Path
) -> str:
    """The validation section: ``runs`` the probe's run per setting, ``proxy_stats`` the
    proxy's final statistics per setting (where a proxy ran)."""
    rows = []
    for setting, run in runs.items():
        x = run.latency_ns
        probe = run.meta.get("probe", {})
        stats = proxy_stats.get(setting) or {}
        rows.append(
            [
                setting,
                f"{x.size:,}",
                str(probe.get("lost", "")),
                *(format_ns(v) for v in percentiles(x, (50.0, 99.0, 99.9))),
                format_ns(float(x.max())),
                str(stats.get("dropped_queue_full", "")),
            ]
        )
    errors = ", ".join(f"{k} {format_ns(e)}" for k, e in v.quantile_error_ns.items())
    return (
        f"<h2>Injection validation</h2><div class='card'><p>Model <code>{html.escape(str(model_path))}</code>: "
        "datagrams sent over loopback straight to the receiver, through a pass-through proxy, and through the "
        "model's proxy, which also recorded when each datagram arrived and when it left.</p>"
        f"<p><b>KS distance</b> of the injected delay (as the proxy recorded it) to the model's reference "
        f"simulation at the same arrival times: <b>{v.ks:.4f}</b>; quantile error (injected − model): {errors}. "
        f"End to end, against the model plus a pass-through delay: KS {v.ks_end_to_end:.4f} (the loopback "
        "floor is not independent of the injected delay on a busy machine, so this one is looser).</p>"
        + html_table(["setting", "datagrams", "lost", "p50", "p99", "p99.9", "max", "proxy drops"], rows)
        + qq_figure_html(v)
        + "</div>"
    )


SETTINGS_HEADERS = ["setting", "run", "datagrams", "p50", "p99", "max"]


def settings_rows(runs: Mapping[str, Run]) -> list[list[str]]:
    """The probe's run per setting, one row each (the terminal's table)."""
    rows = []
    for setting, run in runs.items():
        x = run.latency_ns
        p50, p99 = percentiles(x, (50.0, 99.0))
        rows.append(
            [
                setting,
                run.id,
                f"{x.size:,}",
                level_cell(float(p50), x.size, 50.0),
                level_cell(float(p99), x.size, 99.0),
                format_ns(float(x.max())),
            ]
        )
    return rows

"""What a person checks an analysed video by: the regions on a frame, both 1-D traces with
their fits and residuals, the correlation against lag, and latency over time.

:func:`section` is that check as a section of the shared runs report (``mtp analyze
--report`` writes the report of the stored run with it first, as ``jitterlab report``
would, the run's own sections below); :func:`write` is the page of the section alone, for
an analysis that stored no run (``--no-store``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from jitterlab.core.fileio import atomic_write_bytes
from jitterlab.core.html import PAGE_END, esc, figure_img, html_table, page_head
from jitterlab.core.palette import BLUE, GREY, ORANGE, VERMILLION
from jitterlab.core.version import __version__
from jitterlab.mtp.analyze import Analysis, headline_rows
from jitterlab.mtp.estimate import HEADLINE

COLOURS = {"physical": BLUE, "rendered": ORANGE}


def _regions_figure(a: Analysis) -> str:
    panels = 2 if a.variance is not None else 1
    fig, axes = plt.subplots(1, panels, figsize=(5.6 * panels, 4.2), squeeze=False)
    axes[0][0].imshow(a.snapshot, cmap="gray", vmin=0, vmax=255)
    axes[0][0].set_title("a frame, with the tracked regions and paths")
    for name, (x, y, w, h) in a.regions.items():
        axes[0][0].add_patch(Rectangle((x, y), w, h, fill=False, lw=1.6, ec=COLOURS[name]))
        axes[0][0].text(x, y - 3, name, color=COLOURS[name], fontsize=9)
        track = a.tracks[name]
        axes[0][0].plot(track.x, track.y, ",", color=COLOURS[name], alpha=0.6)
    height, width = a.snapshot.shape
    axes[0][0].set_xlim(-0.5, width - 0.5)
    axes[0][0].set_ylim(height - 0.5, -0.5)
    if a.variance is not None:
        axes[0][1].imshow(a.variance, cmap="magma")
        axes[0][1].set_title("temporal standard deviation (regions found from it)")
    for ax in axes[0]:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return figure_img(fig, "the tracked regions on a frame")


def _traces_figure(a: Analysis) -> str:
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 5.6), sharex=True, height_ratios=(3, 1.3))
    fits = a.estimates.fits
    for name in ("physical", "rendered"):
        t, x = a.signals[name]
        top.plot(t, x, ".", ms=2.5, color=COLOURS[name], label=f"{name} (tracked, 1-D)")
        ok = np.isfinite(x)
        fit = fits[name]
        grid = np.linspace(t[ok][0], t[ok][-1], 4000)
        top.plot(
            grid, fit(grid), "-", lw=0.9, color=COLOURS[name], alpha=0.8, label=f"{name}: damped-sine fit"
        )
        bottom.plot(t, x - fit(t), ".", ms=2, color=COLOURS[name], label=f"{name} residual")
    top.set_ylabel("position along the motion (px)")
    top.legend(loc="upper right", fontsize=8, ncols=2)
    top.set_title("both motions projected to one dimension (PCA, signs aligned), with the separate fits")
    bottom.set_ylabel("residual (px)")
    bottom.set_xlabel("time since the first frame (s)")
    bottom.axhline(0, color="#888", lw=0.6)
    fig.tight_layout()
    return figure_img(fig, "the tracked traces, their fits and residuals")


def _correlation_figure(a: Analysis) -> str:
    e = a.estimates
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    left.plot(e.lags_s * 1e3, e.correlation, "-", color=BLUE)
    for name, value in e.latency_s.items():
        left.axvline(
            value * 1e3,
            lw=1,
            ls="-" if name == HEADLINE else ":",
            color=VERMILLION if name == HEADLINE else GREY,
        )
    left.set_xlabel("lag of the rendered object (ms)")
    left.set_ylabel("Pearson r (overlap-normalised)")
    left.set_title(f"correlation against lag; peak {e.headline_s * 1e3:.3f} ms")
    w = a.window_latencies * 1e3
    right.plot(a.window_centres, w, "o-", ms=3, color=ORANGE)
    right.axhline(e.headline_s * 1e3, color=VERMILLION, lw=0.8, label="whole video")
    right.set_xlabel("window centre (s)")
    right.set_ylabel("latency (ms)")
    right.set_title(f"latency over time ({a.options.window_s:g} s windows)")
    right.legend(fontsize=8)
    fig.tight_layout()
    return figure_img(fig, "correlation against lag, and latency over time")


def section(a: Analysis, run_id: str | None) -> str:
    """The analysis as a section of a page: headline, facts, warnings and the figures."""
    e = a.estimates
    w = a.window_latencies * 1e3
    warnings = "".join(f"<li>{esc(x['detail'])}</li>" for x in a.warnings) or "<li>none</li>"
    facts = [
        ["video", esc(a.path.name)],
        [
            "frames analysed",
            f"{len(a.times)} in {a.times[-1] - a.times[0]:.2f} s ({a.info.width}×{a.info.height}, {a.info.codec})",
        ],
        ["frequency", f"{e.freq_hz:.4f} Hz (decay {e.fits['joint'].decay:.4f} /s)"],
        [
            "regions",
            ("found from the temporal variance" if a.auto_regions else "given")
            + f"; tracker {a.options.tracker}",
        ],
        ["objects lost", ", ".join(f"{k} {v:.1%}" for k, v in a.lost.items())],
        [
            "rolling shutter",
            f"{a.options.rolling_shutter_s * 1e3:g} ms readout corrected"
            if a.options.rolling_shutter_s
            else "not corrected (global shutter assumed)",
        ],
        [
            "capture rate",
            f"{a.options.capture_fps:g} fps (override)"
            if a.options.capture_fps
            else "from the file's timestamps",
        ],
        [
            "windows",
            f"{len(w)} × {a.options.window_s:g} s: mean {w.mean():.3f} ms, SD {w.std(ddof=1) if len(w) > 1 else 0:.3f} ms",
        ],
        ["stored as run", esc(run_id or "not stored")],
    ]
    untrusted = (
        ""
        if a.trusted
        else f" — UNTRUSTED ({esc(', '.join(c['code'] for c in a.untrusted))}: see the warnings)"
    )
    parts = [
        f"<h2 id='mtp'>Motion-to-photon latency: {esc(a.path.name)}</h2>",
        "<div class='muted'>method: docs/mtp.md</div>",
        f"<div class='card'><h3 style='margin-top:0'>{e.headline_s * 1e3:.2f} ms{untrusted}</h3>"
        "<p>headline: overlap-normalised cross-correlation (it assumes nothing about the waveform). "
        "The two sine-fit estimators are shown beside it; each is checked against the same fit on an exact "
        "delayed copy of the physical motion, within what the tracking noise explains (docs/mtp.md, "
        "'When a result is untrusted'). A sample-and-hold display's hold (about half a refresh) is part of "
        "this latency.</p>"
        + html_table(["estimator", "latency", "against the headline"], headline_rows(a))
        + html_table(["what", "value"], facts)
        + f"<h3>Warnings</h3><ul>{warnings}</ul></div>",
        "<h3>Regions</h3><div class='card'>" + _regions_figure(a) + "</div>",
        "<h3>Traces, fits and residuals</h3><div class='card'>"
        + _traces_figure(a)
        + "<p class='muted'>Residuals should look like noise. A pattern at the motion's frequency or its "
        "harmonics means the motion is not a damped sine; trust the cross-correlation then.</p></div>",
        "<h3>Correlation and latency over time</h3><div class='card'>" + _correlation_figure(a) + "</div>",
    ]
    return "".join(parts)


def build(a: Analysis, run_id: str | None) -> str:
    """The page of :func:`section` alone (an analysis that stored no run)."""
    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        page_head(f"motion-to-photon: {a.path.name}")
        + f"<h1>Motion-to-photon latency: {esc(a.path.name)}</h1>"
        + f"<div class='muted'>generated {generated} by jitterlab {__version__}</div>"
        + section(a, run_id)
        + PAGE_END
    )


def write(a: Analysis, path: Path, run_id: str | None) -> None:
    atomic_write_bytes(path, build(a, run_id).encode())

"""One palette, defined once (core/palette.py), and an outlier category the same colour in
every figure: issue 38 item 6, "category 4 is grey in one figure and brown in another" (the
report drew it brown, #937860, the paper's timeline pink and its cut vermillion, the live
page grey)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from matplotlib.colors import to_hex

from conftest import make_run
from jitterlab.core.palette import PALETTE, category_colour, series_colour
from jitterlab.describe import report
from jitterlab.describe.analysis import describe_run
from jitterlab.describe.panels import memory_panels

SRC = Path(__file__).resolve().parents[2] / "src" / "jitterlab"
HEX = re.compile(r"#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
OWN_COLOURS = {"core/palette.py", "core/html.py"}  # the palette; the page shell's CSS (text, borders)


def _grey(colour: str) -> bool:
    digits = colour[1:]
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    r, g, b = (int(digits[i : i + 2], 16) for i in (0, 2, 4))
    return r == g == b


def test_no_module_but_the_palette_names_a_colour() -> None:
    """Greys and black (guides, text) may be written anywhere; a colour only in core/palette.py."""
    found = []
    for path in SRC.rglob("*.py"):
        name = path.relative_to(SRC).as_posix()
        if name in OWN_COLOURS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and HEX.fullmatch(text) and not _grey(text):
                found.append(f"{name}:{node.lineno} {text}")
    assert not found, found


def test_the_live_page_colours_categories_from_the_palette() -> None:
    script = (SRC / "monitor" / "page" / "live.js").read_text()
    assert "ctx.strokeStyle = c.colour" in script  # the separators: each in its category's colour
    assert '"colour": category_colour(k)' in (SRC / "monitor" / "live.py").read_text()


def test_categories_are_distinct_and_never_the_main_colour() -> None:
    colours = [category_colour(k) for k in range(-1, 7)]
    assert len(set(colours)) == len(colours)  # low, main and six outlier categories apart
    assert all(category_colour(k) != category_colour(0) for k in range(1, 30))
    assert {category_colour(k) for k in range(-1, 30)} <= set(PALETTE)
    assert {series_colour(k) for k in range(30)} == set(PALETTE)


@pytest.fixture(scope="module")
def four_categories(tmp_path_factory: pytest.TempPathFactory) -> object:
    """A run whose stacked test finds categories main, 1, 2, 3 and 4 (clusters a decade apart)."""
    rng = np.random.default_rng(44)
    n = 100_000
    parts = [
        rng.normal(10_000, 300, n),
        rng.normal(30_000, 800, n // 20),
        rng.normal(100_000, 2_000, n // 200),
        rng.normal(400_000, 5_000, n // 1000),
        rng.normal(2_000_000, 20_000, n // 5000),
    ]
    x = np.concatenate(parts).astype(np.int64)
    rng.shuffle(x)
    run = make_run(tmp_path_factory.mktemp("palette"), x)
    d = describe_run(run, "stacked-z", 1_000_000_000, None, False, 3.5)
    assert [c.index for c in d.categories.categories if c.count] == [0, 1, 2, 3, 4]
    return d


def _labelled(ax: object, label: str) -> object:
    return next(a for a in ax.get_children() if getattr(a, "get_label", lambda: "")() == label)  # type: ignore[attr-defined]


def test_category_four_has_one_colour_in_the_report_and_the_paper(four_categories: object) -> None:
    from jitterlab.describe.paper.figures import _histogram_on, _timeline_on

    d = four_categories
    want = category_colour(4)
    report.run_figure(d)  # type: ignore[arg-type]
    fig = report._RUN_FIGURE[0]
    timeline, histogram = fig.axes[0], fig.axes[1]
    windows = fig.axes[3]
    assert to_hex(_labelled(timeline, "category 4").get_facecolor()[0]) == want.lower()
    assert to_hex(_labelled(windows, "category 4").get_facecolor()) == want.lower()
    cuts = [line for line in histogram.get_lines() if line.get_linestyle() == "--"]
    assert to_hex(cuts[3].get_color()) == want.lower()  # the fourth cut: where category 4 begins

    import matplotlib.pyplot as plt

    run = d.run  # type: ignore[attr-defined]
    panels = memory_panels(run.latency_ns, run.t_send_ns, d.summary, d.categories, None, 10_000, 1_000)  # type: ignore[attr-defined]
    data = SimpleNamespace(panels=panels, summary=d.summary, categories=d.categories, pauses=[], name="r")  # type: ignore[attr-defined]
    fig, (left, right) = plt.subplots(1, 2)
    _timeline_on(left, data, 1_000.0, "µs", legend=True)  # type: ignore[arg-type]
    _histogram_on(right, data, 1_000.0, "µs")  # type: ignore[arg-type]
    assert to_hex(_labelled(left, "category 4").get_edgecolor()[0]) == want.lower()
    assert to_hex(right.get_lines()[3].get_color()) == want.lower()
    plt.close(fig)

"""The one colour palette of every figure and page (issue 38 item 6: "category 4 is grey in
one figure and brown in another"): the report's panels, the overview figures, the paper's
figures, the MTP and replication reports, the validation QQ plot and the live page take
their colours from here, and no other module defines a palette
(tests/describe/test_palette.py).

The colours are Okabe & Ito's (2008), distinguishable under the common colour-vision
deficiencies; an outlier category keeps its colour in every figure (:func:`category_colour`).
"""

from __future__ import annotations

# Okabe & Ito (2008), ordered so that neighbours differ in lightness too (yellow last)
PALETTE = ("#000000", "#E69F00", "#0072B2", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442")

BLACK, ORANGE, BLUE, GREEN, VERMILLION, SKY, PURPLE, YELLOW = PALETTE

# the main category (0) and the outlier categories 1, 2, …: the main one blue, then the
# others in palette order; black, the text colour, is the low category's (-1)
_CATEGORIES = (BLUE, ORANGE, GREEN, VERMILLION, SKY, PURPLE, YELLOW)
LOW_CATEGORY = BLACK
GREY = "#999999"  # what is not a category: a histogram's bars, guides
# the JVM's pauses on a timeline: greys, never a category's colour
PAUSE_COLOURS = {"gc-pause": "#777777", "safepoint": GREY}


def category_colour(index: int) -> str:
    """The colour of outlier category ``index`` (-1 low, 0 main, 1, 2, …), the same in every
    figure. Past the seventh category the outlier colours repeat (never the main one's)."""
    if index < 0:
        return LOW_CATEGORY
    if index == 0:
        return _CATEGORIES[0]
    return _CATEGORIES[1 + (index - 1) % (len(_CATEGORIES) - 1)]


SERIES = (BLUE, ORANGE, GREEN, VERMILLION, SKY, PURPLE, YELLOW, BLACK)


def series_colour(index: int) -> str:
    """The colour of the ``index``-th series of a figure that draws several (techniques,
    runs, the two objects of an MTP video): the palette, blue first, black last."""
    return SERIES[index % len(SERIES)]

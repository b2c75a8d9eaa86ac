"""The choices ``jitterlab mtp`` offers on the command line, kept apart from the video and
log modules (numpy, scipy, pandas) so that the parser and ``--help`` stay light."""

from __future__ import annotations

LAYOUTS = ("apart", "same-row")  # mtp synth --layout: the objects on different rows, or side by side

"""``jitterlab paper``: tables, vector figures, a methods paragraph, a reporting checklist
and provenance, written from the same descriptions ``describe`` and ``compare`` give.

Layout of the output folder: ``tables/`` (``NAME.tex``, ``NAME.md``, ``NAME.csv``),
``figures/`` (``NAME-column.pdf|svg`` 3.5 in wide, ``NAME-page.pdf|svg`` 7 in wide),
``methods.md``, ``methods.tex``, ``checklist.md``, ``runs.csv``, ``references.bib``,
``paper.md`` (what was written and what was left out) and the marker ``.jitterlab-paper``.
"""

from jitterlab.describe.paper.output import MARKER, check_output, write_paper

__all__ = ["MARKER", "check_output", "write_paper"]

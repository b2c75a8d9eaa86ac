"""The pieces every self-contained HTML page of jitterlab shares: the stylesheet, figures
as embedded PNGs, tables and the page shell. Nothing is fetched: a page opens offline."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:26px;margin:0 0 4px} h2{margin-top:36px;border-bottom:2px solid #d9dde5;padding-bottom:4px}
h3{margin:18px 0 6px} .muted{color:#5b6475} .card{background:#fff;border:1px solid #e1e4ea;border-radius:8px;
padding:16px 20px;margin:16px 0} table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{padding:4px 10px;border-bottom:1px solid #e7e9ee;text-align:right} th:first-child,td:first-child{text-align:left}
th{background:#f0f2f6;font-weight:600} .partial{color:#b23b3b;font-weight:600} img{max-width:100%;height:auto}
.verdict-regressed{color:#b23b3b;font-weight:600} .verdict-improved{color:#2c7a3f;font-weight:600}
.three-text-columns td:nth-child(-n+3),.three-text-columns th:nth-child(-n+3){text-align:left}
.grid{display:flex;flex-wrap:wrap;gap:8px 28px} nav a{margin-right:12px} code{background:#eef0f4;padding:1px 4px;border-radius:3px}
"""


def esc(text: Any) -> str:
    return html.escape(str(text))


def png_data_uri(fig: Any, close: bool = True) -> str:
    """The figure as a PNG data URI; ``close=False`` keeps it for reuse."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96)
    if close:
        plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def figure_img(fig: Any, alt: str, close: bool = True) -> str:
    return f'<img src="{png_data_uri(fig, close)}" alt="{html.escape(alt)}">'


def html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def page_head(title: str) -> str:
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{CSS}</style></head><body><main>"
    )


PAGE_END = "</main></body></html>"

"""The page every HTML report shares: escaping, the inline style sheet, sections and tables.

Every text that came from a log, a file name or a job id goes through `esc`: control characters made visible
(as in the terminal) and then HTML-escaped, so no log line can open a tag, an attribute or a script. The page
carries no script at all and fetches nothing: it is read as it is, offline.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from crashcart.printable import printable

CSS = """
:root{--fg:#1d232b;--dim:#5b6470;--line:#d8dde3;--bg:#fff;--band:#f4f6f8;--bad:#c62828;--warn:#e08a00}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);
margin:0 auto;max-width:1180px;padding:18px 22px}
h1{font-size:20px;margin:0 0 6px}h2{font-size:16px;margin:26px 0 8px;border-bottom:1px solid var(--line)}
.verdict{border-left:6px solid var(--bad);background:var(--band);padding:10px 14px;border-radius:4px}
.verdict.calm{border-left-color:var(--warn)}
.cls{font-weight:700;font-size:18px}.dim{color:var(--dim)}.note{color:#8a5a00}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--band);padding:6px 8px;margin:4px 0 10px;overflow-x:auto;white-space:pre}
pre .hit{background:#ffe0e0;display:inline-block;min-width:100%}
table{border-collapse:collapse;width:100%;margin:4px 0}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--band);font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td code{white-space:pre-wrap;word-break:break-all}
svg{display:block;max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif;fill:var(--fg)}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:10px;height:10px;
margin-right:4px;vertical-align:middle;border-radius:2px}
footer{margin-top:26px;color:var(--dim);font-size:12px}
"""


def esc(text: object) -> str:
    """Any text for the page: control characters shown as escapes, then HTML-escaped (quotes too)."""
    return html.escape(printable(str(text)), quote=True)


def page(title: str, body: Iterable[str]) -> str:
    """The whole document: one file, its style inline, no script and no external resource."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        'img-src data:">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def section(anchor: str, title: str, content: str) -> str:
    return f'<section id="{anchor}"><h2>{esc(title)}</h2>\n{content}\n</section>'


def table(columns: Sequence[str], rows: Iterable[Sequence[str]], *, numeric: Sequence[int] = (), css: str = "") -> str:
    """A table of cells that are already HTML (the caller escapes them); `numeric` columns align right."""
    cls = [' class="num"' if i in numeric else "" for i in range(len(columns))]
    head = "".join(f"<th{c}>{esc(name)}</th>" for c, name in zip(cls, columns, strict=True))
    body = "".join(
        "<tr>" + "".join(f"<td{c}>{cell}</td>" for c, cell in zip(cls, row, strict=True)) + "</tr>" for row in rows
    )
    attr = f' class="{css}"' if css else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def legend(items: Iterable[tuple[str, str]]) -> str:
    """Colour keys: (colour, label)."""
    return (
        '<div class="legend">'
        + "".join(f'<span><i style="background:{c}"></i>{esc(t)}</span>' for c, t in items)
        + "</div>"
    )

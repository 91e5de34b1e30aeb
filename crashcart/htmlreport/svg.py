"""Small inline-SVG pieces the charts share: the time axis and its ticks, a tooltip, the colours.

Hand-written SVG from Python rather than a vendored chart library: a chart library's JavaScript (tens to
hundreds of KB) would have to run in the page, and a page built from logs is safer with no script at all; the
few shapes these charts need are a few lines each, and they render the same in a browser, a mail client's
viewer or a file preview.
"""

from __future__ import annotations

from datetime import timedelta

from crashcart.htmlreport.page import esc
from crashcart.htmlreport.placing import Axis

COLOURS = {
    "progress": "#2e9e44",
    "checkpoint": "#1f6fd1",
    "warning": "#c9a400",
    "symptom": "#f07b00",
    "root_cause": "#c62828",
}
TICKS = 6


def tip(text: str) -> str:
    """A tooltip (the browser shows an SVG <title> on hover); the text escaped."""
    return f"<title>{esc(text)}</title>" if text else ""


def n(x: float) -> str:
    """A coordinate, short: sizes of big charts are mostly their numbers."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def axis_ticks(axis: Axis, left: float, width: float, top: float, bottom: float) -> str:
    """Tick lines across the chart and their labels above it."""
    out = []
    for i in range(TICKS + 1):
        frac = i / TICKS
        x = left + frac * width
        if axis.mode == "time":
            assert axis.start is not None and axis.end is not None
            when = axis.start + timedelta(seconds=(axis.end - axis.start).total_seconds() * frac)
            span = axis.end - axis.start
            label = when.strftime("%m-%d %H:%M:%S" if span > timedelta(days=1) else "%H:%M:%S")
        else:
            label = f"{frac:.0%} of file"
        anchor = "start" if i == 0 else "end" if i == TICKS else "middle"
        out.append(
            f'<line x1="{n(x)}" y1="{n(top)}" x2="{n(x)}" y2="{n(bottom)}" stroke="#e3e7eb"/>'
            f'<text x="{n(x)}" y="{n(top - 6)}" text-anchor="{anchor}" class="tick">{esc(label)}</text>'
        )
    return "".join(out)

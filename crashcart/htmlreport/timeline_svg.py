"""The timeline as inline SVG: a row per lane, progress as a bar, checkpoints, warnings, symptoms and the root
cause as shapes, the failure point as a line and the cascade of symptoms after it as a band."""

from __future__ import annotations

from crashcart.htmlreport.lanes import Lane, Mark, Timeline
from crashcart.htmlreport.page import esc
from crashcart.htmlreport.svg import COLOURS, axis_ticks, n, tip

WIDTH, LABEL, RIGHT, LANE_H, TOP = 1100, 200, 16, 22, 46
CASCADE = "the cascade: symptoms after the root cause"
RED = COLOURS["root_cause"]


def timeline_svg(t: Timeline) -> str:
    width = WIDTH - LABEL - RIGHT
    height = TOP + LANE_H * len(t.lanes) + 8
    bottom = height - 4
    parts = [
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-label="timeline of events per node">',
        axis_ticks(t.axis, LABEL, width, TOP, bottom),
    ]
    for i, lane in enumerate(t.lanes):
        parts.append(_lane(lane, TOP + i * LANE_H, width, i % 2 == 1))
    if t.cascade is not None:  # over the lanes' backgrounds, light enough to see the marks through
        x0, x1 = (LABEL + x * width for x in t.cascade)
        parts.append(
            f'<rect class="cascade" x="{n(x0)}" y="{TOP}" width="{n(max(x1 - x0, 2))}" height="{n(bottom - TOP)}" '
            f'fill="{COLOURS["symptom"]}" fill-opacity="0.14" pointer-events="none">{tip(CASCADE)}</rect>'
        )
    if t.failure_x is not None:
        x = LABEL + t.failure_x * width
        parts.append(
            f'<line class="failure" x1="{n(x)}" y1="{TOP - 20}" x2="{n(x)}" y2="{n(bottom)}" stroke="{RED}" '
            f'stroke-width="1.5" stroke-dasharray="4 3"/>'
            f'<text x="{n(x)}" y="{TOP - 24}" fill="{RED}" font-weight="700" '
            f'text-anchor="{"end" if x > WIDTH - 200 else "start"}">{esc(t.failure_label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _lane(lane: Lane, y: float, width: float, odd: bool) -> str:
    mid = y + LANE_H / 2
    label = lane.name + (f" +{len(lane.folded)} alike" if lane.folded else "")
    names = f"{lane.name} and {len(lane.folded)} lanes with the same events: {', '.join(lane.folded[:20])}" + (
        " ..." if len(lane.folded) > 20 else ""
    )
    weight = ' font-weight="700"' if lane.faulty else ""
    background = "#fdeeee" if lane.faulty else "#f7f9fa" if odd else "#fff"
    out = [
        f'<g class="lane"><rect x="0" y="{n(y)}" width="{WIDTH}" height="{LANE_H}" fill="{background}"/>',
        f'<text x="6" y="{n(mid + 4)}"{weight}>{esc(label[:30])}{tip(names if lane.folded else lane.name)}</text>',
    ]
    out += [_mark(m, mid, width) for m in lane.marks]
    out.append("</g>")
    return "".join(out)


def _mark(m: Mark, mid: float, width: float) -> str:
    x = LABEL + m.x * width
    colour = COLOURS[m.kind]
    dash = ' stroke-dasharray="2 1.5"' if m.estimated else ""
    title = tip(m.tip + ("\n(time estimated from the file's timed lines around it)" if m.estimated else ""))
    if m.kind == "progress":
        x0 = LABEL + (m.start if m.start is not None else m.x) * width
        return (
            f'<rect class="mark progress" x="{n(x0)}" y="{n(mid - 3)}" width="{n(max(x - x0, 2))}" height="6" '
            f'rx="3" fill="{colour}" fill-opacity="0.55">{title}</rect>'
        )
    if m.kind == "checkpoint":
        d = f"M{n(x)} {n(mid - 6)}l5 6-5 6-5-6z"
        return f'<path class="mark checkpoint" d="{d}" fill="{colour}" stroke="#0b3d7a"{dash}>{title}</path>'
    if m.kind == "warning":
        return f'<circle class="mark warning" cx="{n(x)}" cy="{n(mid)}" r="3.5" fill="{colour}"{dash}>{title}</circle>'
    if m.kind == "symptom":
        d = f"M{n(x)} {n(mid - 6)}l6 11h-12z"
        return f'<path class="mark symptom" d="{d}" fill="{colour}" stroke="#7a3d00"{dash}>{title}</path>'
    return (
        f'<circle class="mark root_cause" cx="{n(x)}" cy="{n(mid)}" r="7" fill="{colour}" stroke="#4a0000" '
        f'stroke-width="1.5"{dash}>{title}</circle>'
    )

"""The node x time heatmap of error templates: in each time slice, how many distinct error shapes a node printed.

A template counts from its first to its last line (the report keeps those two, not every line), so a cell
says which error shapes were live on that node then. Error templates are those a failure rule fired on (not
only context rules such as checkpoint saves) and shapes new late in their file. Identical rows fold into
one, as the timeline's lanes do, and past MAX_ROWS the rest are counted.
"""

from __future__ import annotations

from pydantic import Field

from crashcart.agent.event_kinds import CollectiveTimeoutEvent, FailureEvent, XidEvent
from crashcart.agent.report import Report
from crashcart.agent.timeline import is_progress_template
from crashcart.htmlreport.lanes import lane_name, natural_key
from crashcart.htmlreport.page import esc
from crashcart.htmlreport.placing import Axis, Placer
from crashcart.htmlreport.svg import axis_ticks, n, tip
from crashcart.knowledge.records import Strict
from crashcart.knowledge.taxonomy import Role
from crashcart.parsers.models import TemplateStat

BINS = 48
MAX_ROWS = 40
WIDTH, LABEL, RIGHT, ROW_H, TOP = 1100, 200, 16, 16, 30


class Row(Strict):
    name: str
    folded: list[str] = Field(default_factory=list)
    cells: list[list[int]]  # per bin: indexes into Heatmap.templates
    faulty: bool = False


class Heatmap(Strict):
    axis: Axis
    templates: list[str]  # the error templates' texts, as the cells index them
    rows: list[Row]
    rows_total: int
    rows_folded: int
    rows_not_drawn: int
    not_placed: int  # templates in files with no timed line


def error_templates(report: Report) -> list[TemplateStat]:
    """Templates a non-context rule fired on, or new late in their file; never progress lines."""
    signals = [e for e in report.events if isinstance(e, FailureEvent | XidEvent | CollectiveTimeoutEvent)]
    context = {e.rule_id for e in signals if e.role is Role.CONTEXT}
    failing = {e.rule_id for e in signals if e.role in (Role.ROOT_CAUSE, Role.SYMPTOM)}
    return [
        t
        for t in report.templates
        if not is_progress_template(t.template)
        and (any(r in failing or r not in context for r in t.rule_ids) or (t.new and not t.rule_ids))
    ]


def build_heatmap(report: Report, placer: Placer | None = None) -> Heatmap:
    placer = placer or Placer(report)
    stats = error_templates(report)
    texts = list(dict.fromkeys(t.template for t in stats))
    index = {text: i for i, text in enumerate(texts)}
    grid: dict[str, list[set[int]]] = {}
    not_placed = 0
    for t in stats:
        first, last = placer.place(t.first), placer.place(t.last)
        if first is None or last is None:
            not_placed += 1
            continue
        row = grid.setdefault(lane_name(t.first), [set() for _ in range(BINS)])
        lo, hi = sorted((_bin(first.x), _bin(last.x)))
        for b in range(lo, hi + 1):
            row[b].add(index[t.template])
    faulty = set(report.diagnosis.faulty_nodes)
    groups: dict[tuple[object, ...], list[str]] = {}
    for name in sorted(grid, key=natural_key):
        key = (name,) if name in faulty else tuple(tuple(sorted(c)) for c in grid[name])
        groups.setdefault(key, []).append(name)
    rows = [
        Row(name=names[0], folded=names[1:], cells=[sorted(c) for c in grid[names[0]]], faulty=names[0] in faulty)
        for names in groups.values()
    ]
    rows.sort(key=lambda r: (not r.faulty, -max(len(c) for c in r.cells), -len(r.folded), natural_key(r.name)))
    return Heatmap(
        axis=placer.axis,
        templates=texts,
        rows=rows[:MAX_ROWS],
        rows_total=len(grid),
        rows_folded=sum(len(names) - 1 for names in groups.values()),
        rows_not_drawn=max(0, len(rows) - MAX_ROWS),
        not_placed=not_placed,
    )


def _bin(x: float) -> int:
    return min(BINS - 1, max(0, int(x * BINS)))


def heatmap_svg(h: Heatmap) -> str:
    width = WIDTH - LABEL - RIGHT
    cell = width / BINS
    height = TOP + ROW_H * len(h.rows) + 8
    peak = max((len(c) for r in h.rows for c in r.cells), default=1) or 1
    parts = [
        f'<svg class="heatmap" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-label="error templates per node over time">',
        axis_ticks(h.axis, LABEL, width, TOP, height - 4),
    ]
    for i, row in enumerate(h.rows):
        y = TOP + i * ROW_H
        label = row.name + (f" +{len(row.folded)} alike" if row.folded else "")
        names = f"{row.name} and {len(row.folded)} alike: {', '.join(row.folded[:20])}" if row.folded else row.name
        weight = ' font-weight="700"' if row.faulty else ""
        parts.append(f'<g class="row"><text x="6" y="{n(y + ROW_H - 4)}"{weight}>{esc(label[:30])}{tip(names)}</text>')
        for b, found in enumerate(row.cells):
            if not found:
                continue
            shade = 0.25 + 0.75 * len(found) / peak
            shapes = "; ".join(f"T{i + 1}" for i in found[:8]) + (" ..." if len(found) > 8 else "")
            parts.append(
                f'<rect class="cell" x="{n(LABEL + b * cell)}" y="{n(y + 1)}" width="{n(cell - 1)}" '
                f'height="{ROW_H - 2}" fill="#b71c1c" fill-opacity="{shade:.2f}">'
                f"{tip(f'{row.name}: {len(found)} error template(s) live: {shapes}')}</rect>"
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)

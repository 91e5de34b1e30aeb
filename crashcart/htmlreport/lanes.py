"""The timeline of a job as swimlanes: one lane per node (or rank, or file), its events as marks.

A 1,000-node job would draw a thousand lanes that mostly say the same thing (the healthy ranks all time out
together), so lanes whose marks are the same (same kinds and rules at the same places) fold into one that
says how many it stands for, and past MAX_LANES the least telling lanes are counted, not drawn. The lanes with
the root cause and the faulty nodes always come first. The diagnosis' evidence is drawn too, where the report's
kept events lack it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Literal

from pydantic import Field

from crashcart.agent.event_kinds import CheckpointEvent, ProgressEvent
from crashcart.agent.report import Report
from crashcart.agent.timeline import is_progress_template
from crashcart.htmlreport.placing import Axis, Placer
from crashcart.knowledge.records import LineRef, Strict
from crashcart.knowledge.taxonomy import Role

MAX_LANES = 40
FOLD_GRID = 200  # marks closer than 1/FOLD_GRID of the axis count as the same place when lanes are compared
MarkKind = Literal["progress", "checkpoint", "warning", "symptom", "root_cause"]
_ORDER: dict[MarkKind, int] = {"progress": 0, "checkpoint": 1, "warning": 2, "symptom": 3, "root_cause": 4}


class Mark(Strict):
    """One event on a lane; progress is drawn as a bar from `start` to `x`."""

    kind: MarkKind
    x: float
    start: float | None = None
    estimated: bool = False
    what: str  # rule id, checkpoint op or iteration: what folding compares
    tip: str  # the tooltip: the line and where it is (raw text: the renderer escapes it)


class Lane(Strict):
    name: str
    faulty: bool = False
    folded: list[str] = Field(default_factory=list)  # the other lanes drawn as this one
    marks: list[Mark]


class Timeline(Strict):
    """What the timeline section draws, and what it left out (each count is said on the page)."""

    axis: Axis
    lanes: list[Lane]
    lanes_total: int  # lanes before folding and the cap
    lanes_folded: int  # lanes drawn as another identical one
    lanes_not_drawn: int  # past MAX_LANES
    events_not_placed: int  # no time, in a file with no timed line
    events_outside: int = 0  # off a zoomed axis
    events_omitted: int  # left out of the report itself (the report keeps the first events)
    failure_x: float | None = None  # the earliest root cause: the failure point
    failure_label: str = ""
    cascade: tuple[float, float] | None = None  # from the failure point to the last symptom


def lane_name(ref: LineRef) -> str:
    """The lane of a line: its node, else its rank, else its file."""
    if ref.node:
        return ref.node
    return f"rank {ref.rank}" if ref.rank is not None else ref.file


def natural_key(name: str) -> list[int | str]:
    """node2 before node10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def build_timeline(report: Report, placer: Placer | None = None) -> Timeline:
    placer = placer or Placer(report)
    cited = {(e.file, e.line) for e in report.diagnosis.evidence}
    by_lane: dict[str, list[Mark]] = {}
    not_placed = outside = 0
    for event in drawn_lines(report):
        where = placer.place(event)
        if where is None:
            not_placed += 1
            continue
        if not -0.001 <= where.x <= 1.001:  # off a zoomed axis
            outside += 1
            continue
        mark = _mark(event, where.x, where.estimated, (event.file, event.line) in cited)
        by_lane.setdefault(lane_name(event), []).append(mark)
    began = _training_starts(report, placer)
    for name, marks in by_lane.items():
        for i, m in enumerate(marks):
            if m.kind == "progress":
                marks[i] = m.model_copy(update={"start": max(0.0, min(began.get(name, 0.0), m.x))})
        marks.sort(key=lambda m: (_ORDER[m.kind], m.x))
    faulty = set(report.diagnosis.faulty_nodes)
    lanes = [Lane(name=n, faulty=n in faulty, marks=m) for n, m in by_lane.items()]
    drawn, folded = _fold(lanes)
    drawn.sort(key=_importance)
    causes = [m.x for lane in lanes for m in lane.marks if m.kind == "root_cause"]
    symptoms = [m.x for lane in lanes for m in lane.marks if m.kind == "symptom"]
    failure = min(causes) if causes else None
    d = report.diagnosis
    return Timeline(
        axis=placer.axis,
        lanes=drawn[:MAX_LANES],
        lanes_total=len(lanes),
        lanes_folded=folded,
        lanes_not_drawn=max(0, len(drawn) - MAX_LANES),
        events_not_placed=not_placed,
        events_outside=outside,
        events_omitted=report.events_omitted,
        failure_x=failure,
        failure_label=f"failure: {d.failure_class.value}" + (f" on {', '.join(d.faulty_nodes[:3])}" if faulty else ""),
        cascade=(failure, max(symptoms)) if failure is not None and symptoms and max(symptoms) > failure else None,
    )


def drawn_lines(report: Report) -> list[LineRef]:
    """The events, and the evidence lines the kept events lack: a big job's report keeps its first events only,
    and the diagnosis' own lines (the root cause above all) must be on the timeline whatever was cut."""
    events: list[LineRef] = list(report.events)
    seen = {(e.file, e.line) for e in events}
    return events + [ev for ev in report.diagnosis.evidence if (ev.file, ev.line) not in seen]


def _training_starts(report: Report, placer: Placer) -> dict[str, float]:
    """Where each lane's progress lines began (the first line of its progress template): a progress bar's start."""
    starts: dict[str, float] = {}
    for t in report.templates:
        if is_progress_template(t.template):
            where = placer.place(t.first)
            if where is not None:
                name = lane_name(t.first)
                starts[name] = min(starts.get(name, where.x), where.x)
    return starts


def zoom_window(report: Report, placer: Placer) -> tuple[datetime, datetime] | None:
    """From a little before the root cause to the last event, when that is a small part of the whole axis: the
    cascade of a long job happens in its last minutes."""
    axis = placer.axis
    if axis.start is None or axis.end is None:
        return None
    causes, last = [], None
    for event in drawn_lines(report):
        found = placer.time_of(event)
        if found is None:
            continue
        last = found[0] if last is None else max(last, found[0])
        if getattr(event, "role", None) is Role.ROOT_CAUSE and getattr(event, "demoted", None) is None:
            causes.append(found[0])
    if not causes or last is None:
        return None
    failure = min(causes)
    start = failure - max(timedelta(seconds=30), (last - failure) * 0.15)
    end = last + max(timedelta(seconds=5), (last - failure) * 0.05)
    if (end - start) > (axis.end - axis.start) * 0.5:
        return None
    return start, end


def _mark(event: LineRef, x: float, estimated: bool, cited: bool) -> Mark:
    count = getattr(event, "count", 1)  # an event's; an evidence line stands for itself
    where = f"{event.file}:{event.line}" + (f" ×{count}" if count > 1 else "")
    tip = f"{where}\n{event.text[:300]}"
    if isinstance(event, ProgressEvent):
        return Mark(
            kind="progress",
            x=x,
            estimated=estimated,
            what=f"it{event.iteration}",
            tip=f"iteration {event.iteration}: {tip}",
        )
    if isinstance(event, CheckpointEvent):
        return Mark(kind="checkpoint", x=x, estimated=estimated, what=event.op, tip=f"checkpoint {event.op}: {tip}")
    role = getattr(event, "role", Role.CONTEXT)
    rule = getattr(event, "rule_id", None) or ""
    demoted = getattr(event, "demoted", None)
    if role is Role.ROOT_CAUSE and demoted is None:
        kind: MarkKind = "root_cause"
    elif role is Role.SYMPTOM and demoted is None:
        kind = "symptom"
    else:
        kind = "warning"
    label = {"root_cause": "root cause", "symptom": "symptom", "warning": "warning"}[kind]
    why = f" ({demoted})" if demoted else ""
    return Mark(
        kind=kind, x=x, estimated=estimated, what=rule, tip=f"{label}{why} [{rule}]{' cited' if cited else ''}: {tip}"
    )


def _fold(lanes: Sequence[Lane]) -> tuple[list[Lane], int]:
    """Lanes with the same marks at the same places as one (a faulty lane is never folded); how many folded."""
    groups: dict[tuple[object, ...], list[Lane]] = {}
    for lane in sorted(lanes, key=lambda lane: natural_key(lane.name)):
        shape = (lane.name,) if lane.faulty else tuple((m.kind, m.what, round(m.x * FOLD_GRID)) for m in lane.marks)
        groups.setdefault(shape, []).append(lane)
    drawn = [g[0].model_copy(update={"folded": [x.name for x in g[1:]]}) for g in groups.values()]
    return drawn, sum(len(g) - 1 for g in groups.values())


def _importance(lane: Lane) -> tuple[int, int, list[int | str]]:
    kinds = {m.kind for m in lane.marks}
    if lane.faulty or "root_cause" in kinds:
        rank = 0
    elif "symptom" in kinds:
        rank = 1
    elif "warning" in kinds:
        rank = 2
    else:
        rank = 3
    return rank, -len(lane.folded), natural_key(lane.name)

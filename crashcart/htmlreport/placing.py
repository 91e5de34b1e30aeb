"""Where on a job's time axis a log line goes, for the timeline and the heatmap.

Many lines carry no timestamp (a checkpoint message, a traceback), so a line without one is placed by its
file's timed lines around it: linearly between the nearest two by line number, or at the nearest one past
either end, and drawn as estimated. A file with no timed line at all cannot be placed, and says so. A job
with no timestamp anywhere is drawn on each line's position in its own file instead.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from copy import copy
from datetime import datetime, timedelta
from typing import Literal

from crashcart.agent.report import Report
from crashcart.knowledge.records import LineRef, Strict


class Axis(Strict):
    """The x axis: time from start to end, or (no timestamps at all) the position of a line in its file."""

    mode: Literal["time", "line"]
    start: datetime | None = None
    end: datetime | None = None


class Place(Strict):
    x: float  # 0 (axis start) to 1 (axis end); outside that on a zoomed axis
    estimated: bool = False  # the line had no time of its own


def _refs(report: Report) -> Iterable[LineRef]:
    yield from report.events
    for t in report.templates:
        yield t.first
        yield t.last
    yield from report.diagnosis.evidence


class Placer:
    """Places a report's lines on one axis, from the timed lines the report holds (events, templates, evidence)."""

    def __init__(self, report: Report) -> None:
        anchors: dict[str, dict[int, datetime]] = defaultdict(dict)
        self._last_line: dict[str, int] = defaultdict(int)
        for ref in _refs(report):
            self._last_line[ref.file] = max(self._last_line[ref.file], ref.line)
            if ref.time is not None:
                anchors[ref.file].setdefault(ref.line, _naive(ref.time))
        self._anchors = {f: sorted(a.items()) for f, a in anchors.items()}
        times = [t for a in self._anchors.values() for _, t in a]
        if times:
            start, end = min(times), max(times)
            self.axis = Axis(mode="time", start=start, end=end if end > start else start + timedelta(seconds=1))
        else:
            self.axis = Axis(mode="line")

    def time_of(self, ref: LineRef) -> tuple[datetime, bool] | None:
        """The line's time and whether it was estimated; None when its file has no timed line."""
        if ref.time is not None:
            return _naive(ref.time), False
        anchors = self._anchors.get(ref.file)
        if not anchors:
            return None
        lines = [line for line, _ in anchors]
        i = bisect_left(lines, ref.line)
        if i == 0:
            return anchors[0][1], True
        if i == len(anchors):
            return anchors[-1][1], True
        (l0, t0), (l1, t1) = anchors[i - 1], anchors[i]
        return t0 + (t1 - t0) * ((ref.line - l0) / (l1 - l0)), True

    def zoomed(self, start: datetime, end: datetime) -> Placer:
        """The same placing on a narrower time axis (a line outside it gets an x below 0 or above 1)."""
        other = copy(self)
        other.axis = Axis(mode="time", start=start, end=max(end, start + timedelta(seconds=1)))
        return other

    def place(self, ref: LineRef) -> Place | None:
        if self.axis.mode == "line":
            return Place(x=ref.line / max(self._last_line[ref.file], 1), estimated=True)
        found = self.time_of(ref)
        if found is None:
            return None
        return Place(x=self.x_of(found[0]), estimated=found[1])

    def x_of(self, when: datetime) -> float:
        assert self.axis.start is not None and self.axis.end is not None
        span = (self.axis.end - self.axis.start).total_seconds()
        return (when - self.axis.start).total_seconds() / span


def _naive(when: datetime) -> datetime:
    """Log times mostly carry no zone; a zoned one is compared as its wall-clock time."""
    return when.replace(tzinfo=None)

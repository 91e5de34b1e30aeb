"""Each rank's progress over time: its progress lines, the last one, and the cadence between them.

A rank that went on making progress after a message was not killed by it, and the job failed where progress
stopped. Both questions are answered here from the scanner's MetricPoints (the last progress lines of each
rank of a file) and the first and last lines of each progress template, per (file, node, rank): rank None is
the file's only printer, which stands for every rank of its file.

Timelines are plain dataclasses, not pydantic records: a job of 20k per-rank files carries up to 128 points
each, and they never leave the agent.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from statistics import median

from crashcart.parsers.models import FileScan
from crashcart.parsers.numbers import small_int

PROGRESS_TEMPLATE = re.compile(r"(?i)\b(?:iteration|iter|global_step|step)\b[^|]{0,12}<NUM>")
PROGRESS_VALUE = re.compile(r"(?i)\b(?:iteration|iter|global_step|step)\b\D{0,12}?(\d+)")


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress line: where, when, and the iteration it reported."""

    line: int
    time: datetime | None
    iteration: int
    text: str


@dataclass(frozen=True, slots=True)
class Timeline:
    """The progress lines of one printer (file, node, rank), in line order, one per line."""

    file: str
    node: str | None
    rank: int | None
    points: tuple[Progress, ...]

    @property
    def last(self) -> Progress:
        return self.points[-1]

    @property
    def cadence(self) -> float | None:
        """Seconds between progress lines (the median gap of consecutive timed ones), None below two."""
        gaps = [
            (b.time - a.time).total_seconds()
            for a, b in zip(self.points, self.points[1:], strict=False)
            if a.time is not None and b.time is not None and b.time > a.time
        ]
        return median(gaps) if gaps else None

    def kept_going(self, line: int | None, time: datetime | None) -> bool:
        """Whether this printer made progress after a moment (a line of its own file, else a time).

        Progress means a later line with a higher iteration than the last one before the moment; with none
        before it, two later lines, the second higher: one stray number is no progress.
        """
        if line is not None:
            lines = [p.line for p in self.points]
            before = list(self.points[: bisect_left(lines, line)])
            after = list(self.points[bisect_right(lines, line) :])
        elif time is not None:
            timed = [(p.time, p) for p in self.points if p.time is not None]
            before, after = [p for t, p in timed if t <= time], [p for t, p in timed if t > time]
        else:
            return False
        if before:
            return any(p.iteration > before[-1].iteration for p in after)
        return any(p.iteration > after[0].iteration for p in after[1:])


def timelines(scans: Sequence[FileScan]) -> list[Timeline]:
    """Every printer's timeline: metric points with an iteration, and progress templates' first and last lines.

    Lines that also matched a rule are left out: `*** STEP 6053.0 ON ... CANCELLED` is Slurm's step, not a
    training step. A line is counted once, for the printer that saw it first (metric points come first).
    """
    out: list[Timeline] = []
    for scan in scans:
        taken = {hit.ref.line for hit in scan.hits}
        found: dict[tuple[str | None, int | None], list[Progress]] = {}
        for line, time, node, rank, text, iteration in _progress_lines(scan):
            if line in taken:
                continue
            taken.add(line)
            key = (node or scan.node, rank if rank is not None else scan.rank)
            found.setdefault(key, []).append(Progress(line, time, iteration, text))
        for (node, rank), points in found.items():
            out.append(Timeline(scan.file, node, rank, tuple(sorted(points, key=lambda p: p.line))))
    return out


_Line = tuple[int, datetime | None, str | None, int | None, str, int]


def _progress_lines(scan: FileScan) -> Iterable[_Line]:
    """(line, time, node, rank, text, iteration) of every progress line the scan kept."""
    for point in scan.metrics:
        if point.iteration is not None:
            yield point.line, point.time, point.node, point.rank, point.text, point.iteration
    for stat in scan.templates:
        if is_progress_template(stat.template):
            for ref in (stat.first, stat.last):
                iteration = progress_value(ref.text)
                if iteration is not None:
                    yield ref.line, ref.time, ref.node, ref.rank, ref.text, iteration


@lru_cache(maxsize=1 << 16)
def is_progress_template(template: str) -> bool:
    """A template of progress lines (iteration/step and its number). Cached: 20k per-rank files share their
    templates' texts, and the regex would run on every file's copy."""
    return PROGRESS_TEMPLATE.search(template) is not None


def progress_value(text: str) -> int | None:
    """The iteration a progress line reports, if it is a sane number."""
    value = PROGRESS_VALUE.search(text)
    return small_int(value.group(1)) if value else None


class TimelineIndex:
    """The timelines by file and by node, to find the printers a line belongs to."""

    def __init__(self, lines: Sequence[Timeline]) -> None:
        self.lines = list(lines)
        self._by_file: dict[str, list[Timeline]] = {}
        self._by_node: dict[str, list[Timeline]] = {}
        for t in self.lines:
            self._by_file.setdefault(t.file, []).append(t)
            if t.node:
                self._by_node.setdefault(t.node, []).append(t)

    def owners(self, file: str, node: str | None, rank: int | None) -> tuple[list[Timeline], bool]:
        """The printers a line of (file, node, rank) speaks for, and whether they share its file.

        In its own file: the same rank and the file's rank-less printer, or all of them for a rank-less line.
        Across files (compared by time): the same node and rank, or all of the node's printers.
        """
        mine = [t for t in self._by_file.get(file, []) if rank is None or t.rank in (rank, None)]
        if mine:
            return mine, True
        others = [t for t in self._by_node.get(node or "", []) if t.file != file and (rank is None or t.rank == rank)]
        return others, False

    def survived(self, file: str, node: str | None, rank: int | None, line: int, time: datetime | None) -> bool:
        """Every printer the line belongs to made progress after it (and there is at least one)."""
        owners, same_file = self.owners(file, node, rank)
        at = line if same_file else None
        return bool(owners) and all(t.kept_going(at, time) for t in owners)


def first_to_stop(lines: Sequence[Timeline]) -> Timeline | None:
    """The printer whose progress stopped first, when one clearly did: by time where every printer has one
    (earlier than the next by more than its cadence), else by the lowest last iteration. None for one printer."""
    if len(lines) < 2:
        return None
    if all(t.last.time is not None for t in lines):
        ordered = sorted(lines, key=lambda t: t.last.time or datetime.min)
        first, second = ordered[0], ordered[1]
        gap = ((second.last.time or datetime.min) - (first.last.time or datetime.min)).total_seconds()
        return first if gap > max(first.cadence or 0.0, 1.0) else None
    ordered = sorted(lines, key=lambda t: t.last.iteration)
    return ordered[0] if ordered[0].last.iteration < ordered[1].last.iteration else None

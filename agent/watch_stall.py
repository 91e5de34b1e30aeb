"""Progress per printer while a job runs, and the stall it shows: no rank has stepped for too long.

A printer is a (file, rank) that prints iteration lines; rank None is a file's only printer (Megatron's logging
rank of a node). Each keeps its last iteration, when that arrived, and a few gaps between its progress lines
(from the lines' own time stamps, else from when they arrived), which give the job's cadence: the default
threshold is STALL_CADENCES of it, and never under MIN_STALL_S. Memory is a few numbers and one line per printer.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from statistics import median

from crashcart.agent.watch_reports import StallReport
from crashcart.knowledge.records import LineRef

MIN_STALL_S = 300.0  # five minutes: a checkpoint save or an evaluation pause is no stall
STALL_CADENCES = 10  # ... nor is anything shorter than ten of the job's own intervals
GAPS_KEPT = 32  # intervals kept per printer for its cadence
MAX_PRINTERS = 1 << 16  # printers (and files' last lines) kept: a week of rotated file names stays bounded


@dataclass(slots=True)
class Printer:
    """One printer's progress so far."""

    iteration: int
    at: float  # monotonic time its last new iteration arrived
    ref: LineRef  # that progress line
    gaps: deque[float] = field(default_factory=lambda: deque(maxlen=GAPS_KEPT))


class StallWatch:
    """Per-printer progress; `check` says once per stall that every printer stopped, naming the first to stop."""

    def __init__(self, stall_after: float | None = None) -> None:
        self.stall_after = stall_after
        self._printers: dict[tuple[str, int | None], Printer] = {}
        self._last_lines: dict[str, tuple[int, str]] = {}  # each file's last line (number, text): whose ends differ
        self._reported = False  # this stall is reported; the next progress line re-arms it
        self._latest = float("-inf")  # when the last progress line of any printer arrived

    def progress(self, file: str, rank: int | None, iteration: int, ref: LineRef, now: float) -> bool:
        """A progress line read at `now`; whether it is progress: a higher iteration than the printer's last, or a
        lower one, which is a restart from a checkpoint (the same iteration again is not)."""
        held = self._printers.get((file, rank))
        if held is None or iteration < held.iteration:
            gaps = held.gaps if held is not None else deque(maxlen=GAPS_KEPT)  # a restart keeps the cadence
            if held is None and len(self._printers) >= MAX_PRINTERS:  # rotated-away names: the stalest goes
                del self._printers[min(self._printers, key=lambda k: self._printers[k].at)]
            self._printers[(file, rank)] = Printer(iteration, now, ref, gaps)
            self._moved(now)
            return True
        if iteration == held.iteration:
            return False
        gap = _seconds(held.ref.time, ref.time) or (now - held.at)
        if gap > 0:  # a backlog read at once arrives in no time: no interval to learn from
            held.gaps.append(gap)
        held.iteration, held.at, held.ref = iteration, now, ref
        self._moved(now)
        return True

    def _moved(self, now: float) -> None:
        """A printer made progress at `now`: the stall, if one was reported, is over."""
        self._latest = max(self._latest, now)
        self._reported = False

    def last_line(self, file: str, line: int, text: str) -> None:
        if file not in self._last_lines and len(self._last_lines) >= MAX_PRINTERS:
            del self._last_lines[next(iter(self._last_lines))]  # the file first seen longest ago
        self._last_lines[file] = (line, text)

    def threshold(self) -> float:
        """--stall-after, else STALL_CADENCES of the median interval of every printer, at least MIN_STALL_S."""
        if self.stall_after is not None:
            return self.stall_after
        gaps = [g for p in self._printers.values() for g in p.gaps]
        return max(MIN_STALL_S, STALL_CADENCES * median(gaps)) if gaps else MIN_STALL_S

    def check(self, now: float, shape: Callable[[str], int]) -> StallReport | None:
        """The stall, once, when no printer has made progress for the threshold; `shape` templates a line."""
        latest = self._latest
        floor = self.stall_after if self.stall_after is not None else MIN_STALL_S
        if self._reported or not self._printers or now - latest < floor:  # asked every poll: cheap until then
            return None
        threshold = self.threshold()
        if now - latest < threshold:
            return None
        self._reported = True
        (file, rank), printer, why = self._culprit(shape)
        evidence = [printer.ref]
        last = self._last_lines.get(file)
        if last is not None and last[0] != printer.ref.line:
            evidence.append(printer.ref.model_copy(update={"line": last[0], "text": last[1], "time": None}))
        return StallReport(
            time=datetime.now(UTC),
            stalled_s=round(now - latest, 1),
            threshold_s=round(threshold, 1),
            nodes=[printer.ref.node] if printer.ref.node else [],
            rank=rank if rank is not None else printer.ref.rank,
            iteration=printer.iteration,
            why=why,
            evidence=evidence,
        )

    def _culprit(self, shape: Callable[[str], int]) -> tuple[tuple[str, int | None], Printer, str]:
        """The printer behind its peers, else the one whose file ends unlike the others, else the first."""
        printers = sorted(self._printers.items(), key=lambda kv: (kv[1].iteration, kv[1].at, kv[0][0]))
        key, first = printers[0]
        furthest = printers[-1][1].iteration
        if first.iteration < furthest:
            return key, first, f"stopped first, at iteration {first.iteration} (others reached {furthest})"
        shapes = {k: shape(self._last_lines[k[0]][1]) for k, _ in printers if k[0] in self._last_lines}
        counts = Counter(shapes.values())
        odd = [k for k, s in shapes.items() if counts[s] == 1] if len(shapes) >= 3 and len(counts) > 1 else []
        if odd:
            printer = self._printers[odd[0]]
            return odd[0], printer, f"every rank stopped at iteration {printer.iteration}; its last line differs"
        return key, first, f"every rank stopped at iteration {first.iteration} at once; none differs"


def _seconds(a: datetime | None, b: datetime | None) -> float:
    """Seconds from a to b when both are known and b is later, else 0."""
    if a is None or b is None:
        return 0.0
    try:
        return max(0.0, (b - a).total_seconds())
    except TypeError:  # one aware, one naive: no interval to learn from
        return 0.0

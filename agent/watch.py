"""The streaming state of the pipeline over logs that are still being written: what to report, and when.

Each chunk of new lines goes through the triage scan's own parts: the rule filter (Hyperscan, then RE2 on the
candidate lines), the line reader that says which node and rank printed a line, and the progress pattern. A
root-cause line is reported the moment its chunk is read, once per failure class and place (an XID repeated on
one node is one report); progress lines feed the stall watch; a line the rules know as the job's end (stage
`shutdown`: torchrun's ChildFailedError, srun's task exits) marks the job as ending. Nothing is kept of the lines
themselves: per file its attribution and year, per printer its progress, the set of reports made, and the
templater's clusters (bounded by distinct templates), which tell whose last lines differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from crashcart.agent.actions import drain_command
from crashcart.agent.watch_reports import RootCauseReport, StallReport
from crashcart.agent.watch_stall import StallWatch
from crashcart.knowledge.records import LineRef, is_host, rank_place
from crashcart.knowledge.rules import Rule
from crashcart.knowledge.taxonomy import Action, FailureClass, Role, Stage
from crashcart.parsers.attribution import Attribution, attribution_from_path, rank_prefix
from crashcart.parsers.metrics import MAX_LINE, read_point
from crashcart.parsers.rulefilter import RuleFilter, line_at
from crashcart.parsers.scan import LineReader
from crashcart.parsers.structure import ProgressFinder
from crashcart.parsers.templater import KEPT_LINE_BYTES, Templater
from crashcart.parsers.timestamps import YearTracker

MAX_FILES = 100_000  # files whose attribution and year are kept; past it they are read again (bounded memory)


class Watcher:
    """Fed the new lines of each file as they arrive; gives the reports they call for."""

    def __init__(self, rules: Sequence[Rule], stall_after: float | None = None) -> None:
        self.filter = RuleFilter(rules)
        self.lines = LineReader()
        self.templater = Templater()
        self.stalls = StallWatch(stall_after)
        self._progress = ProgressFinder()
        self._files: dict[str, tuple[Attribution, YearTracker]] = {}
        self._reported: set[tuple[FailureClass, str | None]] = set()  # (class, place) reported; place None: no place
        self._strongest: dict[str, int] = {}  # the highest priority reported for each place
        self.ending = False  # a line the rules know as the job's end was read, and no progress since
        self._feeds = self._ending_feed = 0  # feeds so far, and the one that read the ending line

    def feed(self, file: str, base: int, data: bytes, now: float) -> list[RootCauseReport]:
        """The whole lines `data` of `file` (lines base+1 on), read at monotonic time `now`."""
        self._feeds += 1
        where, years = self._file(file)
        years.learn(data)
        reports = self._hits(file, base, data, where, years.year)
        self._progress_lines(file, base, data, where, years.year, now)
        end = data.rfind(b"\n", 0, len(data) - 1) + 1
        last = data[end : end + KEPT_LINE_BYTES].rstrip(b"\r\n")
        self.stalls.last_line(file, base + data.count(b"\n"), last.decode("utf-8", "replace"))
        return reports

    def check_stall(self, now: float) -> StallReport | None:
        """The stall report, once per stall; none once the job is ending (its ranks have stopped on purpose)."""
        if self.ending:
            return None
        return self.stalls.check(now, lambda text: self.templater.template_index(text.encode()))

    def _file(self, file: str) -> tuple[Attribution, YearTracker]:
        held = self._files.get(file)
        if held is None:
            if len(self._files) >= MAX_FILES:
                self._files.clear()
            held = self._files[file] = (attribution_from_path(file), YearTracker())
        return held

    def _hits(self, file: str, base: int, data: bytes, where: Attribution, year: int | None) -> list[RootCauseReport]:
        """Root-cause lines not reported yet; a shutdown-stage line marks the job as ending."""
        reports: list[RootCauseReport] = []
        no, pos = base, 0
        for line_start, index in self.filter.candidates(data):
            rule = self.filter.rules[index]
            wanted = rule.role is Role.ROOT_CAUSE and not rule.generic
            if not wanted and (self.ending or rule.stage is not Stage.SHUTDOWN):
                continue
            line_end, text = line_at(data, line_start)
            if self.filter.confirm(index, line_start, line_end, text) is None:
                continue
            no += data.count(b"\n", pos, line_start)
            pos = line_start
            if rule.stage is Stage.SHUTDOWN:
                self.ending, self._ending_feed = True, self._feeds
            if wanted:
                ref = self.lines.ref(text, no + 1, where, file, year)
                report = self._report(rule, ref)
                if report is not None:
                    reports.append(report)
        return reports

    def _report(self, rule: Rule, ref: LineRef) -> RootCauseReport | None:
        """The report of a root-cause line, unless it says nothing new: its class was reported for its place, or
        a stronger rule's was (a CUDA failure on the node whose GPU fell off the bus is that fall's consequence),
        or, for a line that names no place, its class was reported anywhere."""
        place = ref.node or (rank_place(ref.rank) if ref.rank is not None else None)
        cls = rule.failure_class
        if place is None:
            if any(c == cls for c, _ in self._reported):
                return None
        elif (cls, place) in self._reported or self._strongest.get(place, -1) >= rule.priority:
            return None
        self._reported.add((cls, place))
        if place is not None:
            self._strongest[place] = max(self._strongest.get(place, -1), rule.priority)
        action = rule.resolved_action
        drains = action is Action.DRAIN_NODE_AND_RETRY and ref.node is not None and is_host(ref.node)
        return RootCauseReport(
            time=datetime.now(UTC),
            failure_class=rule.failure_class,
            action=action,
            rule_id=rule.id,
            explanation=rule.explanation,
            nodes=[ref.node] if ref.node else [],
            rank=ref.rank,
            drain=drain_command(ref.node, f"crashcart: {rule.id}") if drains and ref.node else None,
            evidence=[ref],
        )

    def _progress_lines(
        self, file: str, base: int, data: bytes, where: Attribution, year: int | None, now: float
    ) -> None:
        """Each printer's last progress line of the chunk, read for its iteration."""
        last: dict[int | None, int] = {}
        for start in self._progress.starts(data):
            rank = rank_prefix(data[start : start + 64])
            last[rank if rank is not None else where.rank] = start
        for rank, start in last.items():
            end = data.find(b"\n", start)
            text = data[start : min(end, start + MAX_LINE)].rstrip(b"\r").decode("utf-8", "replace")
            ref = self.lines.once(text, base + data.count(b"\n", 0, start) + 1, where, file, year)
            point = read_point(ref)
            if point is not None and point.iteration is not None:
                moved = self.stalls.progress(file, rank, point.iteration, ref, now)
                if moved and self.ending and self._feeds > self._ending_feed:  # progress read after the end:
                    self.ending = False  # the launcher restarted the workers (torchrun --max-restarts)

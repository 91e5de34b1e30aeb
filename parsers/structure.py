"""Multi-line structure in a streamed file: tracebacks and stack dumps, and the progress lines' numbers.

One more Hyperscan pass per block finds the first lines of tracebacks and stack dumps and the candidate
progress lines. Python runs only at those lines: a structure's window (its header and the lines after it, carried
over a block boundary when it runs past one) goes to parsers.tracebacks once; progress lines go to a
ProgressTrail. So a file without tracebacks costs one native pass, however long it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

import hyperscan

from crashcart.knowledge.records import LineRef, shift_ref
from crashcart.parsers.dbcache import cached_database
from crashcart.parsers.headless import (
    HEADLESS_LINES,
    chain_head,
    earlier_link,
    headless_starts,
    may_start_inside,
    printer_prefix,
    read_headless,
)
from crashcart.parsers.metrics import MAX_POINTS, PROGRESS_PATTERN, ProgressTrail
from crashcart.parsers.models import MetricPoint, RaisedException, StackDump, Traceback
from crashcart.parsers.pytracebacks import Relation
from crashcart.parsers.tracebacks import HEADER_PATTERNS, MAX_WINDOW_LINES, read_structure

MAX_TRACEBACKS = 100  # per file; beyond it, a job printing one traceback per rank per retry adds nothing
MAX_PER_TYPE_RANK = 3  # tracebacks of one exception type kept per rank
MAX_STACKS = 512  # thread stacks per file (a py-spy dump of 8 ranks x 40 threads fits)
MAX_LINE = 8192  # a window line is parsed up to here
FIRST_WINDOW_LINES = 32  # lines read after a header before the whole window (MAX_WINDOW_LINES) is needed
PARSE_BUDGET = 256  # headers read in full per file; past it, only each block's last few...
LATE_HEADERS_PER_BLOCK = 16  # ... so a file's cost stays bounded and its latest tracebacks are still read

PROGRESS_TAIL = 256 << 10  # progress lines are looked for in each block's last bytes: the tail is what counts
_DATABASES: dict[str, hyperscan.Database] = {}


def _database(kind: str) -> hyperscan.Database:
    """The header patterns, or the progress pattern, as a block-mode database: compiled once per machine
    (parsers/dbcache.py) and loaded once per process.

    Hyperscan reports each end offset of a match; run on to the line's end, every progress match of a line ends
    at one offset, so a line with an iteration, a loss and a loss scale costs one callback, not three.
    """
    db = _DATABASES.get(kind)
    if db is None:
        patterns = list(HEADER_PATTERNS) if kind == "headers" else [PROGRESS_PATTERN + r"[^\n]*$"]
        db = _DATABASES[kind] = cached_database(tuple(patterns), lambda: _compile(patterns))
    return db


def _compile(patterns: list[str]) -> hyperscan.Database:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(
        expressions=[p.encode() for p in patterns],
        ids=list(range(len(patterns))),
        elements=len(patterns),
        flags=[hyperscan.HS_FLAG_MULTILINE] * len(patterns),
    )
    return db


class ProgressFinder:
    """The starts of every progress line of a block, in one Hyperscan pass of the progress pattern: for a reader
    of logs as they grow (agent/watch.py), which needs each new progress line, not a finished file's tail."""

    def __init__(self) -> None:
        self._db = _database("progress")
        self._scratch = hyperscan.Scratch(self._db)

    def starts(self, block: bytes) -> list[int]:
        found: list[int] = []

        def on_progress(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            found.append(block.rfind(b"\n", 0, to) + 1 if to else 0)

        self._db.scan(block, match_event_handler=on_progress, scratch=self._scratch)
        return found


class Structures(NamedTuple):
    tracebacks: list[Traceback]
    stacks: list[StackDump]
    metrics: list[MetricPoint]


class StructureReader:
    """Fed a file's blocks in order; gives the file's tracebacks, stack dumps and progress numbers at its end."""

    def __init__(self, make_ref: Callable[[str, int], LineRef]) -> None:
        self._headers_db, self._progress_db = _database("headers"), _database("progress")
        self._headers_scratch = hyperscan.Scratch(self._headers_db)
        self._progress_scratch = hyperscan.Scratch(self._progress_db)
        self._make_ref = make_ref
        self._trail = ProgressTrail()
        self._carried: list[bytes] = []  # lines from the first unparsed header to the end of the last block
        self._carried_start = 0  # line number of _carried[0]
        self._headers: list[int] = []  # line numbers of headers not yet parsed, ascending
        self._done_until = 0  # last line consumed by a parsed structure
        self.parsed = 0  # headers read so far (bounded by PARSE_BUDGET)
        self._kinds: Counter[tuple[int | None, str]] = Counter()
        self._continues: tuple[int, list[RaisedException], Relation] | None = None  # header line, earlier link
        self._cited: set[int] = set()  # exception lines already in a record
        self.tracebacks: list[Traceback] = []
        self.stacks: list[StackDump] = []

    def feed(self, block: bytes, base: int, lines: int) -> None:
        """One block of `lines` whole lines whose first line is line base+1."""
        headers: list[int] = []

        def on_header(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            headers.append(block.rfind(b"\n", 0, to) + 1 if to else 0)

        self._headers_db.scan(block, match_event_handler=on_header, scratch=self._headers_scratch)
        if base == 0:
            self._headless(block)
        self._progress(block, base + lines)
        if headers or self._headers:
            self._windows(block, base, sorted(set(headers)))

    def _headless(self, block: bytes) -> None:
        """A traceback the file starts inside of (parsers/headless.py): read once, from the file's first lines."""
        head = [_text(line) for line in block.split(b"\n", HEADLESS_LINES)[:HEADLESS_LINES]]
        if not may_start_inside(head):
            return
        starts = headless_starts(head)
        if not starts:
            self._chain_head(head)
            return
        last = starts[-1].at + MAX_WINDOW_LINES
        lines = [_text(line) for line in block.split(b"\n", last)[:last]]
        for start in starts:
            at = start.at
            lead = head[start.lead : at] if start.lead is not None else []
            window = lines[at : at + MAX_WINDOW_LINES]
            record, used = read_headless(window, at + 1, self._make_ref, prefix=start.prefix, lead=lead)
            if record is not None:
                self._done_until = max(self._done_until, at + used)
                self._keep(record)

    def _chain_head(self, head: list[str]) -> None:
        """A file that starts at the end of a chain's earlier part, then the separator and a header: the earlier
        exception is kept, to open the chain of the traceback that header starts."""
        found = chain_head(head)
        if found is None:
            return
        at, lead = found
        mark = printer_prefix(head[at]).rstrip()
        earlier, relation = earlier_link(head[lead:at], at + 1, self._make_ref, mark)
        if earlier:
            self._continues = (at + 1, earlier, relation)

    def _progress(self, block: bytes, end: int) -> None:
        """Hand the progress lines of the block's tail to the trail: a rank's last lines are what trends need.

        `end` is the number of the block's last line; the tail's line numbers are counted back from it, so the
        megabytes before the tail are never counted through."""
        cut = block.find(b"\n", len(block) - PROGRESS_TAIL) + 1 if len(block) > PROGRESS_TAIL else 0
        tail = block[cut:] if cut else block
        starts: list[int] = []

        def on_progress(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            starts.append(tail.rfind(b"\n", 0, to) + 1 if to else 0)

        self._progress_db.scan(tail, match_event_handler=on_progress, scratch=self._progress_scratch)
        if starts:
            lines = tail.count(b"\n") + (0 if tail.endswith(b"\n") else 1)
            self._trail.add_block(tail, end - lines, starts)

    def _windows(self, block: bytes, base: int, offsets: list[int]) -> None:
        lines = block.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        room = max(0, PARSE_BUDGET - self.parsed - len(self._headers))
        if len(offsets) > room + LATE_HEADERS_PER_BLOCK:  # a crash loop's thousands of tracebacks: the first and
            offsets = offsets[:room] + offsets[-LATE_HEADERS_PER_BLOCK:]  # each block's latest are enough
        no, pos = base, 0
        for offset in offsets:
            no += block.count(b"\n", pos, offset)
            pos = offset
            self._headers.append(no + 1)
        if self._carried:
            lines = self._carried + lines
            base = self._carried_start - 1
        self._parse(lines, base, final=False)

    def _parse(self, lines: list[bytes], base: int, final: bool) -> None:
        """Parse every header whose window is whole in `lines` (all of them at the file's end); carry the rest."""
        while self._headers:
            first = self._headers[0]
            if first <= self._done_until:
                self._headers.pop(0)
                continue
            at = first - base - 1
            if at + MAX_WINDOW_LINES > len(lines) and not final:
                break
            self._headers.pop(0)
            record, used = self._read(lines, at, first)
            self.parsed += 1
            if self._continues is not None and self._continues[0] == first:
                record = _continued(record, self._continues)
            if record is not None:
                self._done_until = first + max(used, 1) - 1
                self._keep(record)
        if self._headers:
            self._carried_start = self._headers[0]
            self._carried = lines[self._carried_start - base - 1 :]
        else:
            self._carried, self._carried_start = [], 0

    def _read(self, lines: list[bytes], at: int, first: int) -> tuple[Traceback | StackDump | None, int]:
        """The structure at lines[at], read from a short window first: most tracebacks are a few dozen lines, and
        the parser reads all of its window, so a job printing thousands of them paid for 400 lines each. The
        whole window is read only when the short one ran out (the record used all of it, or found no exception
        line: another rank's lines between, or a long chain)."""
        for size in (FIRST_WINDOW_LINES, MAX_WINDOW_LINES):
            window = [_text(line) for line in lines[at : at + size]]
            window[0] = _text(lines[at][-MAX_LINE:])  # a header ends its line, after a progress bar's megabytes
            record, used = read_structure(window, first, self._make_ref)
            ran_out = used >= len(window) or (isinstance(record, Traceback) and not record.chain)
            if not ran_out or len(window) < size:  # complete, or the file ends inside this window anyway
                break
        return record, used

    def _keep(self, record: Traceback | StackDump) -> None:
        if isinstance(record, StackDump):
            if len(self.stacks) < MAX_STACKS:
                self.stacks.append(record)
            return
        cited = record.chain[-1].ref.line if record.chain else None
        if cited in self._cited:  # the tail of a chain an interleaved rank's header had cut, read again
            return
        key = (record.start.rank, record.chain[-1].exc_type if record.chain else "")
        if len(self.tracebacks) < MAX_TRACEBACKS and self._kinds[key] < MAX_PER_TYPE_RANK:
            self._kinds[key] += 1
            self.tracebacks.append(record)
            if cited is not None:
                self._cited.add(cited)

    def finish(self) -> Structures:
        if self._headers:
            self._parse(self._carried, self._carried_start - 1, final=True)
        return Structures(self.tracebacks, self.stacks, self._trail.points(self._make_ref))


def _continued(
    record: Traceback | StackDump | None, continues: tuple[int, list[RaisedException], Relation]
) -> Traceback | StackDump | None:
    """The traceback with the earlier exception of its chain first, which the file kept above its header (also
    when the excerpt ends before the traceback's own exception line)."""
    if not isinstance(record, Traceback) or record.kind not in ("python", "rich"):
        return record
    _, earlier, relation = continues
    if record.chain:
        record.chain[0].relation = relation
    return record.model_copy(update={"start": earlier[0].ref, "chain": [*earlier, *record.chain]})


def _text(line: bytes) -> str:
    return line[:MAX_LINE].decode("utf-8", "replace").rstrip("\r")


def merge_structures(parts: list[tuple[int, Structures]]) -> Structures:
    """The structures of consecutive byte ranges of one file (each with its line offset), as one file's."""
    tracebacks: list[Traceback] = []
    stacks: list[StackDump] = []
    metrics: list[MetricPoint] = []
    for offset, part in parts:
        tracebacks += [_shift_traceback(t, offset) for t in part.tracebacks]
        stacks += [s.model_copy(update={"start": shift_ref(s.start, offset)}) for s in part.stacks]
        metrics += [m.model_copy(update={"line": m.line + offset}) for m in part.metrics]
    return Structures(tracebacks[:MAX_TRACEBACKS], stacks[:MAX_STACKS], _last_per_rank(metrics))


def _shift_traceback(tb: Traceback, offset: int) -> Traceback:
    if not offset:
        return tb
    chain = [e.model_copy(update={"ref": shift_ref(e.ref, offset)}) for e in tb.chain]
    return tb.model_copy(update={"start": shift_ref(tb.start, offset), "chain": chain})


def _last_per_rank(points: list[MetricPoint]) -> list[MetricPoint]:
    """At most MAX_POINTS per rank, the last ones, in line order."""
    seen: Counter[int | None] = Counter()
    kept = []
    for point in reversed(points):
        seen[point.rank] += 1
        if seen[point.rank] <= MAX_POINTS:
            kept.append(point)
    return kept[::-1]

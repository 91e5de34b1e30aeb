"""One streaming pass per source: rule hits from the fast filter and template tallies, in blocks.

Files are independent, so a job of many files is split across processes, each with its own Hyperscan
database and Drain3 state; template ids are hashes of template text, so the results merge by value.
"""

from __future__ import annotations

import gc
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from crashcart.knowledge.errors import ReadError
from crashcart.knowledge.records import LineRef, shift_ref, trusted
from crashcart.knowledge.rules import Rule
from crashcart.knowledge.taxonomy import Role
from crashcart.parsers.attribution import Attribution, attribute_line, attribution_from_path, has_rank_prefixes
from crashcart.parsers.models import FileScan, RuleHit, TemplateStat
from crashcart.parsers.packing import Packed, pack, unpack
from crashcart.parsers.rulefilter import RuleFilter, adopt_database, line_at, serialize_database
from crashcart.parsers.sources import Source, read_blocks, split
from crashcart.parsers.structure import StructureReader, Structures, merge_structures
from crashcart.parsers.templater import KEPT_LINE_BYTES, TemplateCounts, Templater, template_id
from crashcart.parsers.timestamps import YearTracker, parse_timestamp
from crashcart.parsers.workers import worker_pool

MAX_HITS_PER_RULE_RANK = 5  # kept per (rule, rank) in one file; the rest are counted
MAX_HITS_PER_RULE = 2000
# Lines of one rule turned away because their rank had its hits: past this many in a file, the rule's further lines
# are only counted, without reading their rank (each line of a message a job prints every step is a new text, and
# reading its printer costs 13 us). By then every rank that prints it in lockstep with the others has been seen.
MAX_SETTLED_PER_RULE = 10_000
PARALLEL_MIN_BYTES = 32 << 20  # below this, process start-up costs more than it saves
SPLIT_MIN_BYTES = 64 << 20  # a plain file this large is scanned as several byte ranges in parallel
BATCH_BYTES = 8 << 20  # a parallel job goes in batches of about this cost: few trips, and an even finish
FILE_COST_BYTES = 64 << 10  # what a file costs besides its text, in bytes of text (1.3 ms on a 1,024-rank job)
MAX_TEXT = KEPT_LINE_BYTES  # evidence text is cut here (a 10 MB line stays a 10 MB line on disk, not in reports)
NEW_TAIL = 0.1  # a template first seen in the last 10% of a file's lines is new to it...
NEW_MIN_LINES = 200  # ... in a file long enough for "the job had been running" to mean something
MAX_READ_LINES = 1 << 14  # distinct line texts whose printer and time a scanner remembers (then it starts over)


class HitCap:
    """How many hits of a rule a file keeps: a few per rank, a bounded total; the rest are only counted.

    Context lines (one NCCL init line per rank) are kept up to the total: they map ranks to hosts.
    """

    def __init__(self) -> None:
        self._seen: Counter[tuple[str, int | None]] = Counter()
        self._total: Counter[str] = Counter()
        self._settled: Counter[str] = Counter()

    def full(self, rule_id: str) -> bool:
        """No more hits of this rule are kept in this file, whatever their rank."""
        return self._total[rule_id] >= MAX_HITS_PER_RULE or self._settled[rule_id] >= MAX_SETTLED_PER_RULE

    def settled(self, rule_id: str, rank: int | None, role: Role) -> bool:
        """No more hits of this rule are kept for this rank (context lines: for the file)."""
        if role is not Role.CONTEXT and self._seen[(rule_id, rank)] >= MAX_HITS_PER_RULE_RANK:
            self._settled[rule_id] += 1
            return True
        return self.full(rule_id)

    def admit(self, rule_id: str, rank: int | None, role: Role) -> bool:
        if self.settled(rule_id, rank, role):
            return False
        self._seen[(rule_id, rank)] += 1
        self._total[rule_id] += 1
        return True


class LineReader:
    """A line's printer and time, read once per distinct text and year for all the files a process scans.

    The ranks of a job print the same lines: a warning, a traceback's frames, an argument dump. Of the 61k line
    records of a 1,024-rank-file job, 22k texts are distinct, and attributing and time-stamping a line cost more
    than the rest of making its record. Both are functions of the text (and the year lent to it) alone; texts
    longer than evidence keeps are read afresh, so what is held stays bounded.
    """

    def __init__(self) -> None:
        self._owners: dict[str, Attribution] = {}
        self._times: dict[tuple[str, int | None], datetime | None] = {}

    def owner(self, text: str) -> Attribution:
        """attribute_line(text), remembered."""
        own = self._owners.get(text)
        if own is None:
            own = attribute_line(text)
            _remember(self._owners, text, own, text)
        return own

    def time(self, text: str, year: int | None) -> datetime | None:
        """parse_timestamp(text, year), remembered."""
        key = (text, year)
        if key in self._times:
            return self._times[key]
        stamp = parse_timestamp(text, year)
        _remember(self._times, key, stamp, text)
        return stamp

    def ref(
        self, text: str, line_no: int, where: Attribution, file: str, year: int | None, own: Attribution | None = None
    ) -> LineRef:
        """A LineRef with node/rank from the line itself (`own`, when the caller read it already), falling back to
        the file's name; `year` dates the stamps that carry none (glog, syslog)."""
        own = own if own is not None else self.owner(text)
        return _line_ref(text, line_no, where, file, own, self.time(text, year))

    def once(self, text: str, line_no: int, where: Attribution, file: str, year: int | None) -> LineRef:
        """A LineRef for a line whose text will not come again (a progress line of a log being followed: its
        numbers change every time), read afresh and not remembered, so it takes no room from the lines that do."""
        return _line_ref(text, line_no, where, file, attribute_line(text), parse_timestamp(text, year))


def _line_ref(
    text: str, line_no: int, where: Attribution, file: str, own: Attribution, stamp: datetime | None
) -> LineRef:
    fields = {
        "file": file,
        "line": line_no,
        "text": text[:MAX_TEXT],
        "node": own.node or where.node,
        "rank": own.rank if own.rank is not None else where.rank,
        "time": stamp,
    }
    return trusted(LineRef, fields)  # typed as the record's fields are: made per line, never validated


def _remember(memo: dict[Any, Any], key: object, value: object, text: str) -> None:
    """Keep `value` for a line no longer than evidence keeps; a full memo starts over (bounded memory)."""
    if len(text) <= MAX_TEXT:
        if len(memo) >= MAX_READ_LINES:
            memo.clear()
        memo[key] = value


class FileScanner:
    """Scans sources one after another with one rule filter and one templater; `on_bytes` hears of every block,
    `lines` (a LineReader) reads the lines that become records, and may serve other scanners too."""

    def __init__(
        self, rules: Sequence[Rule], on_bytes: Callable[[int], None] | None = None, lines: LineReader | None = None
    ) -> None:
        self.filter = RuleFilter(rules)
        self.templater = Templater()
        self.lines = lines if lines is not None else LineReader()
        self.on_bytes = on_bytes

    def scan(self, src: Source) -> FileScan:
        started = time.perf_counter()
        where = attribution_from_path(src.display)
        counts = TemplateCounts()
        hits: list[RuleHit] = []
        cap = HitCap()
        dropped = line_no = size = 0
        ranked: bool | None = None
        problem = None
        years = YearTracker()  # glog, syslog and dmesg stamps take their year from the file's dated lines
        structure = StructureReader(lambda text, no: self.lines.ref(text, no, where, src.display, years.year))
        try:
            for block in read_blocks(src):
                size += len(block)
                years.learn(block)
                if ranked is None:
                    ranked = has_rank_prefixes(block[:65536].split(b"\n")[:50])
                dropped += self._keep_hits(block, line_no, src.display, where, hits, cap, years.year)
                self.templater.count_block(block, line_no, counts, ranked)
                structure.feed(block, line_no, counts.lines - line_no)
                line_no = counts.lines
                if self.on_bytes is not None:
                    self.on_bytes(len(block))
        except ReadError as exc:  # truncated, corrupt, over the size cap: the lines before the fault still count
            problem = f"read {counts.lines:,} lines, then: {exc.reason}"
        templates = self._template_stats(src.display, where, counts, hits, years.year)
        found_structure = structure.finish()
        return FileScan(
            file=src.display,
            node=where.node,
            rank=where.rank,
            lines=counts.lines,
            bytes=size,
            hits=hits,
            hits_dropped=dropped,
            templates=templates,
            seconds=time.perf_counter() - started,
            tracebacks=found_structure.tracebacks,
            stacks=found_structure.stacks,
            metrics=found_structure.metrics,
            problem=problem,
            year=years.year,
        )

    def _keep_hits(
        self,
        block: bytes,
        base: int,
        file: str,
        where: Attribution,
        hits: list[RuleHit],
        cap: HitCap,
        year: int | None,
    ) -> int:
        """Append the block's hits to `hits` up to the per-rule caps; return how many were dropped.

        A line of a rule whose cap is reached (for the file, or for the line's rank) is counted without being
        confirmed or made a record: a warning printed on every step costs a Hyperscan match, not an RE2 search.
        """
        dropped = 0
        no, pos = base, 0
        for line_start, rule_index in self.filter.candidates(block):
            rule = self.filter.rules[rule_index]
            if cap.full(rule.id):  # before the line is numbered: the next kept line's count spans this one
                dropped += 1
                continue
            no += block.count(b"\n", pos, line_start)
            pos = line_start
            line_end, text = line_at(block, line_start)
            own = self.lines.owner(text)
            rank = own.rank if own.rank is not None else where.rank
            if cap.settled(rule.id, rank, rule.role):
                dropped += 1
                continue
            hit = self.filter.confirm(rule_index, line_start, line_end, text)
            if hit is None:
                continue
            cap.admit(rule.id, rank, rule.role)
            fields = {
                "rule_id": rule.id,
                "failure_class": rule.failure_class,
                "action": rule.resolved_action,
                "role": rule.role,
                "priority": rule.priority,
                "stage": rule.stage,
                "ref": self.lines.ref(hit.text, no + 1, where, file, year, own),
                "captures": hit.captures,
            }
            hits.append(trusted(RuleHit, fields))  # the rule's own validated values, and the line's
        return dropped

    def _template_stats(
        self, file: str, where: Attribution, counts: TemplateCounts, hits: list[RuleHit], year: int | None
    ) -> list[TemplateStat]:
        hit_templates: dict[int, set[str]] = {}
        for hit in hits:
            index = self.templater.template_index(hit.ref.text.encode())
            hit_templates.setdefault(index, set()).add(hit.rule_id)
        slots: dict[tuple[int | None, str], list[Any]] = {}  # by template text: see _fold
        for (rank, index), entry in counts.stats.items():
            key, rule_ids = (rank, self.templater.template(index)), hit_templates.get(index, set())
            held = slots.get(key)
            if held is None:
                slots[key] = [*entry, set(rule_ids)]
            else:
                _fold(held, entry, rule_ids)
        reader, lines = self.lines, counts.lines
        return [_stat(reader, text, rank, entry, where, file, lines, year) for (rank, text), entry in slots.items()]


def _fold(held: list[Any], entry: list[Any], rule_ids: set[str]) -> None:
    """Add a slot's tally to the one of the same rank and template text: counts added, the earlier first line
    kept, the later last line. Two clusters end with one text when a full leaf retired the first one
    (templater.BoundedDrain) and its successor has seen as much variety."""
    held[0] += entry[0]
    if entry[1] < held[1]:
        held[1], held[2] = entry[1], entry[2]
    if entry[3] > held[3]:
        held[3], held[4] = entry[3], entry[4]
    held[5] |= rule_ids


def _stat(
    reader: LineReader,
    text: str,
    rank: int | None,
    entry: list[Any],
    where: Attribution,
    file: str,
    lines: int,
    year: int | None,
) -> TemplateStat:
    count, first_no, first, last_no, last, rule_ids = entry
    head = reader.ref(_decode(first), first_no, where, file, year)
    fields = {
        "template_id": template_id(text),
        "template": text,
        "node": where.node,
        "rank": rank if rank is not None else where.rank,
        "count": count,
        "first": head,
        "last": head if last_no == first_no else reader.ref(_decode(last), last_no, where, file, year),  # one record
        "rule_ids": sorted(rule_ids),
        "new": lines >= NEW_MIN_LINES and first_no > lines * (1 - NEW_TAIL),
        "rare": False,  # set once all files are scanned
    }
    return trusted(TemplateStat, fields)


def _decode(line: bytes) -> str:
    return line[:MAX_TEXT].decode("utf-8", "replace").rstrip("\r")


def _scan_group(
    rules: Sequence[Rule],
    sources: Sequence[Source],
    on_bytes: Callable[[int], None] | None = None,
    lines: LineReader | None = None,
) -> list[FileScan]:
    """The sources' scans by one new scanner (a batch's templates depend on that batch alone), which reads lines
    with `lines`, kept from batch to batch."""
    with gc_paused():
        scanner = FileScanner(rules, on_bytes, lines)
        return [scanner.scan(src) for src in sources]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector while scan records are made (or unpickled from the workers).

    A job of many small files makes millions of small records (a template stat and two lines per template per
    file), and each full collection walks every one made so far: a third of the scan's time on 5k files, four
    fifths of unpickling the workers' results. Records hold no cycles, so there is nothing for it to find;
    reference counting still frees everything as usual.

    On the way out the records made meanwhile are moved to the oldest generation without a walk (a freeze and
    an unfreeze splice lists): left young, the first collection after the pause walked every one of them,
    0.1 s for a 1,000-file job. Skipped when something else holds objects frozen, which an unfreeze would free.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def scan_sources(
    sources: Sequence[Source],
    rules: Sequence[Rule],
    workers: int | None = None,
    progress: Callable[[float], None] | None = None,
) -> list[FileScan]:
    """Scan every source; a large job is split into batches scanned by `workers` processes and this one, and a
    large plain file into line-aligned byte ranges scanned in parallel and merged.

    `progress` hears the fraction done after each block this process reads and each batch a worker hands back,
    1.0 at the end.
    """
    workers = workers or min(os.cpu_count() or 1, 8)
    total = sum(s.size for s in sources)
    processes = workers + 1  # this process scans batches too, while the workers scan theirs
    parallel = workers >= 2 and total >= PARALLEL_MIN_BYTES and all(s.path is not None for s in sources)
    pieces = [split(src, processes) if src.size >= SPLIT_MIN_BYTES else [src] for src in sources] if parallel else []
    tasks = [part for piece in pieces for part in piece]
    if len(tasks) < 2:
        scans = _scan_group(rules, sources, _fraction_of(total, progress))
        _finished(progress)
        return scans
    parts: dict[tuple[str, int], list[FileScan]] = {}  # a list: a file given twice is scanned twice
    compiled = serialize_database(rules)  # compiled here once, loaded by each worker
    batches = _balance(tasks, max(processes, -(-sum(map(_task_cost, tasks)) // BATCH_BYTES)))
    with gc_paused(), worker_pool(workers, initializer=_start_scan_worker, initargs=(rules, compiled)) as pool:
        _share(pool, workers, rules, batches, parts, _fraction_of(total, progress))  # they end with us, even on kill -9
    _finished(progress)
    # One look-up per part, never a search of all parts per file: 20k files merge in linear time.
    return [merge_parts([parts[(p.display, p.start)].pop() for p in piece]) for piece in pieces]


def _share(
    pool: Executor,
    workers: int,
    rules: Sequence[Rule],
    batches: list[list[Source]],
    parts: dict[tuple[str, int], list[FileScan]],
    on_bytes: Callable[[int], None] | None,
) -> None:
    """Scan the batches: the workers are handed them from the front, this process takes them from the back.

    Each worker holds its batch and the next one, handed over as this process sees batches come back (after each
    block it reads itself), so no worker waits for one; near the end, only the one it scans: a batch queued for
    a busy worker cannot be taken back, and this process would sit idle while a worker scanned two. Between its
    blocks this process also makes the records of the batches the workers hand back (packing.py), so that work
    is not all left for the end; and the last batches go to whichever process is free, so all finish at about
    the same time.
    """
    todo = deque(batches)
    running: dict[Future[list[Packed]], list[Source]] = {}

    def hand_out(size: int = 0) -> None:
        for future in [f for f in running if f.done()]:
            batch = running.pop(future)
            _collect(parts, batch, [unpack(p) for p in future.result()])
            if on_bytes is not None:
                on_bytes(sum(map(_task_size, batch)))
        while todo and len(running) < (2 * workers if len(todo) > workers + 1 else workers):
            batch = todo.popleft()
            running[pool.submit(_scan_packed, batch)] = batch
        if size and on_bytes is not None:
            on_bytes(size)

    lines = LineReader()
    hand_out()
    while todo:
        batch = todo.pop()
        _collect(parts, batch, _scan_group(rules, batch, hand_out, lines))
        hand_out()
    while running:
        wait(running, return_when=FIRST_COMPLETED)
        hand_out()


def _fraction_of(total: int, progress: Callable[[float], None] | None) -> Callable[[int], None] | None:
    """Bytes read, as the fraction of `total` told to `progress`; below 1 until the end (a .gz file's text
    outgrows its size on disk)."""
    if progress is None:
        return None
    seen = 0

    def on_bytes(size: int) -> None:
        nonlocal seen
        seen += size
        progress(min(seen / total, 0.99) if total else 0.99)

    return on_bytes


def _finished(progress: Callable[[float], None] | None) -> None:
    if progress is not None:
        progress(1.0)


_worker: list[tuple[Sequence[Rule], LineReader]] = []  # in a scan worker: what all its batches share


def _start_scan_worker(rules: Sequence[Rule], compiled: bytes) -> None:
    """In a new worker: the rules, once for all its batches, with their database loaded, not compiled again."""
    adopt_database(rules, compiled)
    _worker.append((rules, LineReader()))


def _scan_packed(sources: Sequence[Source]) -> list[Packed]:
    """In a worker: the scans of one batch as plain tuples, which pickle in C."""
    rules, lines = _worker[-1]
    return [pack(scan) for scan in _scan_group(rules, sources, lines=lines)]


def _collect(parts: dict[tuple[str, int], list[FileScan]], tasks: Sequence[Source], scans: list[FileScan]) -> None:
    for task, scan in zip(tasks, scans, strict=True):
        parts.setdefault((task.display, task.start), []).append(scan)


def merge_parts(parts: list[FileScan]) -> FileScan:
    """One FileScan from the scans of consecutive byte ranges of one file: line numbers shifted, counts added."""
    if len(parts) == 1:
        return parts[0]
    offset = 0
    hits: list[RuleHit] = []
    stats: dict[tuple[str, int | None, str | None], TemplateStat] = {}
    cap, dropped = HitCap(), sum(p.hits_dropped for p in parts)
    structures = []
    for part in parts:
        structures.append((offset, Structures(part.tracebacks, part.stacks, part.metrics)))
        for h in part.hits:  # the caps again, over the whole file, so the result equals a serial scan's
            if cap.admit(h.rule_id, h.ref.rank, h.role):
                hits.append(h.model_copy(update={"ref": shift_ref(h.ref, offset)}))
            else:
                dropped += 1
        for t in part.templates:
            first, last = shift_ref(t.first, offset), shift_ref(t.last, offset)
            held = stats.get((t.template_id, t.rank, t.node))
            if held is None:
                stats[(t.template_id, t.rank, t.node)] = t.model_copy(update={"first": first, "last": last})
            else:
                held.count += t.count
                held.last = last
                held.rule_ids = sorted(set(held.rule_ids) | set(t.rule_ids))
        offset += part.lines
    for t in stats.values():
        t.new = offset >= NEW_MIN_LINES and t.first.line > offset * (1 - NEW_TAIL)
    head = parts[0]
    merged = merge_structures(structures)
    return FileScan(
        file=head.file,
        node=head.node,
        rank=head.rank,
        lines=offset,
        bytes=sum(p.bytes for p in parts),
        hits=hits,
        hits_dropped=dropped,
        templates=list(stats.values()),
        seconds=sum(p.seconds for p in parts),
        tracebacks=merged.tracebacks,
        stacks=merged.stacks,
        metrics=merged.metrics,
        problem=next((p.problem for p in parts if p.problem), None),
        year=next((p.year for p in parts if p.year is not None), None),
    )


def _balance(sources: Sequence[Source], workers: int) -> list[list[Source]]:
    """Greedy split by cost: costliest task first into the lightest group."""
    groups: list[list[Source]] = [[] for _ in range(min(workers, len(sources)))]
    loads = [0] * len(groups)
    for src in sorted(sources, key=_task_cost, reverse=True):
        i = loads.index(min(loads))
        groups[i].append(src)
        loads[i] += _task_cost(src)
    return [g for g in groups if g]


def _task_cost(src: Source) -> int:
    """A task's size plus what any file costs whatever its size: a thousand small files are no small task."""
    return _task_size(src) + FILE_COST_BYTES


def _task_size(src: Source) -> int:
    return (src.end if src.end is not None else src.size) - src.start

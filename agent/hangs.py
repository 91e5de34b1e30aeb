"""A hang seen in the structure of a job: every rank's progress stalled while the log went on, or stack dumps
where one rank is somewhere other than its peers.

A hung job often prints no error at all: its ranks stop stepping, keep-alive lines and heartbeats go on, and
someone dumps the stacks (py-spy, faulthandler). Rank 0 waiting on a DataLoader queue while every other rank
waits in all_reduce is the hang's cause; the others only wait for it. Such a job is a collective_timeout, as a
symptom: any signature that says more outranks it, and so does the NCCL watchdog's own line when it fired.
The threads faulthandler prints under a fatal signal are a crash report, not a hang, and show none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from crashcart.agent.event_kinds import CheckpointEvent, CollectiveTimeoutEvent, Event, FailureEvent, XidEvent
from crashcart.agent.timeline import Timeline, first_to_stop
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import Action, FailureClass, Role, Stage
from crashcart.parsers.models import FileScan, StackDump

STALL_RULE = "timeline.hang_stall"
STACK_RULE = "timeline.hang_stack"
PRIORITY = 34  # above the launcher's cancellation and exit notes, below the watchdog's own timeout line (35-40)
STALL_CADENCES = 20  # no progress for this many logging intervals...
MIN_STALL = timedelta(minutes=10)  # ... and at least this long (NCCL's shortest default timeout)
MAX_OUTLIERS = 4
# faulthandler prints the threads of a process that died of a fatal signal too, under its own line
# (`Fatal Python error: Segmentation fault`, threestudio-project/threestudio#369): a crash report, not a hang.
FATAL = "Fatal Python error: "
CRASH_GAP = 3  # its first thread comes this few lines below that line, each next thread this few below the last
_COLLECTIVES = frozenset({"all_reduce", "all_gather", "broadcast", "barrier", "reduce_scatter", "all_to_all"})


def hang_events(
    scans: Sequence[FileScan], lines: Sequence[Timeline], events: Sequence[Event]
) -> list[CollectiveTimeoutEvent]:
    """The hang the stack dumps show (naming the outlier ranks), else the one the progress stall shows."""
    return _stack_hang(scans) or _stall_hang(scans, lines, events)


def _stack_hang(scans: Sequence[FileScan]) -> list[CollectiveTimeoutEvent]:
    dumps = [(scan, dump) for scan in scans for dump in _main_threads(hang_dumps(scan))]
    if not dumps:
        return []
    odd = outliers([dump for _, dump in dumps])
    picked = [(scan, dump) for scan, dump in dumps if dump in odd][:MAX_OUTLIERS]
    if not picked:
        scan, dump = dumps[0]
        return [_event(STACK_RULE, dump.start.model_copy(update={"rank": None, "node": None}))]
    return [_event(STACK_RULE, _placed(dump.start, scan)) for scan, dump in picked]


def hang_dumps(scan: FileScan) -> list[StackDump]:
    """The file's stack dumps but those of a crash report: the threads faulthandler printed right under its
    `Fatal Python error:` line, one after another (a template's first and last line show where such lines are)."""
    fatal = sorted({ref.line for stat in scan.templates for ref in (stat.first, stat.last) if FATAL in ref.text})
    if not fatal:
        return list(scan.stacks)
    kept: list[StackDump] = []
    reach = -1  # the last line the crash report's next thread may start on
    for dump in sorted(scan.stacks, key=lambda d: d.start.line):
        line = dump.start.line
        if line <= reach or any(0 < line - at <= CRASH_GAP for at in fatal):
            reach = line + len(dump.frames) + CRASH_GAP
        else:
            kept.append(dump)
    return kept


def _main_threads(stacks: Sequence[StackDump]) -> list[StackDump]:
    """Each process's main thread: py-spy's "MainThread", faulthandler's "Current thread"; else the first
    dump of each rank."""
    mains = [d for d in stacks if "MainThread" in d.thread or d.thread.startswith("Current thread")]
    if mains:
        return mains
    firsts: dict[tuple[str, int | None], StackDump] = {}
    for dump in stacks:
        firsts.setdefault((dump.start.file, dump.start.rank), dump)
    return list(firsts.values())


def outliers(dumps: Sequence[StackDump]) -> list[StackDump]:
    """The dumps whose stack differs from their peers': the minority against a clear majority of one stack,
    else the ones outside any collective while the others wait in one."""
    if len(dumps) < 2:
        return []
    signatures = [tuple(frame.function or "" for frame in dump.frames) for dump in dumps]
    (common, count), *_ = Counter(signatures).most_common(1)
    if count >= 2 and count * 2 > len(dumps):
        return [dump for dump, sig in zip(dumps, signatures, strict=True) if sig != common]
    waiting = [_in_collective(dump) for dump in dumps]
    if 0 < waiting.count(False) < waiting.count(True):
        return [dump for dump, held in zip(dumps, waiting, strict=True) if not held]
    return []


def _in_collective(dump: StackDump) -> bool:
    return any("distributed" in frame.file or frame.function in _COLLECTIVES for frame in dump.frames)


def _stall_hang(
    scans: Sequence[FileScan], lines: Sequence[Timeline], events: Sequence[Event]
) -> list[CollectiveTimeoutEvent]:
    """One event when every timed printer stopped for many cadences before the log's last line, and no
    checkpoint was being written meanwhile (a long save is no hang); it names the printer that stopped first.

    Only for a job with no deeper cause: a root cause, or the watchdog's own timeout, already says more.
    """
    if any(_says_more(e) for e in events):
        return []
    timed = [t for t in lines if t.cadence is not None and t.last.time is not None]
    end = log_end(scans)
    if not timed or end is None or not all(_stalled(t, end) for t in timed):
        return []
    stopped = min(t.last.time for t in timed if t.last.time is not None)
    saving = any(isinstance(e, CheckpointEvent) and e.time is not None and e.time >= stopped for e in events)
    if saving:
        return []
    first = first_to_stop(timed)
    pick = first or min(timed, key=lambda t: t.last.time or datetime.max)
    last = pick.last
    ref = LineRef(file=pick.file, line=last.line, text=last.text, time=last.time)
    return [_event(STALL_RULE, ref.model_copy(update={"node": pick.node, "rank": pick.rank}) if first else ref)]


def _says_more(event: Event) -> bool:
    if not isinstance(event, (FailureEvent, XidEvent, CollectiveTimeoutEvent)) or event.role is Role.CONTEXT:
        return False
    return event.role is Role.ROOT_CAUSE or event.failure_class is FailureClass.COLLECTIVE_TIMEOUT


def _stalled(line: Timeline, end: datetime) -> bool:
    last = line.last.time
    wait = max(timedelta(seconds=(line.cadence or 0.0) * STALL_CADENCES), MIN_STALL)
    return last is not None and end - last >= wait


def log_end(scans: Sequence[FileScan]) -> datetime | None:
    """The latest time any kept line of the job shows."""
    times = [stat.last.time for scan in scans for stat in scan.templates if stat.last.time is not None]
    return max(times, default=None)


def _placed(ref: LineRef, scan: FileScan) -> LineRef:
    return ref.model_copy(
        update={"node": ref.node or scan.node, "rank": ref.rank if ref.rank is not None else scan.rank}
    )


def _event(rule_id: str, ref: LineRef) -> CollectiveTimeoutEvent:
    return CollectiveTimeoutEvent(
        **dict(ref),
        rule_id=rule_id,
        failure_class=FailureClass.COLLECTIVE_TIMEOUT,
        action=Action.RETRY,
        role=Role.SYMPTOM,
        priority=PRIORITY,
        stage=Stage.TRAINING,
    )


def describe(event: CollectiveTimeoutEvent, scans: Sequence[FileScan]) -> str:
    """What the hang event saw, in words for the summary: for an outlier, its innermost frame outside the
    standard library (`wait` in threading.py says less than the DataLoader call that waits)."""
    if event.rule_id == STACK_RULE:
        if event.rank is None:
            return "stack dumps of a hang, no rank apart from its peers"
        at = (event.file, event.line)
        dump = next((d for s in scans for d in s.stacks if (d.start.file, d.start.line) == at), None)
        frames = dump.frames if dump else []
        inner = next((f for f in reversed(frames) if f.package != "python"), frames[-1] if frames else None)
        where = f" (in {inner.function}, {inner.file})" if inner and inner.function else ""
        return f"rank {event.rank}'s stack{where} differs from its peers'"
    end = log_end(scans)
    if event.time is None or end is None:
        return "no progress while the log went on"
    minutes = int((end - event.time).total_seconds() // 60)
    return f"no progress for {minutes} min after this line while the log went on"

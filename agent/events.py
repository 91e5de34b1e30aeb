"""The job's event sequence: one time-ordered list of tagged events built from rule hits and templates.

Repeated lines collapse into one event per (signature, node, rank) with a count, so the sequence stays
small however long the logs are. The sequence is then read as a whole: a signal its rank outlived (training
went on), a hint printed under an error, and what other ranks print while the group is torn down become
context, kept in the sequence but never a cause; a hang the progress timeline or stack dumps show joins it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from crashcart.agent.event_kinds import (
    CheckpointEvent,
    CollectiveTimeoutEvent,
    Event,
    FailureEvent,
    ProgressEvent,
    Signal,
    XidEvent,
)
from crashcart.agent.hangs import hang_events
from crashcart.agent.teardown import mark_teardown
from crashcart.agent.timeline import Timeline, TimelineIndex, is_progress_template, progress_value, timelines
from crashcart.knowledge.context_lines import hint_pattern
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import FailureClass, Role, Stage
from crashcart.parsers.attribution import plausible_host, strip_prefixes
from crashcart.parsers.hosts import hosts_in_message, summary_fields
from crashcart.parsers.models import FileScan, RuleHit
from crashcart.parsers.numbers import small_int
from crashcart.parsers.slurm import is_slurm_step

__all__ = [
    "CheckpointEvent",
    "CollectiveTimeoutEvent",
    "Event",
    "FailureEvent",
    "ProgressEvent",
    "Signal",
    "XidEvent",
    "build_events",
    "is_hint",
    "rank_hosts",
]

_LOAD_WORDS = re.compile(r"(?i)\bload")


def is_hint(text: str) -> bool:
    """The line is a note printed under an error (CUDA_LAUNCH_BLOCKING=1 ...), not a message of its own."""
    return hint_pattern().match(strip_prefixes(text).lstrip()) is not None


_STEPD_BANNER = re.compile(r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED")


def _signal_event(hit: RuleHit, count: int) -> Signal:
    """The hit as a tagged signal; on a hint line, whatever rule fired, a context one."""
    ref = hit.ref
    named = hit.captures.get("node")
    reported = None if named else next(iter(hosts_in_message(ref.text)), None)  # "Node failure on X", Ray's dead node
    hint = is_hint(ref.text)
    base = dict(
        dict(ref),  # the line's own fields: an event is a LineRef
        node=named or reported or ref.node,
        # slurmstepd's banner says where the step was cancelled (its own host), which accuses nobody
        names_node=bool(named) or (reported is not None and not _STEPD_BANNER.search(ref.text)),
        count=count,
        rule_id=hit.rule_id,
        failure_class=hit.failure_class,
        action=hit.action,
        role=Role.CONTEXT if hint else hit.role,
        priority=hit.priority,
        stage=hit.stage,
        demoted="hint" if hint else None,
    )
    xid = small_int(hit.captures.get("xid", ""))
    if xid is not None:
        return XidEvent(xid=xid, **base)
    if hit.failure_class is FailureClass.COLLECTIVE_TIMEOUT:
        seq = small_int(hit.captures.get("seq", ""))
        return CollectiveTimeoutEvent(op=hit.captures.get("op"), seq=seq, **base)
    return FailureEvent(**base)


def _hit_events(scans: Sequence[FileScan]) -> list[Event]:
    """One event per (rule, node, rank, file): its first line, with how many lines it stands for."""
    groups: dict[tuple[str, str | None, int | None, str], list[RuleHit]] = {}
    for scan in scans:
        for hit in scan.hits:
            groups.setdefault((hit.rule_id, hit.ref.node, hit.ref.rank, scan.file), []).append(hit)
    events: list[Event] = []
    for hits in groups.values():
        first = hits[0]
        if first.role is Role.CONTEXT and first.stage is Stage.CHECKPOINT:
            op = "load" if _LOAD_WORDS.search(first.ref.text) else "save"
            events.append(
                CheckpointEvent(
                    time=first.ref.time,
                    file=first.ref.file,
                    line=first.ref.line,
                    node=first.ref.node,
                    rank=first.ref.rank,
                    text=first.ref.text,
                    count=len(hits),
                    op=op,
                )
            )
        elif first.role is not Role.CONTEXT:
            events.append(_signal_event(first, len(hits)))
    return events


def _progress_events(scans: Sequence[FileScan]) -> list[Event]:
    """The last iteration each node/rank reported, read off its progress template's last line."""
    latest: dict[tuple[str | None, int | None, str], ProgressEvent] = {}
    for scan in scans:
        for stat in scan.templates:
            if not is_progress_template(stat.template) or is_slurm_step(stat.last.text):  # STEP 6053.0: a job step
                continue
            iteration = progress_value(stat.last.text)
            if iteration is None:
                continue
            last = stat.last
            event = ProgressEvent(**dict(last), count=stat.count, iteration=iteration)
            key = (stat.node, stat.rank, scan.file)
            if key not in latest or latest[key].line < event.line:
                latest[key] = event
    return list(latest.values())


# Only a torchrun `[rankN]:` prefix, a per-rank file name or NCCL's own "rank N nranks" names a GLOBAL rank;
# `[defaultN]:` is the local rank and an srun label may be the node's index, so those teach nothing here.
_GLOBAL_RANK = re.compile(r"\[rank(\d+)\]:")


def rank_hosts(scans: Sequence[FileScan]) -> dict[int, str]:
    """Which node each rank ran on, learnt from lines that show both (NCCL lines under a rank prefix).

    A job logged into one Slurm file, or one file per rank, names its nodes only in such lines; with
    this map an OOM on `[rank19]:` is placed on its node too.
    """
    seen: dict[int, Counter[str]] = {}
    for scan in scans:
        pairs: list[tuple[int | None, str | None]] = [
            (_global_rank(ref, scan), ref.node)
            for stat in scan.templates
            for ref in (stat.first, stat.last)
            if ref.node
        ]  # a line without a host teaches no rank its host
        for hit in scan.hits:  # NCCL's "comm 0x.. rank 19 nranks 32" names the global rank itself
            named = small_int(hit.captures.get("rank", ""))
            pairs.append((named if named is not None else _global_rank(hit.ref, scan), hit.ref.node))
        pairs += _summary_pairs(scan)
        for rank, node in pairs:
            if node and rank is not None:
                seen.setdefault(rank, Counter())[node] += 1
    return {rank: nodes.most_common(1)[0][0] for rank, nodes in seen.items()}


def _summary_pairs(scan: FileScan) -> list[tuple[int | None, str | None]]:
    """torchrun's failure summary names the failed rank's host on lines of their own (`rank : 3`, `host :
    node-12`): the one place a job logged by its launcher says where that rank ran."""
    pairs: list[tuple[int | None, str | None]] = []
    for tb in scan.tracebacks:
        if tb.kind == "child_failed" and tb.chain:
            fields = summary_fields(tb.chain[-1].message.splitlines())
            host = fields.get("host")
            pairs.append((small_int(fields.get("rank", "")), host if host and plausible_host(host) else None))
    return pairs


def _global_rank(ref: LineRef, scan: FileScan) -> int | None:
    head = ref.text[:80]
    found = _GLOBAL_RANK.search(head) if "[rank" in head else None  # the pattern's literal: most lines lack it
    return small_int(found.group(1)) if found else scan.rank


def build_events(scans: Sequence[FileScan], lines: Sequence[Timeline] | None = None) -> list[Event]:
    """The job's events in one order: by time where lines carry one, else by file and line.

    `lines` are the scans' timelines when the caller has them already (the diagnosis needs them too).

    A line without a timestamp takes the time of the nearest earlier timed event of its file (or, above
    the first one, the next), so untimed tracebacks stay next to the timed lines around them.
    """
    # tracebacks and trends build their events from this module's records: imported here, since they import it
    from crashcart.agent.tracebacks import traceback_events
    from crashcart.agent.trends import trend_events

    events: list[Event] = [
        *_hit_events(scans),
        *_progress_events(scans),
        *traceback_events(scans),
        *trend_events(scans),
    ]
    hosts = rank_hosts(scans)
    for event in events:
        if event.node is None and event.rank is not None:
            event.node = hosts.get(event.rank)
    index = TimelineIndex(lines if lines is not None else timelines(scans))
    _mark_survived(events, scans, index)
    mark_teardown(events, scans)
    events += hang_events(scans, index.lines, events)
    file_order = {scan.file: i for i, scan in enumerate(scans)}
    events.sort(key=lambda e: (file_order[e.file], e.line))
    effective = _effective_times(events)
    keyed = [(_order_key(when, file_order[e.file], e.line), e) for when, e in zip(effective, events, strict=True)]
    keyed.sort(key=lambda pair: pair[0])
    return [event for _, event in keyed]


def _mark_survived(events: Sequence[Event], scans: Sequence[FileScan], index: TimelineIndex) -> None:
    """Signals their rank made progress after, at their last occurrence, become context ("survived").

    A cancellation is left alone: ranks may step on in the grace the scheduler gives before its kill.
    """
    last = _last_seen(scans)
    for event in events:
        if not isinstance(event, (FailureEvent, XidEvent, CollectiveTimeoutEvent)):
            continue
        if event.role is Role.CONTEXT or event.failure_class is FailureClass.CANCELLED:
            continue
        seen = last.get((event.file, event.rule_id, event.rank)) or last.get((event.file, event.rule_id, None))
        line, time = event.line, event.time
        if seen is not None and seen.line > event.line:
            line, time = seen.line, seen.time
        if index.survived(event.file, event.node, event.rank, line, time):
            event.role = Role.CONTEXT
            event.demoted = "survived"


def _last_seen(scans: Sequence[FileScan]) -> dict[tuple[str, str, int | None], LineRef]:
    """The last line of each rule's templates per (file, rule, rank), and per (file, rule, None) over all ranks:
    a file keeps only a few hits of a rule, its templates saw every line."""
    last: dict[tuple[str, str, int | None], LineRef] = {}
    for scan in scans:
        for stat in scan.templates:
            for rule_id in stat.rule_ids:
                for key in ((scan.file, rule_id, stat.rank), (scan.file, rule_id, None)):
                    held = last.get(key)
                    if held is None or held.line < stat.last.line:
                        last[key] = stat.last
    return last


def _effective_times(events: list[Event]) -> list[datetime | None]:
    """Each event's own time, else its file's previous timed event's, else (at the top) the next one's."""
    times: list[datetime | None] = []
    last: dict[str, datetime | None] = {}
    for event in events:
        if event.time is not None:
            last[event.file] = event.time
        times.append(last.get(event.file))
    upcoming: dict[str, datetime | None] = {}
    for i in range(len(events) - 1, -1, -1):
        event = events[i]
        if event.time is not None:
            upcoming[event.file] = event.time
        if times[i] is None:
            times[i] = upcoming.get(event.file)
    return times


def _order_key(when: datetime | None, file_index: int, line: int) -> tuple[bool, datetime, int, int]:
    return (when is None, when or datetime.min, file_index, line)

"""The job's event sequence: one time-ordered list of tagged events built from rule hits and templates.

Repeated lines collapse into one event per (signature, node, rank) with a count, so the sequence stays
small however long the logs are.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import Action, FailureClass, Role, Stage
from crashcart.parsers.models import FileScan, RuleHit
from crashcart.parsers.numbers import small_int


class _EventBase(LineRef):
    count: int = 1  # repeats of the line's shape folded into this one event


class _SignalBase(_EventBase):
    rule_id: str
    failure_class: FailureClass
    action: Action
    role: Role
    priority: int
    stage: Stage | None = None
    names_node: bool = False  # the node was read from the message ("Node failure on X"), not its printer


class FailureEvent(_SignalBase):
    """A failure signature fired (exception, OOM, I/O error, NCCL error ...)."""

    kind: Literal["failure"] = "failure"


class XidEvent(_SignalBase):
    """An NVIDIA XID reported by the kernel driver."""

    kind: Literal["xid"] = "xid"
    xid: int


class CollectiveTimeoutEvent(_SignalBase):
    """A collective that did not finish in time (the usual symptom on the healthy ranks)."""

    kind: Literal["collective_timeout"] = "collective_timeout"
    op: str | None = None
    seq: int | None = None


class ProgressEvent(_EventBase):
    """The last training iteration a node/rank reported."""

    kind: Literal["progress"] = "progress"
    iteration: int


class CheckpointEvent(_EventBase):
    """A checkpoint save or load the job reported."""

    kind: Literal["checkpoint"] = "checkpoint"
    op: Literal["save", "load"]


Event = Annotated[
    FailureEvent | XidEvent | CollectiveTimeoutEvent | ProgressEvent | CheckpointEvent,
    Field(discriminator="kind"),
]


_PROGRESS_TEMPLATE = re.compile(r"(?i)\b(?:iteration|iter|global_step|step)\b[^|]{0,12}<NUM>")
_PROGRESS_VALUE = re.compile(r"(?i)\b(?:iteration|iter|global_step|step)\b\D{0,12}?(\d+)")
_LOAD_WORDS = re.compile(r"(?i)\bload")


def _signal_event(hit: RuleHit, count: int) -> FailureEvent | XidEvent | CollectiveTimeoutEvent:
    ref = hit.ref
    named = hit.captures.get("node")
    base = dict(
        dict(ref),  # the line's own fields: an event is a LineRef
        node=named or ref.node,
        names_node=bool(named),
        count=count,
        rule_id=hit.rule_id,
        failure_class=hit.failure_class,
        action=hit.action,
        role=hit.role,
        priority=hit.priority,
        stage=hit.stage,
    )
    xid = small_int(hit.captures.get("xid", ""))
    if xid is not None:
        return XidEvent(xid=xid, **base)
    if hit.failure_class is FailureClass.COLLECTIVE_TIMEOUT:
        seq = small_int(hit.captures.get("seq", ""))
        return CollectiveTimeoutEvent(op=hit.captures.get("op"), seq=seq, **base)
    return FailureEvent(**base)


def _hit_events(scans: list[FileScan]) -> list[Event]:
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


def _progress_events(scans: list[FileScan]) -> list[Event]:
    """The last iteration each node/rank reported, read off its progress template's last line."""
    latest: dict[tuple[str | None, int | None, str], ProgressEvent] = {}
    for scan in scans:
        for stat in scan.templates:
            if not _PROGRESS_TEMPLATE.search(stat.template):
                continue
            value = _PROGRESS_VALUE.search(stat.last.text)
            iteration = small_int(value.group(1)) if value else None
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


def rank_hosts(scans: list[FileScan]) -> dict[int, str]:
    """Which node each rank ran on, learnt from lines that show both (NCCL lines under a rank prefix).

    A job logged into one Slurm file, or one file per rank, names its nodes only in such lines; with
    this map an OOM on `[rank19]:` is placed on its node too.
    """
    seen: dict[int, Counter[str]] = {}
    for scan in scans:
        pairs = [(_global_rank(ref, scan), ref.node) for stat in scan.templates for ref in (stat.first, stat.last)]
        for hit in scan.hits:  # NCCL's "comm 0x.. rank 19 nranks 32" names the global rank itself
            named = small_int(hit.captures.get("rank", ""))
            pairs.append((named if named is not None else _global_rank(hit.ref, scan), hit.ref.node))
        for rank, node in pairs:
            if node and rank is not None:
                seen.setdefault(rank, Counter())[node] += 1
    return {rank: nodes.most_common(1)[0][0] for rank, nodes in seen.items()}


def _global_rank(ref: LineRef, scan: FileScan) -> int | None:
    found = _GLOBAL_RANK.search(ref.text[:80])
    return small_int(found.group(1)) if found else scan.rank


def build_events(scans: list[FileScan]) -> list[Event]:
    """The job's events in one order: by time where lines carry one, else by file and line.

    A line without a timestamp takes the time of the nearest earlier timed event of its file (or, above
    the first one, the next), so untimed tracebacks stay next to the timed lines around them.
    """
    events = _hit_events(scans) + _progress_events(scans)
    hosts = rank_hosts(scans)
    for event in events:
        if event.node is None and event.rank is not None:
            event.node = hosts.get(event.rank)
    file_order = {scan.file: i for i, scan in enumerate(scans)}
    events.sort(key=lambda e: (file_order[e.file], e.line))
    effective = _effective_times(events)
    keyed = [(_order_key(when, file_order[e.file], e.line), e) for when, e in zip(effective, events, strict=True)]
    keyed.sort(key=lambda pair: pair[0])
    return [event for _, event in keyed]


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

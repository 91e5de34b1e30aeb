"""What other ranks print while the group is torn down: context of the failure that started it, never its cause.

Once one worker fails, torchrun (or DeepSpeed's launcher) sends SIGTERM to the rest of its node, and srun or
mpirun stop every task of the step. What the other ranks print after that (aborted communicators, DataLoader
workers killed by the signal, SIGTERM notes) is the shutdown; the first failure before it is the cause. A
teardown the scheduler started (a time limit, a preemption, scancel) with no failure before it is a
cancellation, and everything after it is context of that.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from crashcart.agent.event_kinds import CollectiveTimeoutEvent, Event, FailureEvent, Signal, XidEvent
from crashcart.knowledge.context_lines import teardown_scope
from crashcart.knowledge.taxonomy import FailureClass, Role
from crashcart.parsers.models import FileScan


@dataclass(frozen=True, slots=True)
class TeardownStart:
    """The first line of a teardown: where, when, what it stops, and whether the scheduler started it."""

    file: str
    line: int
    time: datetime | None
    node: str | None
    scope: Literal["node", "job"]
    scheduler: bool = False


# slurmstepd's own clock in its cancellation line, when the line has no leading timestamp:
# `slurmstepd: error: *** STEP 6053.0 ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***` (IGNF/myria3d#123)
_CANCELLED_AT = re.compile(r"CANCELLED AT (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")


def mark_teardown(events: Sequence[Event], scans: Sequence[FileScan]) -> None:
    """Make context of the signals other ranks printed after a teardown started (see the module's docstring)."""
    signals = [e for e in events if isinstance(e, (FailureEvent, XidEvent, CollectiveTimeoutEvent))]
    since = _not_before(events)
    for start in teardown_starts(scans, signals):
        _demote_after(start, signals, since)


def _not_before(events: Sequence[Event]) -> dict[int, datetime]:
    """For each event (by id), the time it was printed at the earliest: its own, else that of the latest
    timed event above it in its file. Enough to place an untimed traceback after a teardown in another file."""
    since: dict[int, datetime] = {}
    last: dict[str, datetime] = {}
    for event in sorted(events, key=lambda e: (e.file, e.line)):
        if event.time is not None:
            last[event.file] = event.time
        if event.file in last:
            since[id(event)] = last[event.file]
    return since


def teardown_starts(scans: Sequence[FileScan], signals: Sequence[Signal]) -> list[TeardownStart]:
    """The first teardown line of each node (torchrun, DeepSpeed) and of the job (srun, mpirun, the scheduler).

    A launcher's line is found as the first line of its template, so one look per template; a job-wide start
    without a time is kept per file, where line order still places it.
    """
    firsts: dict[tuple[str, str | None], TeardownStart] = {}
    for scan in scans:
        for stat in scan.templates:
            ref = stat.first
            scope = teardown_scope(ref.text)
            if scope is not None:
                start = TeardownStart(ref.file, ref.line, ref.time, ref.node or scan.node, scope)
                _keep_first(firsts, start)
    for event in signals:
        if event.failure_class is FailureClass.CANCELLED and event.role is Role.ROOT_CAUSE:
            when = event.time or _cancelled_at(event.text)
            _keep_first(firsts, TeardownStart(event.file, event.line, when, event.node, "job", scheduler=True))
    return list(firsts.values())


def _cancelled_at(text: str) -> datetime | None:
    found = _CANCELLED_AT.search(text)
    return datetime.fromisoformat(found.group(1)) if found else None


def _keep_first(firsts: dict[tuple[str, str | None], TeardownStart], start: TeardownStart) -> None:
    key: tuple[str, str | None]
    if start.scope == "node":
        key = ("node", start.node or start.file)
    else:
        key = ("job", None if start.time is not None else start.file)
    held = firsts.get(key)
    if held is None or _before(start, held) or (start.scheduler and not held.scheduler and not _before(held, start)):
        firsts[key] = start


def _demote_after(start: TeardownStart, signals: Sequence[Signal], since: dict[int, datetime]) -> None:
    """Other ranks' signals after `start` become context when a failure came first, all of them when the
    scheduler started it with none before."""
    in_scope = [e for e in signals if start.scope == "job" or _on_node(e, start)]
    culprits = [
        e
        for e in in_scope
        if e.role is not Role.CONTEXT and e.failure_class is not FailureClass.CANCELLED and _before(e, start)
    ]
    if not culprits and not start.scheduler:
        return
    classes = {e.failure_class for e in culprits}
    ranks = {e.rank for e in culprits if e.rank is not None}
    for event in in_scope:
        if event.role is Role.CONTEXT or not _after(event, start, since.get(id(event))):
            continue
        if culprits and (event.rank is None or event.rank in ranks or event.failure_class in classes):
            continue  # the launcher's own report, the failing rank itself, or more of the same failure
        if not culprits and event.failure_class is FailureClass.CANCELLED:
            continue
        event.role = Role.CONTEXT
        event.demoted = "teardown"


def _on_node(event: Signal, start: TeardownStart) -> bool:
    return event.file == start.file or (start.node is not None and event.node == start.node)


def _after(event: Signal, start: TeardownStart, since: datetime | None) -> bool:
    """The event was printed after the start: provably, by its earliest time, or by line order in one file."""
    if start.time is not None and since is not None and since > start.time:
        return True
    return event.file == start.file and event.line > start.line


def _before(a: Signal | TeardownStart, b: Signal | TeardownStart) -> bool:
    """a was printed before b: by time when both have one, else by line order within one file."""
    if a.time is not None and b.time is not None:
        return a.time < b.time
    return a.file == b.file and a.line < b.line

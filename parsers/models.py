"""Records the parsing stage hands to the diagnosis stage: compact, whatever the size of the logs."""

from __future__ import annotations

from crashcart.knowledge.records import LineRef, Strict
from crashcart.knowledge.taxonomy import Action, FailureClass, Role, Stage


class RuleHit(Strict):
    """A line confirmed to match a signature of the fast filter."""

    rule_id: str
    failure_class: FailureClass
    action: Action
    role: Role
    priority: int
    stage: Stage | None = None
    ref: LineRef
    captures: dict[str, str] = {}


class TemplateStat(Strict):
    """One Drain3 template as seen by one node/rank of one file."""

    template_id: str  # stable hash of the template text, equal across files and processes
    template: str
    node: str | None = None
    rank: int | None = None
    count: int
    first: LineRef
    last: LineRef
    rule_ids: list[str] = []
    new: bool = False  # first seen only in the last part of its file, after the job had been running
    rare: bool = False  # seen at most a few times in the whole job (set once all files are scanned)


class FileScan(Strict):
    """Everything the parsers learned from one source file."""

    file: str
    node: str | None = None
    rank: int | None = None
    lines: int
    bytes: int
    hits: list[RuleHit]
    hits_dropped: int = 0  # hits beyond the per-rule cap: counted, not kept
    templates: list[TemplateStat]
    seconds: float = 0.0
    problem: str | None = None  # why reading stopped before the end (truncated, corrupt, over a size cap)


class Skipped(Strict):
    """A file or folder of the job that was not read, or not to its end, and why (one line)."""

    path: str
    reason: str

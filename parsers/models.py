"""Records the parsing stage hands to the diagnosis stage: compact, whatever the size of the logs."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from crashcart.knowledge.records import Frozen, LineRef, Strict
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


class Frame(Frozen):
    """One frame of a traceback or stack dump, as printed (outermost first)."""

    file: str
    line: int | None = None
    function: str | None = None
    source: str | None = None  # the source line printed under the frame, stripped
    package: str | None = None  # the installed package (or "python" for the standard library); None: user code


class RaisedException(Strict):
    """One exception of a traceback's chain: its type, its whole message, and the frames it went through."""

    exc_type: str  # as printed: "RuntimeError", "torch.OutOfMemoryError", "std::runtime_error"
    message: str  # the whole message, continuation and hard-wrapped lines rejoined
    frames: list[Frame] = []
    ref: LineRef  # the line that names the exception ("Type: message"): the one to cite
    relation: Literal["context", "cause"] | None = None  # how it follows the one before it in the chain
    assertion: str | None = None  # for a bare AssertionError: the asserted expression from the failing frame


class Traceback(Strict):
    """A traceback as one record: the chain of exceptions, oldest first; the last one propagated."""

    kind: Literal["python", "rich", "cpp_terminate", "child_failed"]
    start: LineRef  # the traceback's first line (its header)
    chain: list[RaisedException]
    worker: str | None = None  # re-raised from a worker: "DataLoader worker process 0"
    unfinished: list[Frame] = []  # frames of a last part whose exception line never came: the log ended first


class StackDump(Strict):
    """One thread's stack from a hang dump (py-spy dump, faulthandler), innermost frame last."""

    start: LineRef  # the thread's header line
    thread: str  # as printed: "Thread 0x00007f3c (most recent call first)", "Thread 3214 (active): MainThread"
    frames: list[Frame]


class MetricPoint(Strict):
    """The numbers of one training-progress line: what loss trends and loss-scale streaks are judged on."""

    line: int
    text: str = ""  # the line itself, for evidence
    time: datetime | None = None
    node: str | None = None
    rank: int | None = None
    iteration: int | None = None
    loss: float | None = None
    grad_norm: float | None = None
    loss_scale: float | None = None  # the scale a mixed-precision step ran (or attempted) with
    skipped: bool = False  # the line reports an overflow and a skipped step


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
    tracebacks: list[Traceback] = []
    stacks: list[StackDump] = []
    metrics: list[MetricPoint] = []  # the last progress numbers per rank (parsers.metrics.MAX_POINTS)
    problem: str | None = None  # why reading stopped before the end (truncated, corrupt, over a size cap)
    year: int | None = None  # of the file's own dated lines; None: its year-less stamps were lent (yearless.py)


class Skipped(Strict):
    """A file or folder of the job that was not read, or not to its end, and why (one line)."""

    path: str
    reason: str

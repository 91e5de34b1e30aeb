"""The tagged kinds of a job's event sequence: one discriminated union that round-trips through JSON unchanged.

They live apart from the code that builds the sequence (events.py), so the modules that make events of their own
(timeline hangs, tracebacks, trends) can use them without importing the builder.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import Action, FailureClass, Role, Stage

# Why a signal became context: training went on after it, it is a hint under an error, or the group was
# already being torn down when it was printed.
Demotion = Literal["survived", "hint", "teardown"]


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
    demoted: Demotion | None = None  # set when the signal was made context, and why


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

Signal = FailureEvent | XidEvent | CollectiveTimeoutEvent

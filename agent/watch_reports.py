"""What `crashcart watch` reports while a job runs: one JSON line per report, each of one kind, each once.

A root cause the moment its line is read, a stall when no rank has made progress for too long, and the final
diagnosis when the job ends. They are variants of one union tagged by `kind`, so a consumer reads a line and knows
what it holds; every one carries the taxonomy's class and action, the place and the lines that prove it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from crashcart.agent.models import Diagnosis
from crashcart.knowledge.records import LineRef, Strict
from crashcart.knowledge.taxonomy import Action, FailureClass


class RootCauseReport(Strict):
    """A line that names a failure by itself (an XID, an IB error, an OOM), reported as soon as it is read."""

    kind: Literal["root_cause"] = "root_cause"
    time: datetime  # when it was reported (UTC)
    failure_class: FailureClass
    action: Action
    rule_id: str
    explanation: str
    nodes: list[str] = []
    rank: int | None = None
    drain: str | None = None  # the command that takes the node out of service: printed, never run by crashcart
    evidence: list[LineRef]


class StallReport(Strict):
    """No progress line on any rank for `stalled_s` seconds, past the threshold; names who stopped first."""

    kind: Literal["stall"] = "stall"
    time: datetime
    failure_class: FailureClass = FailureClass.COLLECTIVE_TIMEOUT
    action: Action = Action.RETRY
    stalled_s: float
    threshold_s: float
    nodes: list[str] = []
    rank: int | None = None
    iteration: int | None = None  # the last iteration that printer reported
    why: str  # which printer is named and why: stopped first, or its last lines differ from its peers'
    evidence: list[LineRef]  # that printer's last progress line (and its last line, when that differs)


class FinalReport(Strict):
    """The job ended: the whole-log diagnosis (crashcart.api.triage on the files), and how the end was seen."""

    kind: Literal["final"] = "final"
    time: datetime
    ended: str  # "slurm state FAILED", "no growth for 30s after a terminal line", ...
    interrupted: bool = False  # the watch was stopped (Ctrl-C) before the job ended: a diagnosis of the lines so far
    failure_class: FailureClass
    action: Action
    nodes: list[str] = []
    rank: int | None = None
    summary: str
    drain: list[str] = []
    diagnosis: Diagnosis


WatchReport = Annotated[RootCauseReport | StallReport | FinalReport, Field(discriminator="kind")]
REPORT = TypeAdapter(WatchReport)  # a JSON line back into its record: REPORT.validate_json(line)

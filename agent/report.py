"""The triage report: the diagnosis plus the facts behind it, as one record for JSON, Markdown or a terminal."""

from __future__ import annotations

from pydantic import Field

from crashcart.agent.events import Event
from crashcart.agent.models import Diagnosis, LLMUsage
from crashcart.knowledge.incidents import Fingerprint
from crashcart.knowledge.records import Strict
from crashcart.knowledge.rule_store import RuleProposal
from crashcart.parsers.models import Skipped, TemplateStat

REPORT_VERSION = 1


class ScanStats(Strict):
    """How much was read and how fast."""

    files: int
    lines: int
    bytes: int
    rule_hits: int
    templates: int
    seconds: float
    mb_per_s: float


class Report(Strict):
    """What `crashcart triage` returns."""

    version: int = REPORT_VERSION
    paths: list[str]
    diagnosis: Diagnosis
    events: list[Event] = []
    events_omitted: int = 0
    templates: list[TemplateStat] = Field(default_factory=list)  # salient: with rule hits, new, or rare
    stats: ScanStats
    fingerprint: Fingerprint = Field(default_factory=Fingerprint)
    llm: LLMUsage | None = None  # present when the model was consulted: tokens, calls, seconds, cost
    proposals: list[RuleProposal] = Field(default_factory=list)  # rules suggested for the operator's queue
    skipped: list[Skipped] = Field(default_factory=list)  # files not read, or not to the end (truncated ...), and why
    warnings: list[str] = Field(default_factory=list)  # one line each: what else the run left out (a broken user rule)
    timings: dict[str, float] = Field(default_factory=dict)

"""Incident records: a confirmed past failure, its compact fingerprint, diagnosis and provenance."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import Field

from crashcart.knowledge.records import Evidence, Strict
from crashcart.knowledge.taxonomy import Action, FailureClass, Stage

INCIDENT_VERSION = 1


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Fingerprint(Strict):
    """What a job's logs looked like, compactly: enough to find similar jobs, small enough to store 100k."""

    version: int = INCIDENT_VERSION
    templates: list[str] = Field(default_factory=list)  # salient masked templates, most telling first
    rule_ids: list[str] = Field(default_factory=list)
    classes: list[FailureClass] = Field(default_factory=list)  # classes of the rules that fired

    def text(self) -> str:
        """The text an embedder sees: one line per rule (its id, its family prefixes and class, so related
        rules share tokens), then the templates."""
        by_rule = [
            " ".join(f"rule:{'.'.join(parts[:n])}" for n in range(len(parts), 0, -1))
            for parts in (rule.split(".") for rule in self.rule_ids)
        ]
        return "\n".join([*by_rule, " ".join(f"rule:class:{c.value}" for c in self.classes), *self.templates])


class Provenance(Strict):
    """Where an incident came from and who vouched for it."""

    job: str  # a job id or the path that was triaged
    created_at: datetime = Field(default_factory=utcnow)
    confirmed_by: str | None = None
    source: Literal["operator", "evalset", "import"] = "operator"


class Incident(Strict):
    """One confirmed failure in the memory."""

    version: int = INCIDENT_VERSION
    id: str = ""  # assigned by the store when empty
    fingerprint: Fingerprint
    failure_class: FailureClass
    action: Action
    evidence: list[Evidence] = Field(default_factory=list)
    faulty_nodes: list[str] = Field(default_factory=list)
    stage: Stage | None = None
    mitigation: list[str] = Field(default_factory=list)
    resolution: str | None = None  # how it was resolved, in the operator's words
    provenance: Provenance

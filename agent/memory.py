"""Incident memory in a diagnosis: the most similar past incidents, and their vote.

A confirmed incident that matches the failure's own lines closely (CLOSE_SIMILARITY) is "seen before": its
class, action and resolution decide over a generic or symptom verdict of the rules, or over no verdict; a sure
root-cause verdict stands. A drain is decided by memory only when the rules' verdict drains too or two close
incidents agree: one match never takes a node out. Below CLOSE_SIMILARITY a neighbour is only listed, labelled
weak; below NOVELTY_THRESHOLD the failure is new. Both thresholds come from `crashcart eval --memory` on a
corpus of real failures (leave-one-out and recurrence). Recent incidents weigh a little more.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from crashcart.agent.consult import SURE_FROM
from crashcart.agent.models import Diagnosis, SimilarIncident
from crashcart.knowledge.incidents import Fingerprint, utcnow
from crashcart.knowledge.runbooks import mitigation_steps
from crashcart.knowledge.taxonomy import Action, FailureClass

if TYPE_CHECKING:  # the store brings faiss and numpy: a triage without memory needs neither
    from crashcart.knowledge.incident_store import IncidentStore

NOVELTY_THRESHOLD = 0.35  # best similarity below this: a new failure (`crashcart eval --memory` calibrates)
CLOSE_SIMILARITY = 0.85  # from this a neighbour may decide ("seen before"): calibrated on the corpus dev half
DRAIN_AGREEING = 2  # close incidents that must agree before memory alone drains a node
MIN_SHARE = 0.5  # the winning class must hold this share of the neighbours' weight
HALF_LIFE_DAYS = 90.0
MIN_RECENCY = 0.5  # an old incident still counts at least half


def recall(
    store: IncidentStore,
    fingerprint: Fingerprint,
    k: int = 5,
    threshold: float = NOVELTY_THRESHOLD,
    close: float = CLOSE_SIMILARITY,
) -> list[SimilarIncident]:
    """The k most similar stored incidents, best first, each labelled close, weak or distant."""
    if not fingerprint.templates and not fingerprint.rule_ids:
        return []
    return [
        SimilarIncident(
            id=incident.id,
            similarity=round(float(score), 4),
            failure_class=incident.failure_class,
            action=incident.action,
            resolution=incident.resolution,
            job=incident.provenance.job,
            created_at=incident.provenance.created_at,
            match="close" if score >= close else "weak" if score >= threshold else "distant",
        )
        for incident, score in store.search(fingerprint, k)
    ]


def _recency(created: datetime, now: datetime) -> float:
    age_days = max(0.0, (now - created).total_seconds() / 86400)
    return max(MIN_RECENCY, 0.5 ** (age_days / HALF_LIFE_DAYS))


def vote(
    similar: Sequence[SimilarIncident], threshold: float = NOVELTY_THRESHOLD, now: datetime | None = None
) -> tuple[FailureClass, Action, float, SimilarIncident] | None:
    """The neighbours' class by similarity x recency weight: (class, action, share, best such neighbour)."""
    now = now or utcnow()
    weights: dict[FailureClass, float] = {}
    best: dict[FailureClass, SimilarIncident] = {}
    for item in similar:
        if item.similarity < threshold:
            continue
        weights[item.failure_class] = weights.get(item.failure_class, 0.0) + item.similarity * _recency(
            item.created_at, now
        )
        best.setdefault(item.failure_class, item)
    if not weights:
        return None
    winner = max(weights, key=weights.__getitem__)
    share = weights[winner] / sum(weights.values())
    return winner, best[winner].action, share, best[winner]


def with_memory(
    diagnosis: Diagnosis,
    similar: list[SimilarIncident],
    threshold: float = NOVELTY_THRESHOLD,
    close: float = CLOSE_SIMILARITY,
) -> Diagnosis:
    """The diagnosis with its similar incidents listed and novelty flagged; decided by the close ones where the
    rules are not sure and those agree (module docstring)."""
    if not similar:
        return diagnosis.model_copy(update={"similar": [], "novel": None})
    novel = similar[0].similarity < threshold
    update: dict = {"similar": similar, "novel": novel}
    decided = vote(similar, close) if _may_decide(diagnosis) else None
    if decided is not None and decided[2] >= MIN_SHARE and _may_drain(diagnosis, decided, similar, close):
        cls, action, share, best = decided
        resolved = f", resolved by: {best.resolution}" if best.resolution else ""
        update |= {
            "failure_class": cls,
            "action": action,
            "confidence": round(min(0.9, share * best.similarity), 2),
            "decided_by": "memory",
            "summary": f"{cls.value}: seen before, incident {best.id} (similarity {best.similarity:.2f}, "
            f"{share:.0%} of close incidents agree){resolved}",
            "mitigation": mitigation_steps(cls, diagnosis.faulty_nodes),
        }
    elif novel and diagnosis.failure_class is FailureClass.UNKNOWN:
        update["summary"] = diagnosis.summary + "; nothing similar in incident memory: a new failure"
    elif similar[0].match == "weak" and diagnosis.failure_class is FailureClass.UNKNOWN:
        update["summary"] = diagnosis.summary + f"; only a weak match in incident memory ({similar[0].id})"
    return diagnosis.model_copy(update=update)


def _may_decide(diagnosis: Diagnosis) -> bool:
    """Memory speaks over no verdict, a symptom or a generic one; a sure root-cause verdict stands."""
    sure = diagnosis.decided_by in ("rules", "structure") and diagnosis.confidence >= SURE_FROM
    return diagnosis.failure_class is FailureClass.UNKNOWN or not sure


def _may_drain(
    diagnosis: Diagnosis, decided: tuple[FailureClass, Action, float, SimilarIncident], similar: list, close: float
) -> bool:
    """One close match never drains a node on its own: the rules' verdict drains too, or enough agree."""
    cls, action = decided[0], decided[1]
    if action is not Action.DRAIN_NODE_AND_RETRY or diagnosis.action is Action.DRAIN_NODE_AND_RETRY:
        return True
    agreeing = [s for s in similar if s.similarity >= close and s.failure_class is cls]
    return len(agreeing) >= DRAIN_AGREEING

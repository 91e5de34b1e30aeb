"""Incident memory in a diagnosis: the most similar past incidents, and their vote when the rules are unsure.

The rules decide when they are confident. When they are silent or weak, a similarity-weighted vote of the
neighbours above the novelty threshold decides; when even the best neighbour is below that threshold the
diagnosis says the failure is new rather than forcing a class. Recent incidents weigh a little more.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from crashcart.agent.models import Diagnosis, SimilarIncident
from crashcart.knowledge.incident_store import IncidentStore
from crashcart.knowledge.incidents import Fingerprint, utcnow
from crashcart.knowledge.runbooks import mitigation_steps
from crashcart.knowledge.taxonomy import Action, FailureClass

NOVELTY_THRESHOLD = 0.35  # best similarity below this: a new failure (`crashcart eval --memory` calibrates)
WEAK_CONFIDENCE = 0.6  # rules below this confidence let a close memory overrule them
OVERRIDE_SIMILARITY = 0.8  # ... when the best neighbour is at least this similar
MIN_SHARE = 0.5  # the winning class must hold this share of the neighbours' weight
HALF_LIFE_DAYS = 90.0
MIN_RECENCY = 0.5  # an old incident still counts at least half


def recall(store: IncidentStore, fingerprint: Fingerprint, k: int = 5) -> list[SimilarIncident]:
    """The k most similar stored incidents, best first."""
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
    diagnosis: Diagnosis, similar: list[SimilarIncident], threshold: float = NOVELTY_THRESHOLD
) -> Diagnosis:
    """The diagnosis with its similar incidents listed, novelty flagged, and the memory's class if the rules
    were unsure and the neighbours agree."""
    if not similar:
        return diagnosis.model_copy(update={"similar": [], "novel": None})
    novel = similar[0].similarity < threshold
    update: dict = {"similar": similar, "novel": novel}
    silent = diagnosis.failure_class is FailureClass.UNKNOWN
    weak = diagnosis.confidence < WEAK_CONFIDENCE and similar[0].similarity >= OVERRIDE_SIMILARITY
    decided = vote(similar, threshold) if (silent or weak) and not novel else None
    if decided is not None and decided[2] >= MIN_SHARE:
        cls, action, share, best = decided
        resolved = f"; it was resolved: {best.resolution}" if best.resolution else ""
        update |= {
            "failure_class": cls,
            "action": action,
            "confidence": round(min(0.9, share * best.similarity), 2),
            "decided_by": "memory",
            "summary": f"{cls.value}: seen before, like incident {best.id} (similarity {best.similarity:.2f}, "
            f"{share:.0%} of similar incidents agree){resolved}",
            "mitigation": mitigation_steps(cls, diagnosis.faulty_nodes),
        }
    elif novel and diagnosis.failure_class is FailureClass.UNKNOWN:
        update["summary"] = diagnosis.summary + "; nothing similar in incident memory: a new failure"
    return diagnosis.model_copy(update=update)

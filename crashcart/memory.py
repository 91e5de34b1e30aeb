"""Incident memory for users: open the store, turn a confirmed triage into an incident, import eval sets.

The CLI's `cases` commands, the bot and batch triage all call these functions.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from crashcart.agent.memory import recall
from crashcart.agent.models import SimilarIncident
from crashcart.api import triage
from crashcart.evals.dataset import load_evalset
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.incident_store import IncidentStore
from crashcart.knowledge.incidents import Incident, Provenance
from crashcart.knowledge.runbooks import mitigation_steps
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, Action, FailureClass
from crashcart.report import Report


def incident_from_report(
    report: Report, *, failure_class: FailureClass | None = None, action: Action | None = None,
    job: str | None = None, confirmed_by: str | None = None, resolution: str | None = None,
    source: str = "operator",
) -> Incident:
    """An incident from a triage report, with the class an operator confirmed (or the one diagnosed)."""
    d = report.diagnosis
    cls = failure_class or d.failure_class
    if cls is FailureClass.UNKNOWN:
        raise InputError("an incident needs a confirmed failure class: pass --class with a taxonomy class")
    same = cls is d.failure_class
    return Incident(
        fingerprint=report.fingerprint,
        failure_class=cls,
        action=action or (d.action if same else DEFAULT_ACTION[cls]),
        evidence=d.evidence,
        faulty_nodes=d.faulty_nodes,
        stage=d.stage,
        mitigation=d.mitigation if same else mitigation_steps(cls, d.faulty_nodes),
        resolution=resolution,
        provenance=Provenance(job=job or ", ".join(report.paths), confirmed_by=confirmed_by, source=source),
    )


def add_from_paths(
    store: IncidentStore, paths: list[str], *, failure_class: FailureClass | None = None,
    action: Action | None = None, job: str | None = None, confirmed_by: str | None = None,
    resolution: str | None = None,
) -> tuple[Incident, Report]:
    """Triage the logs at paths and store the confirmed incident; the report comes back for follow-ups."""
    report = triage(paths)
    incident = incident_from_report(
        report, failure_class=failure_class, action=action, job=job, confirmed_by=confirmed_by,
        resolution=resolution,
    )
    return store.add(incident), report


def rules_missed(report: Report, failure_class: FailureClass) -> bool:
    """Whether the fast filter alone would not have named this confirmed class: worth a new rule."""
    d = report.diagnosis
    return d.decided_by != "rules" or d.failure_class is not failure_class


def add_from_evalset(
    store: IncidentStore, root: Path, triage_fn: Callable[[list[str]], Report] = triage
) -> list[Incident]:
    """Every case of DIR/labels.jsonl, triaged and stored with its labeled class and action."""
    incidents = []
    for case in load_evalset(root):
        report = triage_fn([str(case.resolve(root))])
        incidents.append(incident_from_report(
            report, failure_class=case.failure_class, action=case.action, job=case.id, source="evalset",
            resolution=case.why,
        ))
    return store.add_many(incidents)


def search_paths(store: IncidentStore, paths: list[str], k: int = 5) -> list[SimilarIncident]:
    """The incidents most similar to the logs at paths."""
    return recall(store, triage(paths).fingerprint, k)

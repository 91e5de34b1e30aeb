"""What an operator's confirmation of a case produces: an incident for memory and, where the rules missed it,
a rule proposal for the queue.

The CLI's `cases` and `rules propose` commands, the bot's confirm/correct buttons and evals all call these.
"""

from __future__ import annotations

from collections.abc import Sequence

from crashcart.agent.memory import recall
from crashcart.agent.models import SimilarIncident
from crashcart.agent.pipeline import triage
from crashcart.agent.proposals import propose_from_line
from crashcart.agent.report import Report
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.incident_store import IncidentStore
from crashcart.knowledge.incidents import Incident, Provenance
from crashcart.knowledge.rule_store import RuleProposal, RuleStore
from crashcart.knowledge.runbooks import mitigation_steps
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, Action, FailureClass


def incident_from_report(
    report: Report,
    *,
    failure_class: FailureClass | None = None,
    action: Action | None = None,
    job: str | None = None,
    confirmed_by: str | None = None,
    resolution: str | None = None,
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
    store: IncidentStore,
    paths: list[str],
    *,
    failure_class: FailureClass | None = None,
    action: Action | None = None,
    job: str | None = None,
    confirmed_by: str | None = None,
    resolution: str | None = None,
    rule_store: RuleStore | None = None,
) -> tuple[Incident, RuleProposal | None]:
    """Triage the logs at paths, store the confirmed incident and, with a rule store, teach the fast filter
    what it missed (see `teach_rules`)."""
    report = triage(paths)
    incident = store.add(
        incident_from_report(
            report,
            failure_class=failure_class,
            action=action,
            job=job,
            confirmed_by=confirmed_by,
            resolution=resolution,
        )
    )
    proposal = teach_rules(report, incident.failure_class, rule_store) if rule_store is not None else None
    return incident, proposal


def rules_missed(report: Report, failure_class: FailureClass) -> bool:
    """Whether the rules would not have named this confirmed class: worth a new rule. A verdict read from the
    failure's structure (a traceback, a trend) comes back without one."""
    d = report.diagnosis
    return d.decided_by not in ("rules", "structure") or d.failure_class is not failure_class


def teach_rules(report: Report, failure_class: FailureClass, store: RuleStore) -> RuleProposal | None:
    """Once an operator confirms a class the rules missed, a rule derived from the evidence line (queued when
    it validates, returned rejected with its reasons when not); None when no rule is needed or possible: the
    rules named the class, there is no evidence line, or a model's pending proposal for it came with the report.
    """
    if not rules_missed(report, failure_class) or not report.diagnosis.evidence:
        return None
    if any(p.status == "pending" and p.failure_class is failure_class for p in report.proposals):
        return None
    return propose_from_report(report, failure_class, store=store)


def search_paths(store: IncidentStore, paths: list[str], k: int = 5) -> list[SimilarIncident]:
    """The incidents most similar to the logs at paths."""
    return recall(store, triage(paths).fingerprint, k)


def propose_from_report(
    report: Report, failure_class: FailureClass, *, line: int | None = None, store: RuleStore | None = None
) -> RuleProposal:
    """A rule for the report's evidence line, derived from its template, validated, and queued in `store` when
    it passes.

    The line is `line` if given (it must be one of the report's evidence lines or events), else the first
    evidence line of the diagnosis.
    """
    text = _evidence_text(report, line)
    proposal = propose_from_line(text, failure_class, job=", ".join(report.paths))
    if store is not None and proposal.status == "pending":
        proposal = store.propose(proposal)
    return proposal


def propose_from_triage(
    paths: Sequence[str], failure_class: FailureClass, *, line: int | None = None, store: RuleStore | None = None
) -> RuleProposal:
    """Triage paths, then propose a rule from the chosen evidence line."""
    return propose_from_report(triage(paths), failure_class, line=line, store=store)


def _evidence_text(report: Report, line: int | None) -> str:
    candidates = [(e.line, e.text) for e in report.diagnosis.evidence] + [(e.line, e.text) for e in report.events]
    if not candidates:
        raise InputError("the diagnosis has no evidence line to derive a rule from: pass --line N")
    if line is None:
        return candidates[0][1]
    for number, text in candidates:
        if number == line:
            return text
    raise InputError(f"line {line} is not among the diagnosis' evidence or events; pick one shown by triage")

"""Rule proposals without any model: from a confirmed failure's evidence line, via its Drain3 template."""

from __future__ import annotations

from collections.abc import Sequence

from crashcart.api import triage
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.rule_store import RuleProposal, RuleStore
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.parsers.templater import Templater
from crashcart.report import Report


def propose_from_report(
    report: Report, failure_class: FailureClass, *, line: int | None = None, store: RuleStore | None = None
) -> RuleProposal:
    """Derive, validate and (when valid and a store is given) queue a rule for the report's evidence line.

    The line is `line` if given (it must be one of the report's evidence lines or events), else the first
    evidence line of the diagnosis.
    """
    from crashcart.agent.proposals import derive_from_template, healthy_corpus, validate_pattern

    text = _evidence_text(report, line)
    templater = Templater()
    template = templater.template(templater.template_index(text.encode()))
    pattern = derive_from_template(template, text)
    check = validate_pattern(pattern, [text], healthy_corpus())
    proposal = RuleProposal(
        pattern=pattern, failure_class=failure_class, explanation=f"derived from the confirmed line: {text[:200]}",
        examples=[text], origin="template", model="drain3-template", job=", ".join(report.paths),
        status="pending" if check.ok else "rejected", reason="; ".join(check.reasons) or None,
        validation=check.notes + check.reasons,
    )
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

"""The opt-in LLM layer in a triage: when to ask the model, and what to do with the rule it suggests.

The model is consulted only when the rules and the memory are unsure (or when asked to always). It never
overrules a sure root-cause verdict of the rules: an answer that contradicts one (log text can carry an answer
to a model) is shown as an alternative and recorded in the llm block, and the rules' verdict stands. A rule it
suggests is validated (compiles in the fast filter's engines, matches its evidence, matches no healthy log
line, is not trivially broad) and, if it passes, waits in the rule queue for an operator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field

from crashcart.agent.events import Event
from crashcart.agent.models import Alternative, Diagnosis, LLMUsage, ModelVerdict
from crashcart.knowledge.records import Strict, rank_written
from crashcart.knowledge.rule_store import RuleProposal, RuleStore
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.parsers.models import FileScan
from crashcart.parsers.sources import Source

if TYPE_CHECKING:
    from crashcart.agent.llm_agent import LLMOutcome
    from crashcart.agent.llm_provider import ChatModel, LLMSettings

# Rules confidence from which the model may not overrule them: only a root-cause rule reaches it (a symptom's
# confidence tops out at 0.6), e.g. XID 79 -> drain the node at 0.93.
SURE_FROM = 0.8
# Rules+memory confidence under which the model is asked: every verdict it may overrule. On the corpus dev half,
# verdicts of 0.7-0.8 were wrong 6 times in 204, those from 0.8 2 in 390; a model that cannot tell changes nothing.
CONSULT_BELOW = SURE_FROM
CONTEXT_SHARE = 0.6  # of the token budget, for the context of the first call (retries need room)
TIMEOUT_S = 30.0  # the whole consultation: a model that has not answered by then is not waited for


class LLMOptions(Strict):
    """How a triage uses the model."""

    samples: int = Field(1, ge=1, le=9)
    token_budget: int = Field(20_000, ge=1000)
    timeout_s: float = Field(TIMEOUT_S, gt=0, le=3600)  # one deadline for all samples, retries and backoff
    always: bool = False
    redact_hosts: bool = False


def should_consult(diagnosis: Diagnosis, options: LLMOptions) -> bool:
    return options.always or diagnosis.failure_class is FailureClass.UNKNOWN or diagnosis.confidence < CONSULT_BELOW


def consult(
    scans: Sequence[FileScan],
    events: Sequence[Event],
    diagnosis: Diagnosis,
    *,
    settings: LLMSettings,
    options: LLMOptions,
    chat_model: ChatModel | None = None,
    rule_store: RuleStore | None = None,
    job: str = "",
    sources: Sequence[Source] = (),
) -> tuple[Diagnosis, LLMUsage, list[RuleProposal]]:
    """Ask the model about this job; return its diagnosis (or the rules' on failure), usage and proposals.
    With the job's `sources`, the model may read further in them through the log tools."""
    from crashcart.agent.llm_agent import llm_diagnose
    from crashcart.agent.llm_context import build_context
    from crashcart.agent.llm_provider import make_chat_model
    from crashcart.agent.llm_tools import JobLogs

    # A single read may not outlast the whole deadline either, so an abandoned call's thread ends with it.
    model = chat_model or make_chat_model(
        settings.model_copy(update={"timeout_s": min(settings.timeout_s, options.timeout_s)})
    )
    context = build_context(scans, events, diagnosis, int(options.token_budget * CONTEXT_SHARE), sources)
    logs = JobLogs.of(sources, scans, context) if sources else None
    outcome = llm_diagnose(
        model,
        settings,
        context,
        diagnosis,
        samples=options.samples,
        token_budget=options.token_budget,
        timeout_s=options.timeout_s,
        redact_hosts=options.redact_hosts,
        logs=logs,
    )
    chosen = _settle(diagnosis, outcome)
    proposals = []
    if outcome.suggestion is not None:
        from crashcart.agent.proposals import propose_from_suggestion  # lazy: the validators load on a suggestion

        proposal = propose_from_suggestion(outcome.suggestion, settings.model, job)
        if rule_store is not None and proposal.status == "pending":
            proposal = rule_store.propose(proposal)
        proposals.append(proposal)
    return chosen, outcome.usage, proposals


def _settle(rules: Diagnosis, outcome: LLMOutcome) -> Diagnosis:
    """The model's diagnosis, unless it contradicts a sure one of the rules or names no class where the rules name
    one (a model that cannot tell is no evidence against them): then theirs, the model's recorded."""
    model = outcome.diagnosis
    cannot_tell = model.failure_class is FailureClass.UNKNOWN and rules.failure_class is not FailureClass.UNKNOWN
    if not cannot_tell and not contradicts_sure_rules(rules, model):
        return model
    outcome.usage.disagreement = ModelVerdict.model_validate(
        outcome.diagnosis.model_dump(include=set(ModelVerdict.model_fields))
    )
    outcome.suggestion = None  # an overruled answer changes nothing: no rule is queued from it either
    return keep_rules(rules, outcome.diagnosis)


def contradicts_sure_rules(rules: Diagnosis, model: Diagnosis) -> bool:
    """The model's answer names another class, action or set of nodes than a sure root-cause verdict of the rules
    (a signature's, or one read from the failure's structure)."""
    if model.decided_by != "llm" or rules.decided_by not in ("rules", "structure") or rules.confidence < SURE_FROM:
        return False
    other_nodes = bool(rules.faulty_nodes) and set(hosts_of(model.faulty_nodes, rules)) != set(rules.faulty_nodes)
    return model.failure_class is not rules.failure_class or model.action is not rules.action or other_nodes


def hosts_of(places: list[str], rules: Diagnosis) -> list[str]:
    """Places with each rank the rules located ("rank 3", on node05) named by the rules' nodes instead: a model
    that names the rank the rules found names the same place."""
    out: list[str] = []
    for place in places:
        rank = rank_written(place)
        out += rules.faulty_nodes if rank is not None and rank in rules.faulty_ranks else [place]
    return list(dict.fromkeys(out))


def keep_rules(rules: Diagnosis, model: Diagnosis) -> Diagnosis:
    """The rules' verdict, with the model's answer first among the alternatives."""
    theirs = Alternative(failure_class=model.failure_class, score=model.confidence, source="llm")
    return rules.model_copy(update={"alternatives": [theirs, *rules.alternatives]})

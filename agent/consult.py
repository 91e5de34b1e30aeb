"""The opt-in LLM layer in a triage: when to ask the model, and what to do with the rule it suggests.

The model is consulted only when the rules and the memory are unsure (or when asked to always). A rule it
suggests is validated (compiles in the fast filter's engines, matches its evidence, matches no healthy log
line, is not trivially broad) and, if it passes, waits in the rule queue for an operator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field

from crashcart.agent.events import Event
from crashcart.agent.models import Diagnosis, LLMUsage
from crashcart.knowledge.records import Strict
from crashcart.knowledge.rule_store import RuleProposal, RuleStore
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.parsers.models import FileScan

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from crashcart.agent.llm_provider import LLMSettings

CONSULT_BELOW = 0.6  # rules+memory confidence under which the model is asked
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
    chat_model: BaseChatModel | None = None,
    rule_store: RuleStore | None = None,
    job: str = "",
) -> tuple[Diagnosis, LLMUsage, list[RuleProposal]]:
    """Ask the model about this job; return its diagnosis (or the rules' on failure), usage and proposals."""
    from crashcart.agent.llm_agent import llm_diagnose
    from crashcart.agent.llm_context import build_context
    from crashcart.agent.llm_provider import make_chat_model

    # A single read may not outlast the whole deadline either, so an abandoned call's thread ends with it.
    model = chat_model or make_chat_model(
        settings.model_copy(update={"timeout_s": min(settings.timeout_s, options.timeout_s)})
    )
    context = build_context(scans, events, diagnosis, int(options.token_budget * CONTEXT_SHARE))
    outcome = llm_diagnose(
        model,
        settings,
        context,
        diagnosis,
        samples=options.samples,
        token_budget=options.token_budget,
        timeout_s=options.timeout_s,
        redact_hosts=options.redact_hosts,
    )
    proposals = []
    if outcome.suggestion is not None:
        from crashcart.agent.proposals import propose_from_suggestion  # lazy: the validators load on a suggestion

        proposal = propose_from_suggestion(outcome.suggestion, settings.model, job)
        if rule_store is not None and proposal.status == "pending":
            proposal = rule_store.propose(proposal)
        proposals.append(proposal)
    return outcome.diagnosis, outcome.usage, proposals

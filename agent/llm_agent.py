"""The LLM diagnosis agent: one bounded loop, structured answers, self-consistency, a deterministic fallback.

The model sees a redacted context and, where its provider supports tool calling, may call the log tools
(agent/llm_tools.py) before it answers; each reply is parsed into LLMAnswer and checked against the lines it
was shown, by the context or a tool. An invalid reply is retried with the error; a call that fails for good
(rate limits, timeouts) ends that sample. n samples vote on the class and their agreement is the confidence.
With no valid answer, the rules' diagnosis stands. The token budget and one deadline cap everything the
diagnosis may spend: tokens, and the time of every sample, retry, tool call and backoff sleep.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from crashcart import prompts
from crashcart.agent.consult import hosts_of
from crashcart.agent.llm_answer import MAX_REPLY_CHARS, AnswerError, LLMAnswer, answer_schema, check_size, parse_answer
from crashcart.agent.llm_context import Context
from crashcart.agent.llm_provider import (
    ChatModel,
    Deadline,
    LLMCallError,
    LLMSettings,
    cost_usd,
    estimate_tokens,
    invoke_with_retry,
)
from crashcart.agent.llm_tools import MAX_TOOL_CALLS, JobLogs
from crashcart.agent.models import Diagnosis, LLMUsage
from crashcart.agent.outbound import outbound
from crashcart.agent.redact import Redactor
from crashcart.knowledge.records import Evidence, Strict
from crashcart.knowledge.runbooks import mitigation_steps

VALIDATION_RETRIES = 2  # re-asks per sample after an invalid answer


class LLMOutcome(Strict):
    """The agent's diagnosis, what it cost, and the rule it suggested (not yet validated)."""

    diagnosis: Diagnosis
    usage: LLMUsage
    suggestion: dict | None = None  # RuleSuggestion fields plus the cited example lines


class _Budget:
    """What the diagnosis may still spend: tokens, and time until its deadline."""

    def __init__(self, tokens: int, deadline: Deadline) -> None:
        self.left = tokens
        self.deadline = deadline

    def allows(self, messages: Sequence[BaseMessage], max_out: int) -> bool:
        return estimate_tokens("".join(str(m.content) for m in messages)) + max_out <= self.left


def _messages(context: Context, redactor: Redactor) -> list[BaseMessage]:
    system = prompts.render("system", schema=json.dumps(answer_schema(), separators=(",", ":")))
    human = prompts.render("diagnose", **outbound(context.sections, redactor))
    return [SystemMessage(system), HumanMessage(human)]


def _account(usage: LLMUsage, reply: AIMessage, sent: Sequence[BaseMessage], budget: _Budget) -> None:
    meta = getattr(reply, "usage_metadata", None) or {}
    tokens_in = int(meta.get("input_tokens") or estimate_tokens("".join(str(m.content) for m in sent)))
    tokens_out = int(meta.get("output_tokens") or estimate_tokens(str(reply.content)))
    usage.input_tokens += tokens_in
    usage.output_tokens += tokens_out
    budget.left -= tokens_in + tokens_out


def _count_attempt(usage: LLMUsage) -> None:
    usage.calls += 1  # every HTTP attempt, retried or failed, is a call


def _with_tools(model: ChatModel, logs: JobLogs | None) -> ChatModel:
    """The model with the log tools bound, or as it is where its provider has no tool calling."""
    bind = getattr(model, "bind_tools", None)
    if logs is None or bind is None:
        return model
    try:
        return bind(logs.schemas(), strict=True)
    except NotImplementedError:
        return model


def _run_tool(logs: JobLogs, call: dict[str, Any]) -> str:
    tool = {t.__name__: t for t in logs.tools()}.get(str(call.get("name")))
    if tool is None:
        return f"no tool named {call.get('name')!r}"
    try:
        return tool(**(call.get("args") or {}))
    except (TypeError, ValueError) as exc:  # arguments of the wrong names or types
        return f"invalid arguments: {exc}"


def _ask(
    model: ChatModel,
    settings: LLMSettings,
    messages: list[BaseMessage],
    logs: JobLogs | None,
    redactor: Redactor,
    usage: LLMUsage,
    budget: _Budget,
) -> AIMessage | None:
    """The model's reply once it stops calling tools (each call's result joins `messages`); None when the budget
    ends first. LLMCallError propagates."""
    while True:
        if not budget.allows(messages, settings.max_output_tokens):
            usage.budget_exhausted = True
            return None
        reply = invoke_with_retry(
            model, messages, settings, deadline=budget.deadline, on_attempt=lambda: _count_attempt(usage)
        )
        _account(usage, reply, messages, budget)
        calls = list(getattr(reply, "tool_calls", None) or [])
        if not calls or logs is None:
            return reply
        messages.append(reply)
        for call in calls:
            if usage.tool_calls >= MAX_TOOL_CALLS:
                result = f"tool call limit ({MAX_TOOL_CALLS}) reached: answer with the JSON object now"
            else:
                usage.tool_calls += 1
                result = _run_tool(logs, call)
            messages.append(ToolMessage(outbound(result, redactor), tool_call_id=str(call.get("id") or "")))


def _one_sample(
    model: ChatModel,
    settings: LLMSettings,
    base: list[BaseMessage],
    context: Context,
    redactor: Redactor,
    usage: LLMUsage,
    budget: _Budget,
    logs: JobLogs | None = None,
) -> LLMAnswer | None:
    messages = list(base)
    for _ in range(VALIDATION_RETRIES + 1):
        try:
            reply = _ask(model, settings, messages, logs, redactor, usage, budget)
            if reply is None:
                return None
        except LLMCallError as exc:
            usage.errors.append(f"{exc.kind}: {exc}")
            usage.timed_out = budget.deadline.passed
            usage.input_tokens += exc.tokens[0]  # a failed call may still have used tokens
            usage.output_tokens += exc.tokens[1]
            budget.left -= sum(exc.tokens)
            return None
        except Exception as exc:  # a provider's own failure must not take the diagnosis down
            usage.errors.append(f"error: {type(exc).__name__}: {str(exc)[:300]}")
            return None
        text = str(reply.content)
        try:
            check_size(text)  # before restoring: a server may ignore max_tokens and send megabytes
            return parse_answer(redactor.restore(text), set(context.citeable), context.nodes | context.ranks)
        except AnswerError as exc:
            usage.errors.append(f"invalid answer: {exc}")
            messages += [
                reply if len(text) <= MAX_REPLY_CHARS else AIMessage(text[:MAX_REPLY_CHARS]),
                HumanMessage(
                    outbound(f"That answer is invalid: {exc}. Reply with the corrected JSON object only.", redactor)
                ),
            ]  # the error quotes the answer with its hosts restored: they are pseudonymised again
    return None


def llm_diagnose(
    model: ChatModel,
    settings: LLMSettings,
    context: Context,
    rules: Diagnosis,
    *,
    samples: int = 1,
    token_budget: int = 20_000,
    timeout_s: float = 30.0,
    redact_hosts: bool = False,
    logs: JobLogs | None = None,
) -> LLMOutcome:
    """Ask the model `samples` times within `token_budget` and `timeout_s`; vote; fall back to `rules` when
    nothing valid came in time.

    Secrets are always redacted from what is sent; with redact_hosts, node names and IPs are pseudonymised
    too and mapped back in the answer.
    """
    started = time.perf_counter()
    redactor = Redactor(hosts=True, ips=True, known_hosts=sorted(context.nodes)) if redact_hosts else Redactor()
    usage = LLMUsage(model=settings.model, samples=samples)
    budget = _Budget(token_budget, Deadline(timeout_s))
    base = _messages(context, redactor)
    bound = _with_tools(model, logs)
    answers = []
    for _ in range(samples):
        answer = _one_sample(bound, settings, base, context, redactor, usage, budget, logs)
        if answer is not None:
            answers.append(answer)
        if usage.budget_exhausted or usage.timed_out:
            break
    usage.redactions = dict(Counter(context.redactor.count) + Counter(redactor.count))
    usage.seconds = round(time.perf_counter() - started, 3)
    usage.cost_usd = cost_usd(settings, usage.input_tokens, usage.output_tokens)
    usage.valid_answers = len(answers)
    if not answers:
        usage.fallback = True
        return LLMOutcome(diagnosis=rules, usage=usage)
    votes = Counter(a.failure_class for a in answers)
    winner, count = votes.most_common(1)[0]
    usage.agreement = round(count / len(answers), 3)
    chosen = next(a for a in answers if a.failure_class is winner)
    suggestion = None
    if chosen.proposed_rule is not None:
        examples = [context.citeable[(c.file, c.line)] for c in chosen.evidence]
        suggestion = chosen.proposed_rule.model_dump(mode="json") | {"examples": examples}
    return LLMOutcome(
        diagnosis=_as_diagnosis(chosen, usage.agreement, context, rules), usage=usage, suggestion=suggestion
    )


def _places(answer: LLMAnswer, rules: Diagnosis) -> list[str]:
    """The model's faulty places; agreeing with the rules' class, its ranks the rules located are the rules' nodes,
    and naming none it keeps the rules' nodes."""
    if answer.failure_class is not rules.failure_class:
        return answer.faulty_nodes
    return hosts_of(answer.faulty_nodes, rules) or rules.faulty_nodes


def _as_diagnosis(answer: LLMAnswer, agreement: float, context: Context, rules: Diagnosis) -> Diagnosis:
    evidence = [Evidence(file=c.file, line=c.line, text=context.citeable[(c.file, c.line)]) for c in answer.evidence]
    first_sentence = answer.rationale.strip().split(". ")[0][:300] or "the model gave no reason"
    return Diagnosis(
        failure_class=answer.failure_class,
        action=answer.action,
        confidence=round(0.5 + 0.45 * agreement, 2),
        summary=f"{answer.failure_class.value} (LLM): {first_sentence}",
        # the model agreeing on the class without naming a node keeps the nodes the rules located
        faulty_nodes=_places(answer, rules),
        faulty_ranks=rules.faulty_ranks if answer.failure_class is rules.failure_class else [],
        stage=answer.stage or rules.stage,
        iteration=rules.iteration,
        evidence=evidence,
        mitigation=answer.mitigation or mitigation_steps(answer.failure_class, answer.faulty_nodes),
        decided_by="llm",
        alternatives=rules.alternatives,
        similar=rules.similar,
        novel=rules.novel,
    )

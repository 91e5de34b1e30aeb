"""How much incident memory adds: rules alone, rules + memory (leave-one-out), retrieval alone, top-k recall,
and with `recurrence` the cases recognised again inside generated jobs (evals/recurrence.py).

Each case is triaged once. Its incident (fingerprint + labeled class) goes into an in-memory store; then
every case is diagnosed again with all the *other* cases in memory (leave-one-out), and with retrieval
only (fingerprints without rule ids, rules switched off: the neighbours' vote or `unknown`). The nearest
neighbours' similarities calibrate both thresholds of agent/memory.py: novelty and the floor of "seen before".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from crashcart.agent.memory import CLOSE_SIMILARITY, NOVELTY_THRESHOLD, recall, vote, with_memory
from crashcart.agent.models import Diagnosis, SimilarIncident
from crashcart.agent.report import Report
from crashcart.evals.dataset import LabeledCase, load_evalset
from crashcart.evals.metrics import EvalReport, compute_metrics
from crashcart.evals.recurrence import RecurrenceReport, calibrate_close, evaluate_recurrence
from crashcart.evals.runner import case_result
from crashcart.knowledge.incident_store import MemoryIncidentStore
from crashcart.knowledge.incidents import Incident
from crashcart.knowledge.records import Strict
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, FailureClass

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from crashcart.agent.consult import LLMOptions
    from crashcart.agent.llm_provider import LLMSettings

TriageFn = Callable[[list[str]], Report]


class LLMTotals(Strict):
    """What the model cost over the whole set."""

    model: str
    consulted: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    cost_usd: float | None = None
    fallbacks: int = 0
    proposals: int = 0


class MemoryEvalReport(Strict):
    """The three modes side by side, plus how often the right class is among the neighbours."""

    cases: int
    k: int
    threshold: float
    rules_accuracy: float
    memory_accuracy: float
    retrieval_accuracy: float
    top1_recall: float
    topk_recall: float
    novel_cases: int
    memory_decided: int
    calibrated_threshold: float  # the split of top-1 similarities that best separates same-class neighbours
    close_similarity: float  # the floor from which a neighbour may decide, as used
    calibrated_close: float  # the lowest floor at which the nearest neighbours are 95% of the right class
    rules: EvalReport
    rules_memory_loo: EvalReport
    retrieval_only: EvalReport
    rules_memory_llm: EvalReport | None = None  # with --llm: the model consulted where rules+memory are unsure
    llm_usage: LLMTotals | None = None
    recurrence: RecurrenceReport | None = None


def _strip_rules(incident: Incident) -> Incident:
    bare = incident.fingerprint.model_copy(update={"rule_ids": [], "classes": []})
    return incident.model_copy(update={"fingerprint": bare})


def _neighbours(
    store: MemoryIncidentStore, incident: Incident, k: int, threshold: float, close: float
) -> list[SimilarIncident]:
    return [s for s in recall(store, incident.fingerprint, k + 1, threshold, close) if s.id != incident.id][:k]


def _retrieval_only(neighbours: list[SimilarIncident], threshold: float) -> Diagnosis:
    decided = vote(neighbours, threshold)
    cls = decided[0] if decided else FailureClass.UNKNOWN
    action = decided[1] if decided else DEFAULT_ACTION[cls]
    return Diagnosis(
        failure_class=cls,
        action=action,
        confidence=decided[2] if decided else 0.0,
        summary="retrieval only",
        decided_by="memory" if decided else "none",
        similar=neighbours,
    )


def evaluate_memory(
    root: Path,
    triage_fn: TriageFn | None = None,
    k: int = 3,
    threshold: float = NOVELTY_THRESHOLD,
    llm: LLMSettings | None = None,
    chat_model: BaseChatModel | None = None,
    llm_options: LLMOptions | None = None,
    close: float = CLOSE_SIMILARITY,
    recurrence: bool = False,
    nodes: int = 4,
    mb_per_node: float = 3.0,
) -> MemoryEvalReport:
    """Leave-one-out over the set at root, in the three modes (four with a model); with `recurrence`, every case
    stored and recognised again inside a generated job of `nodes` x `mb_per_node` MB."""
    from crashcart.agent.cases import incident_from_report  # lazy: loads the pipeline

    if triage_fn is None:
        from crashcart.api import triage

        triage_fn = triage
    cases: list[LabeledCase] = load_evalset(Path(root))
    runs: list[tuple[LabeledCase, Report, float]] = []
    for case in cases:
        start = time.perf_counter()
        runs.append((case, triage_fn([str(case.resolve(Path(root)))]), time.perf_counter() - start))
    incidents = [
        incident_from_report(r, failure_class=c.failure_class, action=c.action, job=c.id, source="evalset")
        for c, r, _ in runs
    ]
    full, bare = MemoryIncidentStore(), MemoryIncidentStore()
    incidents = full.add_many(incidents)
    bare.add_many([_strip_rules(i) for i in incidents])
    rules, memory, retrieval = [], [], []
    top1 = topk = novel = decided = 0
    nearest: list[tuple[float, bool]] = []
    for (case, report, seconds), incident in zip(runs, incidents, strict=True):
        near = _neighbours(full, incident, k, threshold, close)
        with_mem = with_memory(report.diagnosis, near, threshold, close)
        rules.append(case_result(case, report.diagnosis, seconds))
        memory.append(case_result(case, with_mem, seconds))
        retrieval.append(
            case_result(case, _retrieval_only(_neighbours(bare, incident, k, threshold, close), threshold), seconds)
        )
        top1 += bool(near) and near[0].failure_class is case.failure_class
        if near:
            nearest.append((near[0].similarity, near[0].failure_class is case.failure_class))
        topk += any(n.failure_class is case.failure_class for n in near)
        novel += bool(with_mem.novel)
        decided += with_mem.decided_by == "memory"
    r, m, o = compute_metrics(rules), compute_metrics(memory), compute_metrics(retrieval)
    n = max(1, len(cases))
    with_llm, totals = None, None
    if llm is not None or chat_model is not None:
        with_llm, totals = _llm_mode(Path(root), runs, incidents, k, threshold, llm, chat_model, llm_options)
    again = None
    if recurrence:
        again = _recurrence(Path(root), cases, incidents, full, k, threshold, close, nodes, mb_per_node)
    return MemoryEvalReport(
        recurrence=again,
        close_similarity=close,
        calibrated_close=calibrate_close(nearest + (again.nearest() if again else [])),
        rules_memory_llm=with_llm,
        llm_usage=totals,
        cases=len(cases),
        k=k,
        threshold=threshold,
        rules_accuracy=r.accuracy,
        memory_accuracy=m.accuracy,
        retrieval_accuracy=o.accuracy,
        top1_recall=top1 / n,
        topk_recall=topk / n,
        novel_cases=novel,
        memory_decided=decided,
        calibrated_threshold=calibrate_threshold(nearest),
        rules=r,
        rules_memory_loo=m,
        retrieval_only=o,
    )


def _recurrence(
    root: Path,
    cases: list[LabeledCase],
    incidents: list[Incident],
    store: MemoryIncidentStore,
    k: int,
    threshold: float,
    close: float,
    nodes: int,
    mb_per_node: float,
) -> RecurrenceReport:
    from crashcart.api import triage

    def alone(logs: Path) -> Diagnosis:
        return triage([str(logs)]).diagnosis

    def remembered(logs: Path) -> Diagnosis:
        report = triage([str(logs)])
        return with_memory(report.diagnosis, recall(store, report.fingerprint, k, threshold, close), threshold, close)

    return evaluate_recurrence(root, cases, [i.id for i in incidents], alone, remembered, nodes, mb_per_node)


def _llm_mode(
    root: Path,
    runs: list,
    incidents: list[Incident],
    k: int,
    threshold: float,
    llm: LLMSettings | None,
    chat_model: BaseChatModel | None,
    options: LLMOptions | None,
) -> tuple[EvalReport, LLMTotals]:
    """Each case triaged again with the others in memory and the model consulted where they are unsure."""
    from crashcart.api import triage

    totals = LLMTotals(model=llm.model if llm else "custom:chat-model")
    results = []
    for (case, _, _), own in zip(runs, incidents, strict=True):
        loo = MemoryIncidentStore()
        loo.add_many([i for i in incidents if i.id != own.id])
        start = time.perf_counter()
        report = triage(
            [str(case.resolve(root))],
            memory=loo,
            k=k,
            novelty=threshold,
            llm=llm,
            chat_model=chat_model,
            llm_options=options,
        )
        results.append(case_result(case, report.diagnosis, time.perf_counter() - start))
        if report.llm is not None:
            u = report.llm
            totals.consulted += 1
            totals.calls += u.calls
            totals.input_tokens += u.input_tokens
            totals.output_tokens += u.output_tokens
            totals.seconds = round(totals.seconds + u.seconds, 3)
            totals.fallbacks += u.fallback
            totals.proposals += len(report.proposals)
            if u.cost_usd is not None:
                totals.cost_usd = round((totals.cost_usd or 0.0) + u.cost_usd, 6)
    return compute_metrics(results), totals


def calibrate_threshold(nearest: list[tuple[float, bool]]) -> float:
    """The novelty threshold that best splits top-1 neighbours: same class above it, other classes below.

    Youden's J: the share of same-class neighbours kept above plus the share of other-class ones put below,
    over thresholds 0.05..0.95 (ties: the lower threshold). 0.0 when one kind is missing.
    """
    same = sum(ok for _, ok in nearest)
    other = len(nearest) - same
    if not same or not other:
        return 0.0
    best, best_score = 0.0, -1.0
    for step in range(5, 96, 5):
        t = step / 100
        kept = sum(ok for sim, ok in nearest if sim >= t) / same
        rejected = sum(not ok for sim, ok in nearest if sim < t) / other
        if kept + rejected > best_score + 1e-9:
            best, best_score = t, kept + rejected
    return best

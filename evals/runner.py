"""Running triage over an evaluation set and scoring it (`crashcart eval DIR`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from crashcart.agent.models import Diagnosis
from crashcart.agent.report import Report
from crashcart.evals.dataset import LabeledCase, load_evalset
from crashcart.evals.metrics import CaseResult, EvalReport, compute_metrics
from crashcart.knowledge.errors import CrashcartError

TriageFn = Callable[[list[str]], Report]


def evaluate(
    root: Path,
    triage_fn: TriageFn | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
) -> EvalReport:
    """Triage every case of the set at `root` and score the diagnoses against the labels.

    A `CrashcartError` on one case (an unreadable log) is recorded on that case and the run goes on, so
    one bad case cannot hide the figures of the rest; any other exception is a bug and propagates.
    `on_result` is called after each case, for a progress display.
    """
    root = Path(root)
    cases = load_evalset(root)
    if triage_fn is None:
        from crashcart.api import triage  # lazy: the whole pipeline loads only when needed

        triage_fn = triage
    results: list[CaseResult] = []
    for case in cases:
        result = run_case(case, root, triage_fn)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return compute_metrics(results)


def _expected(case: LabeledCase) -> dict:
    return {
        "id": case.id,
        "expected_class": case.failure_class,
        "expected_action": case.action,
        "expected_evidence": case.evidence,
        "expected_faulty_nodes": case.faulty_nodes,
    }


def case_result(case: LabeledCase, diagnosis: Diagnosis, seconds: float) -> CaseResult:
    """A case's label and a diagnosis of it, side by side."""
    return CaseResult(
        **_expected(case),
        predicted_class=diagnosis.failure_class,
        predicted_action=diagnosis.action,
        predicted_evidence=[e.text for e in diagnosis.evidence],
        predicted_faulty_nodes=diagnosis.faulty_nodes,
        predicted_faulty_ranks=diagnosis.faulty_ranks,
        predicted_confidence=diagnosis.confidence,
        decided_by=diagnosis.decided_by,
        seconds=seconds,
    )


def run_case(case: LabeledCase, root: Path, triage_fn: TriageFn) -> CaseResult:
    """Triage one case, timed; its label and the prediction side by side."""
    start = time.perf_counter()
    try:
        report = triage_fn([str(case.resolve(root))])
    except CrashcartError as exc:
        return CaseResult(**_expected(case), seconds=time.perf_counter() - start, error=f"{type(exc).__name__}: {exc}")
    return case_result(case, report.diagnosis, time.perf_counter() - start)

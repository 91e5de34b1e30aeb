"""Scoring a run: pure functions from per-case results to one `EvalReport`.

Conventions, chosen so a figure never flatters the tool:
- a case whose triage failed (`error` set) counts as wrong for class and action accuracy, as a miss for
  evidence and faulty nodes, and as a false negative of its expected class; in the confusion matrix its
  predicted column is `ERROR_COLUMN`;
- precision, recall and F1 are 0 where their denominator is 0 (no prediction / no support);
- macro-F1 averages F1 over every class present in the labels or the predictions;
- the evidence and faulty-node hit rates are over the cases that carry such labels, and `None` when none do
  (0.0 would read as "all missed").
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from crashcart.knowledge.records import Strict, rank_written
from crashcart.knowledge.taxonomy import Action, FailureClass

ERROR_COLUMN = "error"


class CaseResult(Strict):
    """What the label says and what triage said for one case."""

    id: str
    expected_class: FailureClass
    expected_action: Action
    expected_evidence: list[str] = []
    expected_faulty_nodes: list[str] = []
    predicted_class: FailureClass | None = None  # None when triage failed
    predicted_action: Action | None = None
    predicted_evidence: list[str] = []
    predicted_faulty_nodes: list[str] = []
    predicted_faulty_ranks: list[int] = []
    predicted_confidence: float | None = None
    decided_by: str | None = None  # which path decided: rules, structure, memory, llm, none
    seconds: float = 0.0
    error: str | None = None  # one line: the CrashcartError that stopped triage

    @property
    def correct(self) -> bool:
        """The class matches (the headline figure)."""
        return self.error is None and self.predicted_class == self.expected_class


class ClassMetrics(Strict):
    """Precision, recall and F1 of one class; support is how many cases carry it as their label."""

    precision: float
    recall: float
    f1: float
    support: int


class CalibrationRow(Strict):
    """How often verdicts of one deciding path and confidence band were wrong: where the model should be asked."""

    decided_by: str
    band: str  # "0.7-0.8": confidence from 0.7 up to 0.8
    cases: int
    wrong: int
    error_rate: float


class EvalReport(Strict):
    """The result of `crashcart eval`: headline scalars at the top level, the details below them."""

    cases: int
    errors: int
    accuracy: float
    macro_f1: float
    action_accuracy: float
    evidence_hit_rate: float | None
    evidence_cases: int
    faulty_node_hit_rate: float | None
    faulty_node_cases: int
    seconds_per_case: float  # mean
    seconds_p50: float
    seconds_max: float
    per_class: dict[str, ClassMetrics]
    confusion: dict[str, dict[str, int]]  # expected class -> predicted class (or ERROR_COLUMN) -> count
    calibration: list[CalibrationRow] = []
    results: list[CaseResult]


def normalise_ws(text: str) -> str:
    """Collapse runs of whitespace, so a label copied from a wrapped or re-indented line still matches."""
    return " ".join(text.split())


def evidence_hit(result: CaseResult) -> bool:
    """Any predicted evidence text contains any labeled evidence string (whitespace-normalised)."""
    wanted = [normalise_ws(e) for e in result.expected_evidence if e.strip()]
    got = [normalise_ws(t) for t in result.predicted_evidence]
    return any(w in g for w in wanted for g in got)


def node_matches(label: str, nodes: list[str], ranks: list[int]) -> bool:
    """A labeled faulty node is found by a prediction: same hostname, or same rank however it is written."""
    key = label.strip().casefold()
    if any(key == n.strip().casefold() for n in nodes):
        return True
    number = rank_written(label)
    if number is None:
        return False
    return number in ranks or any(rank_written(n) == number for n in nodes)


def faulty_node_hit(result: CaseResult) -> bool:
    """Any labeled faulty node is among the predicted nodes or ranks."""
    return any(
        node_matches(label, result.predicted_faulty_nodes, result.predicted_faulty_ranks)
        for label in result.expected_faulty_nodes
    )


def confusion_matrix(results: list[CaseResult]) -> dict[str, dict[str, int]]:
    """Counts by expected class then predicted class; only non-zero cells are stored."""
    matrix: dict[str, dict[str, int]] = {}
    for r in results:
        predicted = r.predicted_class.value if r.error is None and r.predicted_class else ERROR_COLUMN
        row = matrix.setdefault(r.expected_class.value, {})
        row[predicted] = row.get(predicted, 0) + 1
    return matrix


def per_class_metrics(results: list[CaseResult]) -> dict[str, ClassMetrics]:
    """P/R/F1/support for every class present in the labels or the predictions, in taxonomy order."""
    present = {r.expected_class for r in results}
    present |= {r.predicted_class for r in results if r.error is None and r.predicted_class is not None}
    out: dict[str, ClassMetrics] = {}
    for cls in FailureClass:
        if cls not in present:
            continue
        tp = sum(1 for r in results if r.correct and r.expected_class == cls)
        predicted = sum(1 for r in results if r.error is None and r.predicted_class == cls)
        support = sum(1 for r in results if r.expected_class == cls)
        precision = _ratio(tp, predicted)
        recall = _ratio(tp, support)
        f1 = _ratio(2 * precision * recall, precision + recall)
        out[cls.value] = ClassMetrics(precision=precision, recall=recall, f1=f1, support=support)
    return out


def compute_metrics(results: list[CaseResult]) -> EvalReport:
    """Every figure of the report from the per-case results (an empty list gives zeros, not an error)."""
    n = len(results)
    per_class = per_class_metrics(results)
    with_evidence = [r for r in results if any(e.strip() for e in r.expected_evidence)]
    with_nodes = [r for r in results if r.expected_faulty_nodes]
    seconds = [r.seconds for r in results]
    return EvalReport(
        cases=n,
        errors=sum(1 for r in results if r.error is not None),
        accuracy=_ratio(sum(1 for r in results if r.correct), n),
        macro_f1=_ratio(sum(m.f1 for m in per_class.values()), len(per_class)),
        action_accuracy=_ratio(
            sum(1 for r in results if r.error is None and r.predicted_action == r.expected_action), n
        ),
        evidence_hit_rate=_rate(with_evidence, evidence_hit),
        evidence_cases=len(with_evidence),
        faulty_node_hit_rate=_rate(with_nodes, faulty_node_hit),
        faulty_node_cases=len(with_nodes),
        seconds_per_case=statistics.fmean(seconds) if seconds else 0.0,
        seconds_p50=statistics.median(seconds) if seconds else 0.0,
        seconds_max=max(seconds, default=0.0),
        per_class=per_class,
        confusion=confusion_matrix(results),
        calibration=calibration(results),
        results=results,
    )


BANDS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01)


def calibration(results: list[CaseResult]) -> list[CalibrationRow]:
    """Error rates by deciding path and confidence band (cases that ran and report a confidence)."""
    cells: dict[tuple[str, int], list[int]] = {}
    for r in results:
        if r.error is not None or r.predicted_confidence is None:
            continue
        band = next(i for i in range(len(BANDS) - 1) if r.predicted_confidence < BANDS[i + 1])
        cell = cells.setdefault((r.decided_by or "none", band), [0, 0])
        cell[0] += 1
        cell[1] += not r.correct
    return [
        CalibrationRow(
            decided_by=path,
            band=f"{BANDS[band]:.1f}-{min(BANDS[band + 1], 1.0):.1f}",
            cases=n,
            wrong=wrong,
            error_rate=round(wrong / n, 3),
        )
        for (path, band), (n, wrong) in sorted(cells.items())
    ]


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def _rate(results: list[CaseResult], hit: Callable[[CaseResult], bool]) -> float | None:
    """Share of `results` for which `hit` holds; errored cases are misses. None when there are none."""
    if not results:
        return None
    return sum(1 for r in results if r.error is None and hit(r)) / len(results)

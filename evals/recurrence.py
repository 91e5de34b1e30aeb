"""Does memory recognise a failure it has seen when it comes back inside a big job? (`eval --memory --recurrence`)

Every case of the set is stored as a confirmed incident. Each case's log is then written verbatim on one rank of
a generated multi-node job (ordinary training output on every node, the usual timeouts on the others: see
evals/generator.py) and that job is triaged against the memory: recurrence recall is the share diagnosed with
the stored class. Generated healthy jobs are triaged against the same memory too, and must get no class.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from crashcart.agent.models import Diagnosis
from crashcart.evals.dataset import LabeledCase
from crashcart.evals.generator import LOGS, JobSpec, generate_job
from crashcart.evals.scenarios import scenario_from_case
from crashcart.knowledge.records import Strict
from crashcart.knowledge.taxonomy import FailureClass

# Triage of one job folder against the memory the caller holds.
TriageJob = Callable[[Path], Diagnosis]


class Recurrence(Strict):
    """One case buried in a generated job, triaged against a memory that holds it."""

    id: str
    expected_class: FailureClass
    rules_class: FailureClass
    memory_class: FailureClass
    own_similarity: float | None  # of the case's own stored incident, when it was among the neighbours
    best_other: float | None  # the best similarity of any other incident
    nearest: tuple[float, FailureClass] | None  # the nearest neighbour's similarity and class


class RecurrenceReport(Strict):
    """Recurrence recall next to the rules alone on the same buried jobs, and healthy jobs' false alarms."""

    cases: int
    nodes: int
    mb_per_node: float
    rules_accuracy: float
    recurrence_recall: float
    own_first: float  # share of cases whose own incident was the nearest neighbour
    healthy_jobs: int
    healthy_false_alarms: int
    results: list[Recurrence]

    def nearest(self) -> list[tuple[float, bool]]:
        """(nearest neighbour's similarity, whether its class is the case's), for calibration."""
        return [(r.nearest[0], r.nearest[1] is r.expected_class) for r in self.results if r.nearest is not None]


def bury(case: LabeledCase, root: Path, out: Path, index: int, nodes: int, mb_per_node: float) -> Path:
    """The case's log verbatim on one rank of a generated job (the node and seed vary with index): its logs."""
    scenario = scenario_from_case(case.resolve(root), case.failure_class)
    spec = JobSpec(nodes=nodes, total_mb=nodes * mb_per_node, scenario=scenario, fault_node=index % nodes, seed=index)
    generate_job(out, spec, workers=1)
    return out / LOGS


def healthy_job(out: Path, index: int, nodes: int, mb_per_node: float) -> Path:
    generate_job(out, JobSpec(nodes=nodes, total_mb=nodes * mb_per_node, scenario="none", seed=1000 + index), workers=1)
    return out / LOGS


def evaluate_recurrence(
    root: Path,
    cases: Sequence[LabeledCase],
    own_ids: Sequence[str],
    rules_only: TriageJob,
    with_memory: TriageJob,
    nodes: int = 4,
    mb_per_node: float = 3.0,
    healthy_jobs: int = 2,
) -> RecurrenceReport:
    """Bury every case (own_ids: its stored incident's id), triage with and without memory; then healthy jobs."""
    results: list[Recurrence] = []
    for i, (case, own) in enumerate(zip(cases, own_ids, strict=True)):
        with tempfile.TemporaryDirectory(prefix="crashcart-recurrence-") as tmp:
            logs = bury(case, Path(root), Path(tmp), i, nodes, mb_per_node)
            alone, remembered = rules_only(logs), with_memory(logs)
        mine = [s.similarity for s in remembered.similar if s.id == own]
        others = [s.similarity for s in remembered.similar if s.id != own]
        results.append(
            Recurrence(
                id=case.id,
                expected_class=case.failure_class,
                rules_class=alone.failure_class,
                memory_class=remembered.failure_class,
                own_similarity=mine[0] if mine else None,
                best_other=others[0] if others else None,
                nearest=(remembered.similar[0].similarity, remembered.similar[0].failure_class)
                if remembered.similar
                else None,
            )
        )
    alarms = 0
    for i in range(healthy_jobs):
        with tempfile.TemporaryDirectory(prefix="crashcart-healthy-") as tmp:
            verdict = with_memory(healthy_job(Path(tmp), i, nodes, mb_per_node))
        alarms += verdict.failure_class is not FailureClass.UNKNOWN
    n = max(1, len(results))
    return RecurrenceReport(
        cases=len(results),
        nodes=nodes,
        mb_per_node=mb_per_node,
        rules_accuracy=sum(r.rules_class is r.expected_class for r in results) / n,
        recurrence_recall=sum(r.memory_class is r.expected_class for r in results) / n,
        own_first=sum(r.own_similarity is not None and r.own_similarity >= (r.best_other or 0.0) for r in results) / n,
        healthy_jobs=healthy_jobs,
        healthy_false_alarms=alarms,
        results=results,
    )


def calibrate_close(pairs: Sequence[tuple[float, bool]], precision: float = 0.95) -> float:
    """The lowest similarity from which nearest neighbours are of the right class at least `precision` of the
    time (steps of 0.05; 1.0 when no such step): the floor from which memory may decide.

    pairs: (similarity of a case's nearest stored neighbour, whether its class is the case's), from
    leave-one-out (other incidents) and recurrence (the case's own incident among the others).
    """
    for step in range(5, 100, 5):
        t = step / 100
        above = [ok for sim, ok in pairs if sim >= t]
        if above and sum(above) / len(above) >= precision:
            return t
    return 1.0

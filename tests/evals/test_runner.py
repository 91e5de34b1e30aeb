"""evaluate(): a fake triage built from real Report/Diagnosis objects, per-case errors, the default triage."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from crashcart.agent.models import Diagnosis
from crashcart.agent.report import Report, ScanStats
from crashcart.evals.metrics import ERROR_COLUMN, CaseResult
from crashcart.evals.runner import evaluate
from crashcart.knowledge.errors import EvalSetError, InputError, KnowledgeError
from crashcart.knowledge.records import Evidence
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, FailureClass

LABELS = [
    {
        "id": "ecc",
        "path": "cases/ecc.log",
        "failure_class": "gpu_hardware",
        "action": "drain_node_and_retry",
        "evidence": ["uncorrectable ECC error"],
        "faulty_nodes": ["rank12"],
    },
    {
        "id": "ib",
        "path": "cases/ib",
        "failure_class": "network",
        "action": "drain_node_and_retry",
        "evidence": ["transport retry counter exceeded"],
        "faulty_nodes": ["node-b"],
    },
    {
        "id": "oom",
        "path": "cases/oom.log",
        "failure_class": "gpu_oom",
        "action": "fix_job",
        "evidence": ["CUDA out of memory"],
        "faulty_nodes": [],
    },
    {
        "id": "empty",
        "path": "cases/empty.log",
        "failure_class": "storage",
        "action": "escalate_infra",
        "evidence": [],
        "faulty_nodes": [],
    },
]

# what the fake triage says per case file/folder name: class, evidence text, nodes, ranks
PREDICTIONS: dict[str, tuple[FailureClass, str, list[str], list[int]]] = {
    "ecc.log": (
        FailureClass.GPU_HARDWARE,
        "[rank12] CUDA error: uncorrectable   ECC error encountered",
        [],
        [12],
    ),
    "ib": (FailureClass.COLLECTIVE_TIMEOUT, "Watchdog caught collective operation timeout", ["node-a"], []),
    "oom.log": (FailureClass.GPU_OOM, "torch.OutOfMemoryError: CUDA out of memory.", [], []),
}


def make_set(root: Path) -> Path:
    (root / "cases" / "ib").mkdir(parents=True)
    (root / "cases" / "ib" / "node-a.log").write_text("x\n")
    for name in ("ecc.log", "oom.log", "empty.log"):
        (root / "cases" / name).write_text("x\n")
    (root / "labels.jsonl").write_text("\n".join(json.dumps(c) for c in LABELS) + "\n")
    return root


def report_for(path: str, cls: FailureClass, text: str, nodes: list[str], ranks: list[int]) -> Report:
    diagnosis = Diagnosis(
        failure_class=cls,
        action=DEFAULT_ACTION[cls],
        confidence=0.9,
        summary=f"{cls.value} on {nodes or ranks}",
        faulty_nodes=nodes,
        faulty_ranks=ranks,
        evidence=[Evidence(file=path, line=1, text=text)],
    )
    stats = ScanStats(files=1, lines=1, bytes=2, rule_hits=1, templates=1, seconds=0.0, mb_per_s=0.0)
    return Report(paths=[path], diagnosis=diagnosis, stats=stats)


def fake_triage(paths: list[str]) -> Report:
    assert len(paths) == 1 and isinstance(paths[0], str)
    p = Path(paths[0])
    assert p.exists(), "the runner passes the resolved case path"
    if p.name not in PREDICTIONS:
        raise InputError(f"{p} is empty: nothing to diagnose")
    return report_for(paths[0], *PREDICTIONS[p.name])


def test_evaluate_scores_each_case(tmp_path: Path) -> None:
    seen: list[CaseResult] = []
    rep = evaluate(make_set(tmp_path), fake_triage, on_result=seen.append)
    assert [r.id for r in seen] == ["ecc", "ib", "oom", "empty"]
    assert rep.cases == 4 and rep.errors == 1
    # ecc and oom right; ib predicted collective_timeout; empty failed
    assert rep.accuracy == pytest.approx(0.5)
    assert rep.action_accuracy == pytest.approx(0.5)  # ib's timeout -> retry, labeled drain
    assert rep.confusion["network"] == {"collective_timeout": 1}
    assert rep.confusion["storage"] == {ERROR_COLUMN: 1}
    # evidence: ecc hits through whitespace normalisation, ib misses, oom hits; empty has no labels
    assert rep.evidence_cases == 3 and rep.evidence_hit_rate == pytest.approx(2 / 3)
    # nodes: ecc rank12 via faulty_ranks, ib node-b missed
    assert rep.faulty_node_cases == 2 and rep.faulty_node_hit_rate == pytest.approx(0.5)
    by_id = {r.id: r for r in rep.results}
    assert by_id["empty"].error == f"InputError: {tmp_path / 'cases' / 'empty.log'} is empty: nothing to diagnose"
    assert by_id["empty"].predicted_class is None
    assert by_id["ecc"].predicted_faulty_ranks == [12]
    assert by_id["ib"].predicted_evidence == ["Watchdog caught collective operation timeout"]
    assert all(r.seconds >= 0 for r in rep.results)


def test_non_crashcart_errors_propagate(tmp_path: Path) -> None:
    def broken(paths: list[str]) -> Report:
        raise ValueError("bug in triage")

    with pytest.raises(ValueError, match="bug in triage"):
        evaluate(make_set(tmp_path), broken)


def test_bad_set_raises_before_any_triage(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def spy(paths: list[str]) -> Report:
        calls.append(paths)
        raise AssertionError("must not run")

    with pytest.raises(EvalSetError, match="labels.jsonl not found"):
        evaluate(tmp_path, spy)
    assert calls == []


def test_default_triage_is_crashcart_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without triage_fn the runner imports crashcart.api.triage lazily (faked here)."""
    fake = types.ModuleType("crashcart.api")
    fake.triage = fake_triage  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "crashcart.api", fake)
    rep = evaluate(make_set(tmp_path))
    assert rep.cases == 4 and rep.accuracy == pytest.approx(0.5)


def test_any_crashcart_error_is_recorded_not_only_input_errors(tmp_path: Path) -> None:
    def bad_rules(paths: list[str]) -> Report:
        raise KnowledgeError("rules.yaml: bad regex")

    rep = evaluate(make_set(tmp_path), bad_rules)
    assert rep.errors == 4 and rep.accuracy == 0.0
    assert {r.error for r in rep.results} == {"KnowledgeError: rules.yaml: bad regex"}

"""Tests for agent/cases.py: what a confirmed case produces (an incident, and a rule when the rules missed it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.agent.cases import add_from_paths, incident_from_report, propose_from_report, teach_rules
from crashcart.agent.models import Diagnosis
from crashcart.agent.report import Report, ScanStats
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.incident_store import MemoryIncidentStore
from crashcart.knowledge.records import Evidence
from crashcart.knowledge.rule_store import MemoryRuleStore, RuleProposal
from crashcart.knowledge.taxonomy import Action, FailureClass

# PyTorch's NCCL watchdog on an ECC failure (ProcessGroupNCCL.cpp), as torchrun prefixes it.
ECC = (
    "[default0]:[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 12] Process "
    "group watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered"
)
STATS = ScanStats(files=1, lines=1, bytes=len(ECC), rule_hits=0, templates=1, seconds=0.1, mb_per_s=1.0)


def _report(decided_by: str = "none", evidence: bool = True, proposals: list[RuleProposal] | None = None) -> Report:
    known = decided_by == "rules"
    diagnosis = Diagnosis(
        failure_class=FailureClass.GPU_HARDWARE if known else FailureClass.UNKNOWN,
        action=Action.DRAIN_NODE_AND_RETRY if known else Action.ESCALATE_INFRA,
        confidence=0.9 if known else 0.0,
        summary="s",
        decided_by=decided_by,  # type: ignore[arg-type]
        evidence=[Evidence(file="rank12.log", line=1, text=ECC)] if evidence else [],
    )
    return Report(paths=["job-1/logs"], diagnosis=diagnosis, stats=STATS, proposals=proposals or [])


def test_a_class_the_rules_missed_queues_a_rule_from_the_evidence_line() -> None:
    store = MemoryRuleStore()
    proposal = teach_rules(_report(), FailureClass.GPU_HARDWARE, store)
    assert proposal is not None and proposal.status == "pending" and proposal.origin == "template"
    assert proposal.examples == [ECC] and proposal.job == "job-1/logs"
    assert [p.id for p in store.list("pending")] == [proposal.id]


@pytest.mark.parametrize(
    "report",
    [
        _report(decided_by="rules"),  # the fast filter named it already
        _report(evidence=False),  # no line to derive a rule from
        _report(
            proposals=[
                RuleProposal(
                    pattern="uncorrectable ECC error",
                    failure_class=FailureClass.GPU_HARDWARE,
                    explanation="the model's rule",
                    examples=[ECC],
                    origin="llm",
                    model="m",
                    job="job-1",
                )
            ]
        ),  # the model's proposal came with the report
    ],
    ids=["rules-knew", "no-evidence", "model-proposed"],
)
def test_no_rule_is_taught_when_none_is_needed(report: Report) -> None:
    store = MemoryRuleStore()
    assert teach_rules(report, FailureClass.GPU_HARDWARE, store) is None
    assert store.list("pending") == []


def test_a_corrected_class_takes_its_own_action_and_runbook() -> None:
    incident = incident_from_report(_report(decided_by="rules"), failure_class=FailureClass.CUDA_ERROR, job="j")
    assert (incident.failure_class, incident.action) == (FailureClass.CUDA_ERROR, Action.RETRY)
    with pytest.raises(InputError, match="pass --class"):
        incident_from_report(_report(), job="j")


def test_propose_from_report_needs_a_line_it_showed() -> None:
    with pytest.raises(InputError, match="line 7 is not among"):
        propose_from_report(_report(), FailureClass.GPU_HARDWARE, line=7)
    with pytest.raises(InputError, match="pass --line N"):
        propose_from_report(_report(evidence=False), FailureClass.GPU_HARDWARE)


def test_add_from_paths_stores_the_incident_and_teaches_the_filter(tmp_path: Path) -> None:
    log = tmp_path / "rank12.log"
    log.write_text(f"{ECC}\n", encoding="utf-8")
    memory, rules = MemoryIncidentStore(), MemoryRuleStore()
    incident, proposal = add_from_paths(memory, [str(log)], failure_class=FailureClass.GPU_HARDWARE, rule_store=rules)
    assert memory.count() == 1 and incident.failure_class is FailureClass.GPU_HARDWARE
    assert proposal is None  # the shipped rules know an uncorrectable ECC error: nothing to teach

"""Tests for agent/consult.py: when a triage asks the model (the whole loop is in tests/crashcart/test_llm_loop.py)
and when its answer may not replace the rules'."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crashcart.agent.consult import (
    CONSULT_BELOW,
    SURE_FROM,
    TIMEOUT_S,
    LLMOptions,
    contradicts_sure_rules,
    hosts_of,
    should_consult,
)
from crashcart.agent.models import Alternative, Diagnosis
from crashcart.api import triage
from crashcart.knowledge.rule_store import MemoryRuleStore
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, Action, FailureClass

# The bundled example job, written by `crashcart generate` from evals/scenarios.yaml (which notes each line's source).
XID79 = Path(__file__).resolve().parents[2] / "examples" / "xid79-job" / "logs"
XID_LINE = (
    "kernel-node07.log",
    2,
)  # "NVRM: Xid (PCI:0000:1b:00): 79, pid=28536, name=python, GPU has fallen off the bus."


def _diagnosis(cls: FailureClass, confidence: float) -> Diagnosis:
    return Diagnosis(failure_class=cls, action=DEFAULT_ACTION[cls], confidence=confidence, summary="s")


@pytest.mark.parametrize(
    ("cls", "confidence", "always", "asked"),
    [
        (FailureClass.UNKNOWN, 0.0, False, True),  # the rules and memory are silent
        (FailureClass.UNKNOWN, 0.9, False, True),  # unknown however sure
        (FailureClass.GPU_OOM, CONSULT_BELOW - 0.01, False, True),  # unsure
        (FailureClass.GPU_OOM, CONSULT_BELOW, False, False),  # sure enough: the model is not asked
        (FailureClass.GPU_OOM, 0.99, True, True),  # --llm-always
    ],
)
def test_the_model_is_asked_when_rules_and_memory_are_unsure(
    cls: FailureClass, confidence: float, always: bool, asked: bool
) -> None:
    assert should_consult(_diagnosis(cls, confidence), LLMOptions(always=always)) is asked


def test_the_deadline_defaults_well_under_a_minute() -> None:
    from crashcart import cli

    assert LLMOptions().timeout_s == TIMEOUT_S == cli.TIMEOUT_S <= 30  # the CLI keeps its own copy: no agent import


def _reply(cls: str, action: str, nodes: list[str], **extra: object) -> str:
    file, line = XID_LINE
    return json.dumps(
        {
            "failure_class": cls,
            "action": action,
            "evidence": [{"file": file, "line": line}],
            "faulty_nodes": nodes,
            "rationale": "The job was cancelled; retry it.",
            **extra,
        }
    )


@pytest.fixture(scope="module")
def xid79_rules() -> Diagnosis:
    d = triage([XID79]).diagnosis
    assert (d.failure_class, d.action, d.faulty_nodes, d.decided_by) == (
        FailureClass.GPU_HARDWARE,
        Action.DRAIN_NODE_AND_RETRY,
        ["node07"],
        "rules",
    )
    assert d.confidence >= SURE_FROM
    return d


@pytest.mark.parametrize(
    ("cls", "action", "nodes"),
    [
        ("cancelled", "retry", []),  # the answer a log line carried to the model: "cancelled -> retry"
        ("gpu_hardware", "retry", ["node07"]),  # the right class, but the failed GPU stays in service
        ("gpu_hardware", "drain_node_and_retry", ["node03"]),  # a healthy node drained instead
    ],
)
def test_a_model_that_contradicts_a_sure_root_cause_is_shown_not_obeyed(
    fake_chat, xid79_rules: Diagnosis, cls: str, action: str, nodes: list[str]
) -> None:
    rule = {"regex": "GPU has fallen off the bus", "failure_class": cls, "why": "the model's reading"}
    model = fake_chat([_reply(cls, action, nodes, proposed_rule=rule)])
    store = MemoryRuleStore()
    report = triage([XID79], chat_model=model, rule_store=store, llm_options=LLMOptions(always=True))
    d = report.diagnosis
    assert model.calls == 1
    assert d.model_dump(exclude={"alternatives"}) == xid79_rules.model_dump(exclude={"alternatives"})  # it stands
    assert d.alternatives == [
        Alternative(failure_class=FailureClass(cls), score=0.95, source="llm"),
        *xid79_rules.alternatives,
    ]
    seen = report.llm.disagreement
    assert seen is not None and (seen.failure_class.value, seen.action.value, seen.faulty_nodes) == (cls, action, nodes)
    assert report.proposals == [] and store.list() == []  # an overruled answer queues no rule either


def test_a_model_that_agrees_with_a_sure_root_cause_records_no_disagreement(fake_chat, xid79_rules) -> None:
    model = fake_chat([_reply("gpu_hardware", "drain_node_and_retry", ["node07"])])
    report = triage([XID79], chat_model=model, llm_options=LLMOptions(always=True))
    assert report.diagnosis.decided_by == "llm" and report.llm.disagreement is None
    assert report.diagnosis.faulty_nodes == ["node07"]


@pytest.mark.parametrize(
    ("confidence", "decided_by", "overruled"),
    [
        (SURE_FROM, "rules", True),
        (SURE_FROM - 0.01, "rules", False),
        (SURE_FROM, "structure", True),  # a sure verdict read from the traceback stands like a signature's
        (0.95, "memory", False),
    ],
)
def test_only_a_sure_rules_verdict_stands_against_the_model(
    confidence: float, decided_by: str, overruled: bool
) -> None:
    rules = _diagnosis(FailureClass.GPU_HARDWARE, confidence).model_copy(update={"decided_by": decided_by})
    model = _diagnosis(FailureClass.CANCELLED, 0.95).model_copy(update={"decided_by": "llm"})
    assert contradicts_sure_rules(rules, model) is overruled


def test_a_model_naming_the_rank_the_rules_located_names_the_same_place() -> None:
    rules = _diagnosis(FailureClass.GPU_OOM, SURE_FROM).model_copy(
        update={"decided_by": "rules", "faulty_nodes": ["node05"], "faulty_ranks": [3]}
    )
    same = rules.model_copy(update={"decided_by": "llm", "faulty_nodes": ["rank 3"]})
    other = rules.model_copy(update={"decided_by": "llm", "faulty_nodes": ["rank 4"]})
    assert hosts_of(["rank 3"], rules) == ["node05"] and hosts_of(["node09"], rules) == ["node09"]
    assert not contradicts_sure_rules(rules, same) and contradicts_sure_rules(rules, other)


# ray-project/ray#47461 (the corpus' dev case r-m2-hostoom-ray-worker-sigkill-069): a Ray worker killed, "by SIGKILL
# by OOM killer" the likeliest of the causes Ray lists; the rules read host_oom, unsure.
RAY_WORKER_DIED = Path(__file__).resolve().parents[2] / "evals/corpus/dev/cases/r-m2-hostoom-ray-worker-sigkill-069.log"


def test_a_model_that_cannot_tell_leaves_an_unsure_verdict_of_the_rules(fake_chat) -> None:
    rules = triage([RAY_WORKER_DIED]).diagnosis
    assert rules.failure_class is FailureClass.HOST_OOM and rules.confidence < SURE_FROM
    cited = [{"file": RAY_WORKER_DIED.name, "line": 1}]
    answer = {"failure_class": "unknown", "action": "escalate_infra", "evidence": cited, "faulty_nodes": []}
    model = fake_chat([json.dumps({**answer, "rationale": "The lines do not say which of Ray's causes it was."})])
    report = triage([RAY_WORKER_DIED], chat_model=model)
    assert model.calls == 1
    assert report.diagnosis.model_dump(exclude={"alternatives"}) == rules.model_dump(exclude={"alternatives"})
    assert report.diagnosis.alternatives[0] == Alternative(failure_class=FailureClass.UNKNOWN, score=0.95, source="llm")
    assert report.llm.disagreement is not None and report.llm.disagreement.failure_class is FailureClass.UNKNOWN

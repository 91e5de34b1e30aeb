"""The whole loop: a failure no rule knows -> the agent names it and proposes a regex -> the proposal passes
validation -> an operator confirms it -> the next such failure is caught by the new rule, without the model."""

from __future__ import annotations

import json
from pathlib import Path

from crashcart.agent.consult import LLMOptions
from crashcart.api import triage
from crashcart.knowledge.rule_store import SqliteRuleStore

QUORUM = """2026-03-01 10:00:0{i} INFO step {s} loss 2.1{i}
2026-03-01 10:00:09 WARNING zeta-scheduler: lease for shard group {g} expired
2026-03-01 10:00:09 CRITICAL zeta-scheduler: giving up on step {s} after quorum loss on host {h}
"""


def _answer(file: str, regex: str | None) -> str:
    answer = {
        "failure_class": "node_failure",
        "action": "drain_node_and_retry",
        "evidence": [{"file": file, "line": 3}],
        "faulty_nodes": [],
        "stage": "training",
        "rationale": "The scheduler lost quorum with a host and gave up the step. The host is gone.",
        "mitigation": ["Drain the host named in the quorum-loss line and restart from the last checkpoint."],
    }
    if regex:
        answer["proposed_rule"] = {
            "regex": regex,
            "failure_class": "node_failure",
            "why": "zeta-scheduler gives up when a host leaves the quorum",
        }
    return "```json\n" + json.dumps(answer) + "\n```"


def test_unknown_failure_to_confirmed_rule_without_the_model(tmp_path: Path, fake_chat, cli) -> None:
    first, second = tmp_path / "job1.log", tmp_path / "job2.log"
    first.write_text(QUORUM.format(i=1, s=100, g=7, h="gpu-a17"))
    second.write_text(QUORUM.format(i=4, s=2301, g=3, h="gpu-b02"))
    store_path = tmp_path / "rules.db"
    store = SqliteRuleStore(store_path)

    assert triage([first]).diagnosis.failure_class.value == "unknown"  # no rule knows this scheduler

    model = fake_chat([_answer("job1.log", r"zeta-scheduler: giving up on step \d+ after quorum loss on host")])
    report = triage([first], chat_model=model, rule_store=store, llm_options=LLMOptions())
    d = report.diagnosis
    assert (d.failure_class.value, d.decided_by) == ("node_failure", "llm")
    assert d.evidence[0].text.startswith("2026-03-01 10:00:09 CRITICAL zeta-scheduler: giving up")
    assert report.llm is not None and report.llm.calls == 1 and report.llm.agreement == 1.0
    (proposal,) = report.proposals
    assert proposal.status == "pending" and proposal.origin == "llm", proposal.validation
    assert [p.id for p in store.list(status="pending")] == [proposal.id]

    code, out, _ = cli("rules", "confirm", proposal.id, "--by", "alice", "--store", str(store_path))
    assert code == 0 and f"user.{proposal.id}" in out

    silent = fake_chat([])  # any call would fail the test: the script is empty
    again = triage([second], chat_model=silent, rule_store=SqliteRuleStore(store_path), llm_options=LLMOptions())
    assert again.diagnosis.failure_class.value == "node_failure"
    assert again.diagnosis.decided_by == "rules"
    assert again.diagnosis.evidence[0].rule_id == f"user.{proposal.id}"
    assert silent.calls == 0 and again.llm is None

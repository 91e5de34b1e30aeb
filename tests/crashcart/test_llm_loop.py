"""The whole loop: a failure no rule knows -> the agent names it and proposes a regex -> the proposal passes
validation -> an operator confirms it -> the next such failure is caught by the new rule, without the model."""

from __future__ import annotations

import json
from pathlib import Path

from crashcart.agent.consult import LLMOptions
from crashcart.api import triage
from crashcart.knowledge.rule_store import SqliteRuleStore

# A failure no rule knows after an HF Trainer progress line: a Zookeeper leader losing a learner, as two lines in a row
# of Loghub's Zookeeper_2k.log (../shared/data) show it for each peer (their times, addresses and ports vary)
QUORUM = (
    "{{'loss': {loss}, 'learning_rate': 4.9e-05, 'epoch': {epoch}}}\n"
    "{t1} - WARN  [LearnerHandler-/{p1}:LearnerHandler@575] - ******* GOODBYE /{p1} ********\n"
    "{t2} - ERROR [LearnerHandler-/{p2}:LearnerHandler@562] - "
    "Unexpected exception causing shutdown while sock still open\n"
)
JOB1 = {"loss": 2.1, "epoch": 0.01, "t1": "2015-07-29 19:04:30,989", "p1": "10.10.34.11:52264"}
JOB1 |= {"t2": "2015-07-29 19:04:30,989", "p2": "10.10.34.11:52265"}
JOB2 = {"loss": 1.87, "epoch": 0.35, "t1": "2015-07-29 19:18:56,457", "p1": "10.10.34.12:59406"}
JOB2 |= {"t2": "2015-07-29 19:20:16,690", "p2": "10.10.34.12:59455"}


def _answer(file: str, regex: str | None) -> str:
    answer = {
        "failure_class": "node_failure",
        "action": "drain_node_and_retry",
        "evidence": [{"file": file, "line": 3}],
        "faulty_nodes": [],
        "stage": "training",
        "rationale": "The leader's handler for a learner died on an exception. The learner's host is gone.",
        "mitigation": ["Drain the host named in the learner-handler line and restart from the last checkpoint."],
    }
    if regex:
        answer["proposed_rule"] = {
            "regex": regex,
            "failure_class": "node_failure",
            "why": "a Zookeeper leader shuts a learner's handler down when the learner's host goes",
        }
    return "```json\n" + json.dumps(answer) + "\n```"


def test_unknown_failure_to_confirmed_rule_without_the_model(tmp_path: Path, fake_chat, cli) -> None:
    first, second = tmp_path / "job1.log", tmp_path / "job2.log"
    first.write_text(QUORUM.format(**JOB1))
    second.write_text(QUORUM.format(**JOB2))
    store_path = tmp_path / "rules.db"
    store = SqliteRuleStore(store_path)

    assert triage([first]).diagnosis.failure_class.value == "unknown"  # no rule knows this Zookeeper failure

    model = fake_chat(
        [_answer("job1.log", r"LearnerHandler@\d+\] - Unexpected exception causing shutdown while sock still open")]
    )
    report = triage([first], chat_model=model, rule_store=store, llm_options=LLMOptions())
    d = report.diagnosis
    assert (d.failure_class.value, d.decided_by) == ("node_failure", "llm")
    assert d.evidence[0].text.startswith("2015-07-29 19:04:30,989 - ERROR [LearnerHandler-/10.10.34.11:52265:")
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

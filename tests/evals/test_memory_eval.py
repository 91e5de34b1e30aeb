"""Memory evaluation: leave-one-out never lets a case find itself, and memory does not cost accuracy."""

from __future__ import annotations

import json
from pathlib import Path

from crashcart.evals.memory_eval import evaluate_memory
from crashcart.evals.render import render_memory

# Lines no rule knows, from real logs (Loghub's Zookeeper_2k.log and HDFS_2k.log, in ../shared/data): a Zookeeper
# ensemble losing its quorum peers, and a DataNode failing to serve a block, each with its numbers varied per case
# the way they vary between occurrences in those logs.
RECURRING = "".join(
    line + "\n"
    for line in (
        "2015-07-29 19:13:2{i},282 - WARN  [RecvWorker:188978561024:QuorumCnxManager$RecvWorker@762] - "
        "Connection broken for id 188978561024, my id = {i}, error = ",
        "2015-07-29 19:13:2{i},721 - WARN  [QuorumPeer[myid={i}]/0:0:0:0:0:0:0:0:2181:QuorumCnxManager@368] - "
        "Cannot open channel to {s} at election address /10.10.34.1{s}:3888",
    )
)
OTHER = "081109 21440{i} 2677 WARN dfs.DataNode$DataXceiver: {h}:50010:Got exception while serving blk_{s} to "
OTHER += "/10.251.91.159:\n"


def _set(root: Path) -> Path:
    (root / "cases").mkdir(parents=True)
    labels = []
    for n in range(3):
        for kind, text, cls in (("quorum", RECURRING, "node_failure"), ("block", OTHER, "storage")):
            name = f"{kind}-{n}"
            (root / "cases" / f"{name}.log").write_text(text.format(i=n + 1, s=n + 2, h=f"10.251.126.{n}"))
            labels.append(
                {
                    "id": name,
                    "path": f"cases/{name}.log",
                    "failure_class": cls,
                    "action": "fix_job",
                    "evidence": [],
                    "faulty_nodes": [],
                }
            )
    (root / "labels.jsonl").write_text("\n".join(json.dumps(x) for x in labels) + "\n")
    return root


def test_recurring_failures_unknown_to_rules_are_recognised_leave_one_out(tmp_path: Path) -> None:
    report = evaluate_memory(_set(tmp_path), k=2)
    assert report.rules_accuracy == 0.0  # no rule knows these messages
    assert report.memory_accuracy == 1.0 and report.memory_decided == 6
    assert report.top1_recall == 1.0 and report.novel_cases == 0
    assert report.retrieval_accuracy == 1.0
    assert "rules + memory (LOO)" in str(render_memory(report).renderables[0].columns[0]._cells)


def test_dev_set_memory_is_at_least_as_accurate_as_rules(dev_evalset: Path) -> None:
    report = evaluate_memory(dev_evalset, k=3)
    assert report.memory_accuracy >= report.rules_accuracy >= 0.85
    assert 0.0 < report.topk_recall <= 1.0 and report.top1_recall <= report.topk_recall


def test_calibrated_threshold_splits_same_class_neighbours_from_the_rest() -> None:
    from crashcart.evals.memory_eval import calibrate_threshold

    nearest = [(0.9, True), (0.8, True), (0.6, True), (0.5, False), (0.3, False), (0.7, False)]
    assert calibrate_threshold(nearest) == 0.55  # keeps all 3 same-class, rejects 2 of 3 others
    assert calibrate_threshold([(0.9, True)]) == 0.0


def test_llm_mode_is_compared_on_the_same_cases(tmp_path: Path, fake_chat) -> None:
    from crashcart.agent.consult import LLMOptions
    from crashcart.agent.llm_provider import LLMSettings

    root = _set(tmp_path)
    replies = []
    for n in range(3):
        for kind, cls in (("quorum", "node_failure"), ("block", "storage")):
            line = 1
            replies.append(
                json.dumps(
                    {
                        "failure_class": cls,
                        "action": "fix_job",
                        "rationale": "seen in the log",
                        "evidence": [{"file": f"{kind}-{n}.log", "line": line}],
                    }
                )
            )
    report = evaluate_memory(root, k=2, llm=LLMSettings(model="custom:fake"), chat_model=fake_chat(replies))
    assert report.rules_memory_llm is not None and report.llm_usage is not None
    assert report.llm_usage.calls == 0  # memory settles every case: the model is not needed
    report = evaluate_memory(
        root,
        k=2,
        llm=LLMSettings(model="custom:fake"),
        chat_model=fake_chat(replies),
        llm_options=LLMOptions(always=True),
    )
    assert report.llm_usage.consulted == 6 and report.llm_usage.calls == 6
    assert report.rules_memory_llm.accuracy == 1.0
    assert "rules + memory + LLM" in str(render_memory(report).renderables[0].columns[0]._cells)

"""The log tools the model may call: each reads the job's own files, bounded, and makes what it shows citeable."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import AIMessage

from crashcart.agent.consult import LLMOptions
from crashcart.agent.llm_context import Context
from crashcart.agent.llm_provider import LLMSettings
from crashcart.agent.llm_tools import MAX_LINES, JobLogs
from crashcart.api import triage
from crashcart.knowledge.rules import load_rules
from crashcart.parsers.scan import scan_sources
from crashcart.parsers.sources import discover

# Loghub's Zookeeper_2k.log (../shared/data): a quorum peer starting, then a leader's learner handler dying; an
# HF Trainer progress line before them. No rule knows the failure, and the start-up line is not error-like, so
# the context does not show it: only a tool can.
STARTING = "2015-07-29 17:41:44,747 - INFO  [main:QuorumPeerMain@127] - Starting quorum peer"
FAILED = (
    "2015-07-29 19:04:30,989 - ERROR [LearnerHandler-/10.10.34.11:52265:LearnerHandler@562] - "
    "Unexpected exception causing shutdown while sock still open"
)
PROGRESS = "{'loss': 2.1, 'learning_rate': 4.9e-05, 'epoch': 0.01}"


def _job(tmp_path: Path) -> Path:
    job = tmp_path / "job"
    job.mkdir()
    (job / "node01.log").write_text("\n".join([STARTING, *[PROGRESS] * 5, FAILED]) + "\n")
    (job / "node02.log").write_text(PROGRESS + "\n")
    return job


def _logs(job: Path) -> JobLogs:
    sources = discover([str(job)]).sources
    return JobLogs.of(sources, scan_sources(sources, load_rules(), 1), Context(sections={}))


def test_search_and_window_read_the_files_and_make_their_lines_citeable(tmp_path: Path) -> None:
    logs = _logs(_job(tmp_path))
    found = logs.search_logs(r"QuorumPeerMain@\d+")
    assert found == f"[node01.log:1] {STARTING}" and logs.context.citeable[("node01.log", 1)] == STARTING
    window = logs.open_window("node01.log", 7, before=1, after=5).splitlines()
    assert [w.split("]")[0] for w in window] == ["[node01.log:6", "[node01.log:7"]
    assert logs.search_logs("(unclosed").startswith("invalid RE2 pattern")
    assert logs.open_window("nowhere.log", 1).startswith("no such file")
    assert logs.search_logs("loss", file="node02.log") == f"[node02.log:1] {PROGRESS}"


def test_templates_and_timeline_come_from_the_scan(tmp_path: Path) -> None:
    logs = _logs(_job(tmp_path))
    shapes = logs.list_templates().splitlines()
    assert shapes[0].startswith("x1 first at [node01.log:1]") and any(s.startswith("x5 ") for s in shapes)
    assert "node01.log" in logs.progress_timeline() or "progress" in logs.progress_timeline()


def test_a_search_stops_at_its_line_limit(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text((PROGRESS + "\n") * (MAX_LINES + 10))
    out = _logs(tmp_path).search_logs("loss").splitlines()
    assert len(out) == MAX_LINES + 1 and out[-1] == f"(first {MAX_LINES} matches only)"


def _answer(line: int, cls: str = "node_failure") -> str:
    return json.dumps(
        {
            "failure_class": cls,
            "action": "drain_node_and_retry",
            "evidence": [{"file": "node01.log", "line": line}],
            "rationale": "the learner's host left the ensemble after the peer had started",
        }
    )


def test_a_model_calls_each_tool_then_cites_a_line_only_a_tool_showed(tmp_path: Path, fake_chat) -> None:
    calls = [
        {"name": "search_logs", "args": {"pattern": "QuorumPeerMain"}, "id": "c1"},
        {"name": "open_window", "args": {"file": "node01.log", "line": 7, "before": 2, "after": 0}, "id": "c2"},
        {"name": "list_templates", "args": {"node": None}, "id": "c3"},
        {"name": "progress_timeline", "args": {}, "id": "c4"},
    ]
    model = fake_chat([AIMessage(content="", tool_calls=calls), _answer(1)])
    report = triage(
        [str(_job(tmp_path))],
        chat_model=model,
        llm=LLMSettings(model="custom:scripted"),
        llm_options=LLMOptions(always=True),
    )
    assert report.llm is not None and report.llm.tool_calls == 4 and not report.llm.fallback
    assert report.diagnosis.decided_by == "llm" and report.diagnosis.evidence[0].text == STARTING
    assert {t["function"]["name"] for t in model.bound_tools} == {c["name"] for c in calls}
    results = [m for m in model.sent[1] if m.type == "tool"]
    assert len(results) == 4 and STARTING in str(results[0].content)


def test_the_tools_over_real_http(tmp_path: Path, cli, openai_server, monkeypatch) -> None:
    from fakes.openai_server import Reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-only")
    openai_server.script(
        [Reply(tool_calls=[{"name": "search_logs", "arguments": {"pattern": "Starting quorum"}}]), Reply(_answer(1))]
    )
    args = ["triage", str(_job(tmp_path)), "--format", "json", "--llm", "openai:local-test-model"]
    code, out, err = cli(*args, "--llm-base-url", openai_server.base_url, "--llm-always")
    assert code == 0, err
    report = json.loads(out)
    assert report["llm"]["tool_calls"] == 1, report["llm"]
    assert report["diagnosis"]["evidence"][0]["line"] == 1
    second = openai_server.requests[1]
    assert any(m.get("role") == "tool" and STARTING in m.get("content", "") for m in second["messages"])
    assert {t["function"]["name"] for t in second["tools"]} >= {"search_logs", "open_window"}


def test_a_provider_without_tool_calling_gets_the_plain_context(tmp_path: Path) -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    model = GenericFakeChatModel(messages=iter([AIMessage(content=_answer(7))]))  # its bind_tools raises
    report = triage(
        [str(_job(tmp_path))],
        chat_model=model,
        llm=LLMSettings(model="custom:no-tools"),
        llm_options=LLMOptions(always=True),
    )
    assert report.llm is not None and report.llm.tool_calls == 0 and report.diagnosis.decided_by == "llm"
    assert report.diagnosis.evidence[0].text == FAILED


def test_a_model_that_agrees_with_the_rules_but_names_no_node_keeps_the_rules_nodes(fake_chat) -> None:
    job = Path(__file__).resolve().parents[2] / "examples" / "xid79-job" / "logs"
    xid_line = 2  # kernel-node07.log's Xid 79 line
    answer = json.dumps(
        {
            "failure_class": "gpu_hardware",
            "action": "drain_node_and_retry",
            "evidence": [{"file": "kernel-node07.log", "line": xid_line}],
            "rationale": "XID 79: the GPU fell off the bus",
        }
    )
    report = triage(
        [str(job)],
        chat_model=fake_chat([answer]),
        llm=LLMSettings(model="custom:scripted"),
        llm_options=LLMOptions(always=True),
    )
    assert report.diagnosis.decided_by == "llm" and report.diagnosis.faulty_nodes == ["node07"]

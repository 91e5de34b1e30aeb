"""End to end over real HTTP: the crashcart CLI and its OpenAI-compatible client against a local
OpenAI-compatible server started by the test (scripted replies; nothing leaves 127.0.0.1)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fakes.openai_server import Fail, Reply, Silence, Trickle

# A failure no rule knows, after an HF Trainer progress line: a Zookeeper leader's learner handler dying (Loghub's
# Zookeeper_2k.log, ../shared/data)
LOG = (
    "{'loss': 2.1, 'learning_rate': 4.9e-05, 'epoch': 0.01}\n"
    "2015-07-29 19:04:30,989 - ERROR [LearnerHandler-/10.10.34.11:52265:LearnerHandler@562] - "
    "Unexpected exception causing shutdown while sock still open\n"
)


def _answer(**extra: object) -> str:
    return json.dumps(
        {
            "failure_class": "node_failure",
            "action": "drain_node_and_retry",
            "evidence": [{"file": "job.log", "line": 2}],
            "faulty_nodes": [],
            "rationale": "A learner's host left the Zookeeper ensemble.",
            **extra,
        }
    )


def test_triage_with_an_openai_compatible_server(tmp_path: Path, cli, openai_server, monkeypatch) -> None:
    log = tmp_path / "job.log"
    log.write_text(LOG)
    monkeypatch.setenv("CRASHCART_RULES", str(tmp_path / "rules.db"))
    monkeypatch.setenv("CRASHCART_MEMORY", str(tmp_path / "none.db"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-only")
    rule = {
        "regex": r"LearnerHandler@\d+\] - Unexpected exception causing shutdown",
        "failure_class": "node_failure",
        "why": "the leader shuts a learner's handler down when the learner's host leaves",
    }
    openai_server.script(
        [Fail(429, retry_after="0"), Reply(_answer(proposed_rule=rule), prompt_tokens=900, completion_tokens=120)]
    )

    code, out, err = cli(
        "triage",
        str(log),
        "--format",
        "json",
        "--llm",
        "openai:local-test-model",
        "--llm-base-url",
        openai_server.base_url,
    )
    assert code == 0, err
    report = json.loads(out)
    d = report["diagnosis"]
    assert (d["failure_class"], d["decided_by"]) == ("node_failure", "llm")
    assert report["llm"]["calls"] == 2 and report["llm"]["input_tokens"] == 900  # both HTTP attempts
    assert report["llm"]["output_tokens"] == 120
    assert report["proposals"][0]["status"] == "pending"
    assert openai_server.calls == 2  # one 429, retried after Retry-After, then the answer
    sent = openai_server.requests[-1]
    assert sent["model"] == "local-test-model"
    assert sent["response_format"]["type"] in ("json_object", "json_schema")
    assert "BEGIN LOG DATA" in sent["messages"][-1]["content"]

    code, out, _ = cli("rules", "pending")
    assert code == 0 and "Unexpected exception causing shutdown" in out


def test_an_unreachable_model_falls_back_to_rules(tmp_path: Path, cli, openai_server, monkeypatch) -> None:
    log = tmp_path / "job.log"
    log.write_text(LOG)
    monkeypatch.setenv("CRASHCART_RULES", str(tmp_path / "rules.db"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-only")
    openai_server.script([Fail(401, body={"error": {"message": "bad key"}})])
    code, out, err = cli(
        "triage",
        str(log),
        "--format",
        "json",
        "--no-memory",
        "--llm",
        "openai:m",
        "--llm-base-url",
        openai_server.base_url,
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["diagnosis"]["decided_by"] == "none" and report["llm"]["fallback"] is True
    assert report["llm"]["errors"][0].startswith("client")


@pytest.mark.parametrize("hold", [Silence(), Trickle(every_s=0.1)], ids=["never-replies", "trickles"])
def test_a_model_that_never_answers_falls_back_within_the_deadline(
    tmp_path: Path, cli, openai_server, monkeypatch, hold
) -> None:
    log = tmp_path / "job.log"
    log.write_text(LOG)
    monkeypatch.setenv("CRASHCART_RULES", str(tmp_path / "rules.db"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-only")
    openai_server.script([hold] * 3)
    args = ["triage", str(log), "--format", "json", "--no-memory", "--llm", "openai:m"]
    started = time.monotonic()
    code, out, err = cli(*args, "--llm-base-url", openai_server.base_url, "--llm-samples", "3", "--llm-timeout", "2")
    elapsed = time.monotonic() - started
    assert code == 0, err
    report = json.loads(out)
    u = report["llm"]
    assert report["diagnosis"]["decided_by"] == "none" and u["fallback"] is True and u["timed_out"] is True
    assert u["calls"] == 1 and openai_server.calls == 1  # the first sample used the deadline up: no more asked
    assert "deadline of 2s (--llm-timeout) passed" in u["errors"][0]
    assert 2.0 <= u["seconds"] < 3.0 and elapsed < 6.0  # not 5 attempts x 60 s x 3 samples, nor forever

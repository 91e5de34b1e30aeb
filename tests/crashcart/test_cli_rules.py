"""`crashcart rules ...` and the no-LLM proposal path: a confirmed incident the rules missed teaches the filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# A failure no rule knows after an HF Trainer progress line: a Zookeeper leader's learner handler for a peer dying, as
# Loghub's Zookeeper_2k.log (../shared/data) prints it for each peer (its time, address and port vary)
QUORUM = (
    "{{'loss': {loss}, 'learning_rate': 4.9e-05, 'epoch': {epoch}}}\n"
    "{t} - ERROR [LearnerHandler-/{peer}:LearnerHandler@562] - "
    "Unexpected exception causing shutdown while sock still open\n"
)
FIRST = {"loss": 2.1, "epoch": 0.01, "t": "2015-07-29 19:04:30,989", "peer": "10.10.34.11:52265"}
SECOND = {"loss": 1.87, "epoch": 0.35, "t": "2015-07-29 19:20:16,690", "peer": "10.10.34.12:59455"}


@pytest.fixture(autouse=True)
def _stores(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CRASHCART_MEMORY", str(tmp_path / "memory.db"))
    monkeypatch.setenv("CRASHCART_RULES", str(tmp_path / "rules.db"))


def test_confirming_an_incident_the_rules_missed_queues_a_derived_rule(cli, tmp_path: Path) -> None:
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_text(QUORUM.format(**FIRST))
    second.write_text(QUORUM.format(**SECOND))

    code, out, _ = cli("cases", "add", str(first), "--class", "node_failure", "--by", "bob")
    assert code == 0 and "queued rule proposal prop-" in out
    code, out, _ = cli("rules", "pending")
    proposal_id = out.split()[0]
    assert (
        proposal_id.startswith("prop-")
        and "from drain3-template" in out
        and "Unexpected exception causing shutdown" in out
    )
    code, out, _ = cli("rules", "show", proposal_id)
    shown = json.loads(out)
    assert shown["origin"] == "template" and shown["status"] == "pending"

    assert cli("rules", "confirm", proposal_id, "--by", "bob")[0] == 0
    code, out, _ = cli("triage", str(second), "--format", "json", "--no-memory")
    d = json.loads(out)["diagnosis"]
    assert (d["failure_class"], d["decided_by"]) == ("node_failure", "rules")
    assert d["evidence"][0]["rule_id"] == f"user.{proposal_id}"

    code, _, err = cli("rules", "confirm", proposal_id, "--by", "bob")
    assert code == 2 and "already confirmed" in err
    code, out, _ = cli("rules", "list", "--status", "confirmed")
    assert proposal_id in out


def test_propose_and_reject_and_errors(cli, tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text(QUORUM.format(**FIRST))
    code, out, _ = cli("rules", "propose", str(log), "--class", "node_failure", "--line", "2")
    assert code == 0 and out.startswith("queued prop-")
    proposal_id = out.split()[1].rstrip(":")
    code, out, _ = cli("rules", "reject", proposal_id, "--reason", "too specific to one ensemble")
    assert code == 0 and cli("rules", "pending")[1].strip() == "no proposals"
    code, _, err = cli("rules", "confirm", "prop-0000000000")
    assert code == 2 and "crashcart rules pending" in err
    code, _, err = cli("rules", "list", "--status", "maybe")
    assert code == 2 and "--status" in err
    code, _, err = cli("rules", "propose", str(log), "--class", "node_failure", "--line", "99")
    assert code == 2 and "line 99" in err


def test_proposals_show_their_log_lines_escaped(cli, tmp_path: Path) -> None:
    # loguru's colours as datatrove wrote them to a log file (huggingface/datatrove#131)
    log = tmp_path / "a.log"
    log.write_text(
        "\x1b[32m2024-03-22 07:26:34.220\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36mdatatrove.utils.logging\x1b[0m:"
        "\x1b[36madd_task_logger\x1b[0m:\x1b[36m47\x1b[0m - \x1b[1mLaunching pipeline for rank=275\x1b[0m\n"
    )
    code, out, err = cli("rules", "propose", str(log), "--class", "data_error", "--line", "1")
    assert code == 0, err
    code, out, _ = cli("rules", "list")
    assert code == 0 and "matches: 2024-03-22 07:26:34.220 | INFO     | datatrove.utils.logging" in out
    assert "\x1b" not in out

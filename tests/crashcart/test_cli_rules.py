"""`crashcart rules ...` and the no-LLM proposal path: a confirmed incident the rules missed teaches the filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crashcart.knowledge.rule_store import SqliteRuleStore, loadable_rules

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


@pytest.mark.parametrize("columns", [80, 60])
def test_shipped_rules_are_listed_within_the_terminal(cli, monkeypatch, columns: int) -> None:
    from crashcart.knowledge.rules import load_rules

    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, _ = cli("rules", "list", "--shipped")
    shipped = load_rules()
    assert code == 0 and f"{len(shipped)} shipped rules" in out
    lines = out.splitlines()
    first = shipped[0]
    assert lines[0] == f"{first.id}  {first.failure_class.value}  {first.role.value}"
    assert all(len(line) <= columns for line in lines if line.startswith("  "))
    assert first.explanation[:40] in lines[1]


def test_shipped_rules_as_json(cli) -> None:
    code, out, _ = cli("rules", "list", "--shipped", "--format", "json")
    listed = json.loads(out)
    by_id = {r["id"]: r for r in listed["rules"]}
    assert code == 0 and listed["count"] == len(by_id) > 100
    watchdog = by_id["coll.watchdog_timeout"]
    assert (watchdog["failure_class"], watchdog["role"]) == ("collective_timeout", "symptom")
    assert "collective operation timeout" in watchdog["pattern"] and watchdog["explanation"]


def test_a_retired_rule_stops_firing_and_is_listed_as_retired(cli, tmp_path: Path) -> None:
    first = tmp_path / "a.log"
    first.write_text(QUORUM.format(**FIRST))
    code, out, _ = cli("rules", "propose", str(first), "--class", "node_failure", "--line", "2")
    proposal_id = out.split()[1].rstrip(":")
    assert cli("rules", "confirm", proposal_id, "--by", "bob")[0] == 0

    code, out, _ = cli("rules", "retire", proposal_id, "--reason", "the leader prints it on every re-election")
    assert code == 0 and f"retired {proposal_id}" in out
    store = SqliteRuleStore(tmp_path / "rules.db")  # what the next triage loads from $CRASHCART_RULES
    assert loadable_rules(store) == ([], [])
    store.close()

    code, out, _ = cli("rules", "list")
    assert f"{proposal_id}  retired  node_failure" in out
    assert "retired: by " in out and "the leader prints it on every re-election" in out
    code, out, _ = cli("rules", "list", "--status", "retired", "--format", "json")
    (shown,) = json.loads(out)["proposals"]
    assert (shown["status"], shown["decided_by"]) == ("retired", "bob")
    assert shown["retired_reason"] == "the leader prints it on every re-election" and shown["retired_at"]


def test_retiring_an_unknown_rule_is_one_line_and_fails(cli, tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text(QUORUM.format(**FIRST))
    cli("rules", "propose", str(log), "--class", "node_failure", "--line", "2")
    code, out, err = cli("rules", "retire", "prop-0000000000", "--reason", "wrong")
    assert code != 0 and out == "" and len(err.strip().splitlines()) == 1 and "prop-0000000000" in err


def test_decisions_without_by_record_the_os_user(cli, monkeypatch, tmp_path: Path) -> None:
    import getpass

    monkeypatch.setattr(getpass, "getuser", lambda: "carol")
    log = tmp_path / "a.log"
    log.write_text(QUORUM.format(**FIRST))
    proposal_id = cli("rules", "propose", str(log), "--class", "node_failure", "--line", "2")[1].split()[1][:-1]
    assert cli("rules", "confirm", proposal_id)[0] == 0
    monkeypatch.setattr(getpass, "getuser", _no_login)
    assert cli("rules", "retire", proposal_id, "--reason", "noisy")[0] == 0
    shown = json.loads(cli("rules", "show", proposal_id)[1])
    assert (shown["decided_by"], shown["retired_by"]) == ("carol", "unknown")


def _no_login() -> str:
    raise OSError("No username set in the environment")


def test_the_rule_store_is_named_rules_as_in_batch_and_store_still_works(cli, tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text(QUORUM.format(**FIRST))
    elsewhere = tmp_path / "other-rules.db"
    code, out, _ = cli(
        "rules", "propose", str(log), "--class", "node_failure", "--line", "2", "--rules", str(elsewhere)
    )
    assert code == 0 and elsewhere.exists()
    proposal_id = out.split()[1].rstrip(":")
    assert proposal_id in cli("rules", "pending", "--store", str(elsewhere))[1]  # the old name, kept as an alias
    assert proposal_id not in "".join(cli("rules", "pending")[1:])  # the default store was not touched

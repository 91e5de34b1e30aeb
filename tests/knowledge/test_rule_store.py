"""Tests for knowledge/rule_store.py: the proposal queue, both stores, and what confirmed proposals become."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.rule_store import (
    MemoryRuleStore,
    RuleProposal,
    RuleStore,
    SqliteRuleStore,
    loadable_rules,
)
from crashcart.knowledge.rules import Rule
from crashcart.knowledge.taxonomy import Action, FailureClass, Role
from crashcart.parsers.rulefilter import RuleFilter

REPO = Path(__file__).resolve().parents[2]

# A failure the shipped rules do not know, as the agent would propose it: the pattern beside its evidence.
PATTERN = r"fabric manager: NVSwitch (?P<switch>\d+) fatal error, GPU partition (?P<partition>\d+) halted"
EVIDENCE = [
    "May  1 10:40:02 node07 nv-fabricmanager[2410]: fabric manager: NVSwitch 3 fatal error, GPU partition 1 halted",
    "[rank12]: fabric manager: NVSwitch 0 fatal error, GPU partition 4 halted",
]


def proposal(pattern: str = PATTERN, examples: list[str] | None = None, **kw: object) -> RuleProposal:
    fields: dict = dict(
        pattern=pattern,
        failure_class=FailureClass.GPU_HARDWARE,
        explanation="An NVSwitch fatal error halts the GPU partition; the node's fabric is bad.",
        examples=EVIDENCE if examples is None else examples,
        origin="llm",
        model="gpt-test",
        job="job-4280674",
    )
    return RuleProposal(**{**fields, **kw})


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RuleStore]:
    s: RuleStore = MemoryRuleStore() if request.param == "memory" else SqliteRuleStore(tmp_path / "rules.db")
    yield s
    s.close()


def test_both_stores_satisfy_the_protocol(store: RuleStore) -> None:
    assert isinstance(store, RuleStore)


def test_propose_assigns_an_id_and_queues_it_pending(store: RuleStore) -> None:
    stored = store.propose(proposal())
    assert stored.id.startswith("prop-") and len(stored.id) == len("prop-") + 10
    assert stored.status == "pending" and stored.decided_by is None
    assert store.get(stored.id) == stored
    assert store.list() == [stored] and store.list("pending") == [stored]
    assert store.get("prop-0000000000") is None


def test_propose_drops_a_decision_the_caller_carried_in(store: RuleStore) -> None:
    stored = store.propose(proposal(status="confirmed", decided_by="mallory", reason="trust me"))
    assert (stored.status, stored.decided_by, stored.reason) == ("pending", None, None)
    assert store.confirmed_rules() == []


def test_the_same_pattern_is_not_queued_twice(store: RuleStore) -> None:
    first = store.propose(proposal())
    again = store.propose(proposal(job="job-other", origin="template", model="drain3-template"))
    assert again == first
    store.confirm(first.id, "alice")
    assert store.propose(proposal()).id == first.id  # a confirmed pattern is not re-queued either
    assert len(store.list()) == 1


def test_a_rejected_pattern_can_be_proposed_again(store: RuleStore) -> None:
    first = store.propose(proposal())
    store.reject(first.id, "bob", "too specific to one partition")
    second = store.propose(proposal())
    assert second.id != first.id and second.status == "pending"
    assert [p.status for p in store.list()] == ["rejected", "pending"]


def test_list_by_status_oldest_first(store: RuleStore) -> None:
    ids = [
        store.propose(proposal(PATTERN.replace("halted", word), [e.replace("halted", word) for e in EVIDENCE])).id
        for word in ("halted", "stopped", "frozen", "reset")
    ]
    store.confirm(ids[1], "alice")
    store.reject(ids[2], "bob", "duplicate of gpu.nvswitch")
    assert [p.id for p in store.list()] == ids
    assert [p.id for p in store.list("pending")] == [ids[0], ids[3]]
    assert [p.id for p in store.list("confirmed")] == [ids[1]]
    assert [p.id for p in store.list("rejected")] == [ids[2]]


def test_confirm_gives_a_rule_with_provenance(store: RuleStore) -> None:
    p = store.propose(proposal(action=Action.DRAIN_NODE_AND_RETRY, priority=80, role=Role.ROOT_CAUSE))
    rule = store.confirm(p.id, "alice")
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert rule.id == f"user.{p.id}"
    assert rule.source == f"confirmed:alice@{today}:job-4280674:gpt-test"
    assert (rule.pattern, rule.examples, rule.priority) == (PATTERN, EVIDENCE, 80)
    assert rule.resolved_action is Action.DRAIN_NODE_AND_RETRY
    decided = store.get(p.id)
    assert decided is not None and decided.status == "confirmed" and decided.decided_by == "alice"
    assert decided.decided_at is not None
    assert store.confirmed_rules() == [rule]


def test_source_names_the_origin_when_no_model_is_known(store: RuleStore) -> None:
    p = store.propose(proposal(model=None, origin="template"))
    assert store.confirm(p.id, "carol").source.endswith(":job-4280674:template")


def test_confirmed_rules_load_into_the_fast_filter_and_match_their_evidence(store: RuleStore) -> None:
    kept = store.propose(proposal())
    other = store.propose(
        proposal(
            r"NVSwitch (\d+) link training failed on port (\d+)",
            ["nv-fabricmanager: NVSwitch 2 link training failed on port 17"],
        )
    )
    store.propose(proposal(r"still pending: NVSwitch \d+ degraded", ["still pending: NVSwitch 5 degraded"]))
    store.confirm(kept.id, "alice")
    store.confirm(other.id, "alice")
    rules = store.confirmed_rules()
    assert all(isinstance(r, Rule) for r in rules)
    noise = ["node07:2211:2290 [0] NCCL INFO Connected all rings", "still pending: NVSwitch 5 degraded"]
    block = "\n".join([noise[0], *EVIDENCE, noise[1], *rules[1].examples]).encode()
    hits = RuleFilter(rules).scan(block)
    assert [(h.rule_index, h.text) for h in hits] == [(0, EVIDENCE[0]), (0, EVIDENCE[1]), (1, rules[1].examples[0])]
    assert hits[0].captures == {"switch": "3", "partition": "1"}


def test_reject_records_who_and_why(store: RuleStore) -> None:
    p = store.propose(proposal())
    rejected = store.reject(p.id, "bob", "matches a benign fabric-manager restart message")
    assert (rejected.status, rejected.decided_by) == ("rejected", "bob")
    assert rejected.reason == "matches a benign fabric-manager restart message"
    assert store.get(p.id) == rejected
    assert store.confirmed_rules() == []


@pytest.mark.parametrize("decide", ["confirm", "reject"])
def test_unknown_id_names_the_pending_command(store: RuleStore, decide: str) -> None:
    with pytest.raises(KnowledgeError, match=r"no rule proposal 'prop-ffffffffff'.*crashcart rules pending"):
        store.confirm("prop-ffffffffff", "alice") if decide == "confirm" else store.reject("prop-ffffffffff", "a", "b")


@pytest.mark.parametrize(("first", "then"), [("confirm", "confirm"), ("reject", "confirm"), ("confirm", "reject")])
def test_only_a_pending_proposal_can_be_decided(store: RuleStore, first: str, then: str) -> None:
    p = store.propose(proposal())
    store.confirm(p.id, "alice") if first == "confirm" else store.reject(p.id, "alice", "not a failure")
    status = "confirmed" if first == "confirm" else "rejected"
    with pytest.raises(
        KnowledgeError,
        match=rf"{p.id} is already {status} \(by alice, \d{{4}}-\d\d-\d\d\); only "
        r"pending proposals can be confirmed or rejected",
    ):
        store.confirm(p.id, "bob") if then == "confirm" else store.reject(p.id, "bob", "changed my mind")
    assert store.get(p.id).status == status  # type: ignore[union-attr]


def test_a_decision_needs_a_name_and_a_rejection_a_reason(store: RuleStore) -> None:
    p = store.propose(proposal())
    with pytest.raises(KnowledgeError, match="pass a non-empty `by`"):
        store.confirm(p.id, "  ")
    with pytest.raises(KnowledgeError, match="pass a non-empty reason"):
        store.reject(p.id, "bob", "")
    assert store.get(p.id).status == "pending"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("pattern", "examples", "message"),
    [
        (r"NVSwitch (\d+ fatal", EVIDENCE, "does not compile in RE2"),
        (r"NVSwitch \d+ link down", EVIDENCE, "example does not match"),
        (r"(?U)NVSwitch \d+ fatal error", EVIDENCE, "rejected by Hyperscan"),
    ],
    ids=["re2", "example", "hyperscan"],
)
def test_propose_refuses_what_could_never_be_confirmed(
    store: RuleStore, pattern: str, examples: list[str], message: str
) -> None:
    with pytest.raises(KnowledgeError, match=message):
        store.propose(proposal(pattern, examples))
    assert store.list() == []


@pytest.mark.parametrize(
    "change",
    [
        {"surprise": 1},
        {"origin": "oracle"},
        {"status": "maybe"},
        {"id": "prop-XYZ"},
        {"examples": []},
        {"explanation": "short"},
        {"priority": 101},
        {"job": ""},
    ],
    ids=["extra", "origin", "status", "id", "no-examples", "explanation", "priority", "job"],
)
def test_proposal_records_are_strict(change: dict) -> None:
    with pytest.raises(ValidationError):
        proposal(**change)


def test_proposal_round_trips_through_json() -> None:
    p = proposal(validation=["matches none of 2108 healthy log lines"])
    assert RuleProposal.model_validate_json(p.model_dump_json()) == p


# -- the durable store -------------------------------------------------------------------------------------------


def test_sqlite_store_is_durable_and_versioned(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "rules.db"
    with SqliteRuleStore(path) as s:
        p = s.propose(proposal())
        rule = s.confirm(p.id, "alice")
    with SqliteRuleStore(path) as s:
        assert s.confirmed_rules() == [rule]
        assert s.get(p.id).status == "confirmed"  # type: ignore[union-attr]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "1"
    conn.close()


def test_sqlite_store_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "rules.db"
    SqliteRuleStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(KnowledgeError, match="schema v99 was written by a newer crashcart.*upgrade crashcart"):
        SqliteRuleStore(path)


def test_sqlite_store_refuses_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "rules.db"
    path.write_text("this is a log, not a database\n" * 100)
    with pytest.raises(KnowledgeError, match=f"{path}: .*give another store path"):
        SqliteRuleStore(path)


WORKER = textwrap.dedent("""
    import sys
    from crashcart.knowledge.rule_store import RuleProposal, SqliteRuleStore
    from crashcart.knowledge.taxonomy import FailureClass

    path, worker = sys.argv[1], int(sys.argv[2])
    store = SqliteRuleStore(path)
    def propose(tag):
        line = f"custom fault {tag} detected on the device"
        store.propose(RuleProposal(pattern=f"custom fault {tag} detected", failure_class=FailureClass.UNKNOWN,
                                   explanation="a fault this test invents", examples=[line], origin="template",
                                   job=f"job-{worker}"))
    for i in range(20):
        propose(f"w{worker}-{i}")
        propose(f"shared-{i % 5}")
    store.close()
""")


def test_several_processes_proposing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "rules.db"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), str(w)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(6)
    ]
    for proc in workers:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    with SqliteRuleStore(path) as s:
        patterns = [p.pattern for p in s.list()]
        ids = [p.id for p in s.list()]
    assert len(patterns) == 6 * 20 + 5 == len(set(patterns)) == len(set(ids))
    assert {f"custom fault shared-{i} detected" for i in range(5)} <= set(patterns)


def write_confirmed(path: Path, pattern: str, examples: list[str], id: str = "prop-0123456789") -> None:
    """A confirmed proposal written straight into the SQLite file, as a store filled by an older crashcart (or by
    hand) holds one: nothing checks its pattern on the way in."""
    p = proposal(pattern, examples, id=id, status="confirmed", decided_by="alice", decided_at=datetime.now(UTC))
    SqliteRuleStore(path).close()  # the schema
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO proposals (id, pattern, status, body) VALUES (?, ?, ?, ?)",
            (p.id, p.pattern, p.status, p.model_dump_json()),
        )
    conn.close()


@pytest.mark.parametrize(
    ("pattern", "examples", "reason"),
    [
        (r"NVSwitch (\d+ fatal", EVIDENCE, "does not compile in RE2: missing ): NVSwitch (\\d+ fatal"),
        (r"(?U)NVSwitch \d+ fatal error", EVIDENCE, "is rejected by Hyperscan"),
        (r"NVSwitch \d+ link down", EVIDENCE, "example does not match"),
    ],
    ids=["re2", "hyperscan", "example"],
)
def test_a_confirmed_rule_that_no_longer_loads_is_left_out_with_its_reason(
    tmp_path: Path, pattern: str, examples: list[str], reason: str
) -> None:
    path = tmp_path / "rules.db"
    write_confirmed(path, pattern, examples)
    with SqliteRuleStore(path) as s:
        good = s.confirm(s.propose(proposal()).id, "bob")
        rules, skipped = loadable_rules(s)
    assert rules == [good]
    (left_out,) = skipped
    assert (left_out.id, left_out.pattern) == ("user.prop-0123456789", pattern)
    assert reason in left_out.reason and "\n" not in left_out.reason
    assert left_out.warning.startswith(f"skipped confirmed rule user.prop-0123456789: {left_out.reason}; ")
    assert "`crashcart rules show prop-0123456789`" in left_out.warning and "\n" not in left_out.warning


def test_loadable_rules_of_a_sound_store_are_its_confirmed_rules(store: RuleStore) -> None:
    store.confirm(store.propose(proposal()).id, "alice")
    store.propose(proposal(r"still pending: NVSwitch \d+ degraded", ["still pending: NVSwitch 5 degraded"]))
    assert loadable_rules(store) == (store.confirmed_rules(), [])


def test_a_retired_rule_leaves_the_filter_and_keeps_its_history(store: RuleStore) -> None:
    kept = store.propose(proposal())
    store.confirm(kept.id, "alice")
    retired = store.retire(kept.id, "bob", "fires on the fabric manager's restart banner too")
    assert retired.status == "retired" and store.list("confirmed") == []
    assert store.confirmed_rules() == [] and loadable_rules(store) == ([], [])
    stored = store.get(kept.id)
    assert stored is not None
    assert (stored.decided_by, stored.retired_by) == ("alice", "bob")
    assert stored.retired_reason == "fires on the fabric manager's restart banner too"
    assert stored.decided_at is not None and stored.retired_at is not None and stored.retired_at >= stored.decided_at
    assert [p.id for p in store.list("retired")] == [kept.id]
    again = store.propose(proposal())  # a retired pattern no longer blocks a fresh proposal of it
    assert again.id != kept.id and again.status == "pending"


def test_only_a_confirmed_rule_is_retired_and_only_with_a_reason(store: RuleStore) -> None:
    p = store.propose(proposal())
    with pytest.raises(KnowledgeError, match="only confirmed rules can be retired"):
        store.retire(p.id, "bob", "wrong")
    store.confirm(p.id, "alice")
    with pytest.raises(KnowledgeError, match="--reason"):
        store.retire(p.id, "bob", "  ")
    with pytest.raises(KnowledgeError, match="crashcart rules pending"):
        store.retire("prop-0000000000", "bob", "wrong")
    assert [r.id for r in store.confirmed_rules()] == [f"user.{p.id}"]

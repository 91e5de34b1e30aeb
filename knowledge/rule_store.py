"""The queue of proposed signature rules: proposals wait here until an operator confirms or rejects them.

The LLM agent and the template deriver (agent/proposals.py) propose regexes for failures the shipped rules do
not know. Nothing they propose reaches the fast filter until a person confirms it; confirmed proposals become
`Rule`s (id `user.<proposal id>`, provenance in `source`) that join the filter on the next run.

Every proposal the store accepts can be confirmed: `propose` refuses a pattern that RE2 or Hyperscan cannot
compile or that misses one of its own examples, so the operator never meets a queue entry that fails later. A
confirmed rule can still stop loading (another engine version, a store edited by hand): `loadable_rules` leaves it
out with the reason, so one broken rule never stops every triage.

A confirmed rule that turns out wrong is retired, not deleted: it leaves the fast filter (only `confirmed` ones load)
and keeps its whole history, who confirmed it and when, and who retired it, when and why.
"""

from __future__ import annotations

import builtins
import secrets
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import hyperscan
from pydantic import Field, ValidationError

from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.loading import describe
from crashcart.knowledge.records import Frozen
from crashcart.knowledge.rules import Rule
from crashcart.knowledge.sqlite_db import SqliteStore
from crashcart.knowledge.taxonomy import Action, FailureClass, Role

ProposalStatus = Literal["pending", "confirmed", "rejected", "retired"]
Origin = Literal["llm", "template"]
PENDING_HINT = "list the pending ones with `crashcart rules pending`"


def _now() -> datetime:
    return datetime.now(UTC)


class RuleProposal(Frozen):
    """A regex proposed for a failure the rules do not know, with the evidence it must match and who said so."""

    id: str = Field("", pattern=r"^(?:prop-[0-9a-f]{10})?$")  # "" until the store assigns one
    pattern: str = Field(min_length=1)
    failure_class: FailureClass
    action: Action | None = None
    role: Role = Role.ROOT_CAUSE
    # a root cause an operator confirmed is sure (confidence 0.8, agent.consult.SURE_FROM, when nothing else is
    # close): the model is not asked about it again, nor may it overrule it; specific shipped rules still outrank it
    priority: int = Field(63, ge=0, le=100)
    explanation: str = Field(min_length=8)  # why the line means this class (Rule requires 8 characters too)
    examples: list[str] = Field(min_length=1)  # the evidence lines the pattern must match
    origin: Origin
    model: str | None = None  # the LLM's name, or "drain3-template"
    job: str = Field(min_length=1)  # the job whose logs the evidence came from
    created_at: datetime = Field(default_factory=_now)
    status: ProposalStatus = "pending"
    decided_by: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None  # why it was rejected
    validation: list[str] = []  # notes from agent.proposals.validate_pattern
    # A confirmed rule retired later: decided_by/decided_at still say who confirmed it and when.
    retired_by: str | None = None
    retired_at: datetime | None = None
    retired_reason: str | None = None


def new_proposal_id() -> str:
    """A fresh proposal id: 40 random bits, plenty for a queue that a person reads."""
    return f"prop-{secrets.token_hex(5)}"


def hyperscan_database(pattern: str) -> hyperscan.Database:
    """The pattern alone in a block-mode database, with the fast filter's flags; KnowledgeError if it is refused."""
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        db.compile(expressions=[pattern.encode()], ids=[0], elements=1, flags=[hyperscan.HS_FLAG_MULTILINE])
    except hyperscan.error as exc:
        raise KnowledgeError(f"pattern {pattern!r} is rejected by Hyperscan ({exc}); rewrite it") from exc
    return db


def to_rule(p: RuleProposal, by: str, at: datetime) -> Rule:
    """The rule a proposal becomes once `by` confirms it `at`; KnowledgeError if it cannot be one."""
    model = p.model or p.origin
    try:
        rule = Rule(
            id=f"user.{p.id or 'prop-0000000000'}",
            pattern=p.pattern,
            failure_class=p.failure_class,
            action=p.action,
            role=p.role,
            priority=p.priority,
            explanation=p.explanation,
            examples=p.examples,
            source=f"confirmed:{by}@{at:%Y-%m-%d}:{p.job}:{model}",
        )
    except ValidationError as exc:
        raise KnowledgeError(
            f"proposed pattern {p.pattern!r} cannot become a rule: {describe(exc)}; fix the pattern or its examples"
        ) from exc
    hyperscan_database(p.pattern)
    return rule


def _decided(p: RuleProposal, status: ProposalStatus, by: str, reason: str | None = None) -> RuleProposal:
    """The proposal with the operator's decision recorded; only a pending one can be decided."""
    if not by.strip():
        raise KnowledgeError(f"say who decides on {p.id}: pass a non-empty `by` (the operator's name)")
    if p.status != "pending":
        when = f"{p.decided_at:%Y-%m-%d}" if p.decided_at else "earlier"
        raise KnowledgeError(
            f"rule proposal {p.id} is already {p.status} (by {p.decided_by}, {when}); only pending "
            f"proposals can be confirmed or rejected: {PENDING_HINT}"
        )
    if status == "rejected" and not (reason or "").strip():
        raise KnowledgeError(f"say why {p.id} is rejected: pass a non-empty reason")
    return p.model_copy(update={"status": status, "decided_by": by.strip(), "decided_at": _now(), "reason": reason})


def _retired(p: RuleProposal, by: str, reason: str) -> RuleProposal:
    """The proposal with its retirement recorded; only a confirmed rule can be retired, and only with a reason."""
    if p.status != "confirmed":
        raise KnowledgeError(
            f"rule proposal {p.id} is {p.status}, not confirmed: only confirmed rules can be retired "
            "(see them with `crashcart rules list --status confirmed`)"
        )
    if not by.strip():
        raise KnowledgeError(f"say who retires {p.id}: pass a non-empty --by")
    if not reason.strip():
        raise KnowledgeError(f"say why {p.id} is retired: pass a non-empty --reason")
    return p.model_copy(
        update={"status": "retired", "retired_by": by.strip(), "retired_at": _now(), "retired_reason": reason.strip()}
    )


def _unknown(id: str, where: str) -> KnowledgeError:
    return KnowledgeError(f"no rule proposal {id!r} in {where}: {PENDING_HINT}")


def _fresh(p: RuleProposal, id: str) -> RuleProposal:
    """What `propose` stores: a new pending record (a decision carried in by the caller is dropped)."""
    fresh = p.model_copy(update={"id": id, "status": "pending", "decided_by": None, "decided_at": None, "reason": None})
    to_rule(fresh, "check", fresh.created_at)  # refuse now what could never be confirmed
    return fresh


@runtime_checkable
class RuleStore(Protocol):
    """What the agent, the CLI and the fast filter need from the queue of proposed rules."""

    def propose(self, proposal: RuleProposal) -> RuleProposal:
        """Queue a proposal under a fresh id; a pattern already pending or confirmed returns that proposal."""
        ...

    def get(self, id: str) -> RuleProposal | None: ...

    def list(self, status: ProposalStatus | None = None) -> list[RuleProposal]:
        """Oldest first."""
        ...

    def confirm(self, id: str, by: str) -> Rule: ...

    def reject(self, id: str, by: str, reason: str) -> RuleProposal: ...

    def retire(self, id: str, by: str, reason: str) -> RuleProposal:
        """Take a confirmed rule out of the fast filter, keeping its history."""
        ...

    def confirmed_rules(self) -> builtins.list[Rule]:
        """Every confirmed proposal as a Rule, in the order they were proposed."""
        ...

    def close(self) -> None: ...


class SkippedRule(Frozen):
    """A confirmed rule left out of a run because it no longer becomes a rule, and why (one line)."""

    id: str
    pattern: str
    reason: str

    @property
    def warning(self) -> str:
        """The one line a run prints about it: which rule, why, and where to look."""
        return (
            f"skipped confirmed rule {self.id}: {self.reason}; the run went on without it (see it with `crashcart "
            f"rules show {self.id.removeprefix('user.')}`, propose a fixed one with `crashcart rules propose`)"
        )


def loadable_rules(store: RuleStore) -> tuple[builtins.list[Rule], builtins.list[SkippedRule]]:
    """The store's confirmed rules that still load (RE2, Hyperscan, their own examples), in proposal order, and
    the ones that do not, each with the reason."""
    rules: builtins.list[Rule] = []
    skipped: builtins.list[SkippedRule] = []
    for p in store.list("confirmed"):
        try:
            rules.append(to_rule(p, p.decided_by or "?", p.decided_at or p.created_at))
        except KnowledgeError as exc:
            reason = " ".join(str(exc).split())  # engine messages may span lines; a warning is one
            skipped.append(SkippedRule(id=f"user.{p.id}", pattern=p.pattern, reason=reason))
    return rules, skipped


class MemoryRuleStore:
    """Everything in process memory: for tests and one-off runs."""

    def __init__(self) -> None:
        self._items: dict[str, RuleProposal] = {}  # insertion order is proposal order
        self._lock = threading.Lock()

    def propose(self, proposal: RuleProposal) -> RuleProposal:
        with self._lock:
            for p in self._items.values():
                if p.pattern == proposal.pattern and p.status in ("pending", "confirmed"):
                    return p
            id = new_proposal_id()
            while id in self._items:
                id = new_proposal_id()
            stored = self._items[id] = _fresh(proposal, id)
            return stored

    def get(self, id: str) -> RuleProposal | None:
        return self._items.get(id)

    def list(self, status: ProposalStatus | None = None) -> list[RuleProposal]:
        return [p for p in self._items.values() if status is None or p.status == status]

    def confirm(self, id: str, by: str) -> Rule:
        with self._lock:
            p = _decided(self._get(id), "confirmed", by)
            rule = to_rule(p, p.decided_by or by, p.decided_at or _now())
            self._items[id] = p
            return rule

    def reject(self, id: str, by: str, reason: str) -> RuleProposal:
        with self._lock:
            p = self._items[id] = _decided(self._get(id), "rejected", by, reason)
            return p

    def retire(self, id: str, by: str, reason: str) -> RuleProposal:
        with self._lock:
            p = self._items[id] = _retired(self._get(id), by, reason)
            return p

    def confirmed_rules(self) -> builtins.list[Rule]:
        return [to_rule(p, p.decided_by or "?", p.decided_at or p.created_at) for p in self.list("confirmed")]

    def close(self) -> None:
        """Nothing to release; here so both stores can be used the same way."""

    def _get(self, id: str) -> RuleProposal:
        p = self._items.get(id)
        if p is None:
            raise _unknown(id, "the in-memory rule store")
        return p


SCHEMA_VERSION = 1
_LIVE = "('pending', 'confirmed')"
_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS proposals (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT UNIQUE NOT NULL,
        pattern TEXT NOT NULL,
        status TEXT NOT NULL,
        body TEXT NOT NULL  -- the RuleProposal as JSON
    )""",
    # At most one live proposal per pattern, whoever writes: the database enforces the dedupe.
    f"CREATE UNIQUE INDEX IF NOT EXISTS proposals_live_pattern ON proposals (pattern) WHERE status IN {_LIVE}",
    "CREATE INDEX IF NOT EXISTS proposals_status ON proposals (status, seq)",
]


class SqliteRuleStore(SqliteStore):
    """The durable queue: one SQLite file (WAL, busy timeout), safe with several processes writing at once.

    Each write is one BEGIN IMMEDIATE transaction, so a dedupe check and its insert, or a status check and its
    decision, cannot interleave with another process's. synchronous=NORMAL: a killed process never loses a
    committed proposal.
    """

    def __init__(self, path: str | Path) -> None:
        self._open(path, "a rule store")
        with self._closing_on_error():
            self._init_schema(SCHEMA_VERSION, _SCHEMA)

    def _query(self, sql: str, args: tuple[object, ...] = ()) -> builtins.list[RuleProposal]:
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [RuleProposal.model_validate_json(body) for (body,) in rows]

    def propose(self, proposal: RuleProposal) -> RuleProposal:
        with self._write() as db:
            while True:
                row = db.execute(
                    f"SELECT body FROM proposals WHERE pattern = ? AND status IN {_LIVE}", (proposal.pattern,)
                ).fetchone()
                if row:
                    return RuleProposal.model_validate_json(row[0])
                stored = _fresh(proposal, new_proposal_id())
                try:
                    db.execute(
                        "INSERT INTO proposals (id, pattern, status, body) VALUES (?, ?, ?, ?)",
                        (stored.id, stored.pattern, stored.status, stored.model_dump_json()),
                    )
                    return stored
                except sqlite3.IntegrityError:  # the id is taken: draw another (the pattern is checked again)
                    continue

    def get(self, id: str) -> RuleProposal | None:
        found = self._query("SELECT body FROM proposals WHERE id = ?", (id,))
        return found[0] if found else None

    def list(self, status: ProposalStatus | None = None) -> list[RuleProposal]:
        if status is None:
            return self._query("SELECT body FROM proposals ORDER BY seq")
        return self._query("SELECT body FROM proposals WHERE status = ? ORDER BY seq", (status,))

    def confirm(self, id: str, by: str) -> Rule:
        with self._write() as db:
            p = _decided(self._get(db, id), "confirmed", by)
            rule = to_rule(p, p.decided_by or by, p.decided_at or _now())
            self._update(db, p)
        return rule

    def reject(self, id: str, by: str, reason: str) -> RuleProposal:
        with self._write() as db:
            p = _decided(self._get(db, id), "rejected", by, reason)
            self._update(db, p)
        return p

    def retire(self, id: str, by: str, reason: str) -> RuleProposal:
        with self._write() as db:
            p = _retired(self._get(db, id), by, reason)
            self._update(db, p)
        return p

    def confirmed_rules(self) -> builtins.list[Rule]:
        return [to_rule(p, p.decided_by or "?", p.decided_at or p.created_at) for p in self.list("confirmed")]

    def _get(self, db: sqlite3.Connection, id: str) -> RuleProposal:
        row = db.execute("SELECT body FROM proposals WHERE id = ?", (id,)).fetchone()
        if row is None:
            raise _unknown(id, str(self.path))
        return RuleProposal.model_validate_json(row[0])

    @staticmethod
    def _update(db: sqlite3.Connection, p: RuleProposal) -> None:
        db.execute("UPDATE proposals SET status = ?, body = ? WHERE id = ?", (p.status, p.model_dump_json(), p.id))

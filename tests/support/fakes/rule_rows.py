"""A rule store holding a confirmed rule that no longer compiles, as an older crashcart or a hand edit leaves one.

The row is written straight into the SQLite file: nothing on the way in checks its pattern, which is the point.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from crashcart.knowledge.rule_store import RuleProposal, SqliteRuleStore
from crashcart.knowledge.taxonomy import FailureClass

BROKEN_ID = "prop-0123456789"


def store_with_a_broken_rule(path: Path) -> Path:
    """A new rule store at path whose one confirmed rule RE2 refuses (a missing parenthesis)."""
    SqliteRuleStore(path).close()
    broken = RuleProposal(
        id=BROKEN_ID,
        pattern=r"NVSwitch (\d+ fatal error",  # RE2: missing )
        failure_class=FailureClass.GPU_HARDWARE,
        explanation="An NVSwitch fatal error halts the GPU partition.",
        examples=["NVSwitch 3 fatal error"],
        origin="llm",
        job="job-1",
        status="confirmed",
        decided_by="alice",
        decided_at=datetime.now(UTC),
    )
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO proposals (id, pattern, status, body) VALUES (?, ?, ?, ?)",
            (broken.id, broken.pattern, broken.status, broken.model_dump_json()),
        )
    conn.close()
    return path

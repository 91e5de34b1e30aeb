"""Where a batch keeps each job's result as it completes, so a killed or repeated batch resumes.

One SQLite file (WAL, busy timeout, a schema version), keyed by job id. Only the process that runs the batch
writes (workers send their results back), but a second batch or a reader may open the same file at once.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError

from crashcart.batch.models import BatchResult
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.sqlite_db import SqliteStore

SCHEMA_VERSION = 1
RESULTS_ENV = "CRASHCART_BATCH_RESULTS"
_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS results (
        job_id TEXT PRIMARY KEY,
        logs_key TEXT NOT NULL,
        status TEXT NOT NULL,
        body TEXT NOT NULL  -- the BatchResult as JSON
    )""",
]


def default_results_path() -> Path:
    """$CRASHCART_BATCH_RESULTS, else $XDG_DATA_HOME/crashcart/batch.db (~/.local/share/crashcart/batch.db)."""
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    from crashcart.stores import data_dir  # lazy: crashcart.stores loads the incident store (faiss)

    return data_dir() / "batch.db"


class ResultStore(SqliteStore):
    """Batch results by job id; `put` replaces a job's earlier result. Use as a context manager to close it."""

    def __init__(self, path: str | Path) -> None:
        self._open(path, "a batch result store", fix="give another with --results PATH", error=InputError)
        with self._closing_on_error():
            self._init_schema(SCHEMA_VERSION, _SCHEMA)

    def _read(self, sql: str, args: tuple = ()) -> list[BatchResult]:
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [r for r in (_parse(body) for (body,) in rows) if r is not None]

    def get(self, job_id: str) -> BatchResult | None:
        found = self._read("SELECT body FROM results WHERE job_id = ?", (job_id,))
        return found[0] if found else None

    def put(self, result: BatchResult) -> None:
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO results (job_id, logs_key, status, body) VALUES (?, ?, ?, ?)",
                (result.job.job_id, result.logs_key, result.status, result.model_dump_json()),
            )

    def all(self) -> list[BatchResult]:
        return self._read("SELECT body FROM results ORDER BY job_id")

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]


def _parse(body: str) -> BatchResult | None:
    """A stored result, or None when an older crashcart wrote it in a shape this one no longer reads: the job
    is then triaged again, which is what a missing result means."""
    try:
        return BatchResult.model_validate_json(body)
    except ValidationError:
        return None

"""What crashcart's SQLite stores share: a connection safe with several writer processes, and transactions.

WAL lets readers go on while one process writes; BEGIN IMMEDIATE takes the write lock up front, waiting up to
the busy timeout, so concurrent writers queue instead of failing.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TypeVar

from crashcart.knowledge.errors import CrashcartError, KnowledgeError

BUSY_TIMEOUT_S = 60.0


def connect(
    path: Path, what: str, fix: str = "give another store path", error: type[CrashcartError] = KnowledgeError
) -> sqlite3.Connection:
    """An autocommit connection to path (created if missing) in WAL mode; `what` and `fix` go into errors."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        _enable_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
    except (OSError, sqlite3.DatabaseError) as exc:
        raise error(f"{path}: cannot open as {what} ({exc}); check the path and its permissions, or {fix}") from exc
    return conn


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL, retrying: SQLite answers 'locked' at once, without its busy handler, while another
    process creating the same new database holds the lock the switch needs."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.005, 0.05))


@contextmanager
def write_transaction(conn: sqlite3.Connection, lock: threading.RLock) -> Iterator[sqlite3.Connection]:
    """One write transaction, committed on success and rolled back on any exception."""
    with lock:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


@contextmanager
def read_transaction(conn: sqlite3.Connection, lock: threading.RLock) -> Iterator[sqlite3.Connection]:
    """One read transaction: every query in it sees the same snapshot (WAL)."""
    with lock:
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")


S = TypeVar("S", bound="SqliteStore")


class SqliteStore:
    """The lifecycle every SQLite-backed store shares: one connection and its lock, write transactions, close."""

    path: Path
    _conn: sqlite3.Connection
    _lock: threading.RLock

    def _open(
        self,
        path: str | Path,
        what: str,
        fix: str = "give another store path",
        error: type[CrashcartError] = KnowledgeError,
    ) -> None:
        self.path = Path(path)
        self._what, self._fix, self._error = what, fix, error
        self._lock = threading.RLock()
        self._conn = connect(self.path, what, fix, error)

    def _init_schema(self, version: int, tables: Sequence[str], meta: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
        """Create the tables and the meta rows a new store starts with, and return the meta rows.

        A file written by a newer schema is refused rather than misread: its rows may carry fields this
        version would drop on the next write.
        """
        try:
            with self._write() as db:
                db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
                found = int(dict(db.execute("SELECT key, value FROM meta")).get("schema_version", "0"))
                if found > version:
                    raise self._error(
                        f"{self.path}: {self._what} whose schema v{found} was written by a newer "
                        f"crashcart (this one reads up to v{version}); upgrade crashcart to open it, "
                        f"or {self._fix}"
                    )
                for stmt in tables:
                    db.execute(stmt)
                db.executemany(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", [("schema_version", str(version)), *meta]
                )
                return dict(db.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:
            raise self._error(f"{self.path}: not usable as {self._what} ({exc}); {self._fix}") from exc

    @contextmanager
    def _closing_on_error(self) -> Iterator[None]:
        """Around a store's set-up: a store that fails to open leaves no connection behind."""
        try:
            yield
        except BaseException:
            self._conn.close()
            raise

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        return write_transaction(self._conn, self._lock)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

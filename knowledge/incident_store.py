"""The incident memory: a small store protocol, an in-memory store for tests and the durable SQLite one.

Both rank by cosine similarity of fingerprint embeddings (inner products of unit rows). A fingerprint with
no features embeds to a zero row and is similar to nothing: its search returns [].

Storing is idempotent. An incident without an id gets one derived from its content (fingerprint, class, action,
provenance.job: `incident_io.content_ids`), so the same failure added twice, `cases add --labels` run twice on a
set or an export imported twice lands on the same id and is stored once. An incident whose id is already stored
*as the same incident* is a no-op that returns the stored one, or, when it brings a resolution or a confirmation
the stored one lacks, completes the stored one in place (same id, created_at and source; nothing already stored
is overwritten). Why: duplicates would weigh memory's vote as if a failure had been seen twice, and an operator
who confirms, then adds how it was resolved, means one incident. The rules of `incident_io.place` decide every
case for both stores, so they behave the same. Records stored under a chosen id (or a random one, as before ids
were derived) are matched by id only, not to a twin of the same content under another id.
"""

from __future__ import annotations

import builtins
import secrets
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Protocol, runtime_checkable

import faiss
import numpy as np

from crashcart.knowledge.embeddings import Embedder, HashingEmbedder, get_embedder
from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.incident_index import IndexFiles, VectorIndex, catch_up
from crashcart.knowledge.incident_io import place, read_jsonl, sort_time, write_jsonl
from crashcart.knowledge.incidents import Fingerprint, Incident
from crashcart.knowledge.sqlite_db import SqliteStore, read_transaction


@runtime_checkable
class IncidentStore(Protocol):
    """What triage, the CLI and the bot need from an incident memory."""

    def add(self, incident: Incident) -> Incident:
        """Store one incident and return it as stored. An empty id gets its content id; an id already stored as
        the same incident returns the stored one (completed with a resolution/confirmation it lacked); an id
        already stored as another incident raises ValueError."""
        ...

    def add_many(self, incidents: Iterable[Incident]) -> list[Incident]:
        """Store several in one transaction, all or none; one stored incident per input, in order (the same
        incident twice in the batch is stored once)."""
        ...

    def get(self, id: str) -> Incident | None: ...

    def ids_with_prefix(self, prefix: str, limit: int = 20) -> builtins.list[str]:
        """The stored ids that start with prefix, sorted, at most limit of them ([] for an empty prefix)."""
        ...

    def remove(self, id: str) -> bool: ...

    def list(self, limit: int = 50, offset: int = 0, failure_class: str | None = None) -> list[Incident]:
        """Newest first (by provenance.created_at, then insertion)."""
        ...

    def count(self) -> int: ...

    def search(self, fingerprint: Fingerprint, k: int = 5) -> builtins.list[tuple[Incident, float]]:
        """The k most similar incidents with their cosine similarity, best first."""
        ...

    def export_jsonl(self, fh: IO[str]) -> int: ...

    def import_jsonl(self, fh: IO[str], source: str = "import") -> int:
        """Add every incident of a JSONL stream, all or none; returns how many were new to the store.

        Ids are kept; one already stored as the same incident is not added again (its resolution/confirmation
        may complete the stored one), one taken by another incident is renewed to the content id."""
        ...

    def close(self) -> None: ...


class MemoryIncidentStore:
    """Everything in process memory, brute-force search: for tests and one-off evaluations."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder: Embedder = embedder or HashingEmbedder()
        self._items: dict[str, tuple[int, Incident, np.ndarray]] = {}  # id -> (insertion seq, incident, vector)
        self._seq = 0

    def add(self, incident: Incident) -> Incident:
        return self.add_many([incident])[0]

    def add_many(self, incidents: Iterable[Incident]) -> list[Incident]:
        return self._insert(list(incidents), renew_on_clash=False)[0]

    def _insert(self, incidents: list[Incident], renew_on_clash: bool) -> tuple[list[Incident], int]:
        """(one stored incident per input, how many were new): staged first, so a clash changes nothing."""
        vectors = self.embedder.embed([i.fingerprint.text() for i in incidents])
        staged: dict[str, tuple[int, Incident, np.ndarray]] = {}

        def lookup(id: str) -> Incident | None:
            item = staged.get(id) or self._items.get(id)
            return item[1] if item else None

        ids, seq, added = [], self._seq, 0
        for incident, vector in zip(incidents, vectors, strict=True):
            outcome, incident = place(incident, lookup, renew_on_clash)
            if outcome == "clash":
                raise ValueError(f"incident {incident.id} is already in the store: remove it or add it without id")
            if outcome == "insert":
                seq, added = seq + 1, added + 1
                staged[incident.id] = (seq, incident, vector)
            elif outcome == "update":  # same place in the insertion order, same vector (same fingerprint)
                old_seq, _, old_vector = staged.get(incident.id) or self._items[incident.id]
                staged[incident.id] = (old_seq, incident, old_vector)
            ids.append(incident.id)
        self._items.update(staged)
        self._seq = seq
        return [self._items[i][1] for i in ids], added

    def get(self, id: str) -> Incident | None:
        item = self._items.get(id)
        return item[1] if item else None

    def ids_with_prefix(self, prefix: str, limit: int = 20) -> builtins.list[str]:
        return sorted(i for i in self._items if prefix and i.startswith(prefix))[:limit]

    def remove(self, id: str) -> bool:
        return self._items.pop(id, None) is not None

    def list(self, limit: int = 50, offset: int = 0, failure_class: str | None = None) -> list[Incident]:
        items = [
            (seq, inc)
            for seq, inc, _ in self._items.values()
            if failure_class is None or inc.failure_class == failure_class
        ]
        items.sort(key=lambda s: (sort_time(s[1].provenance.created_at), s[0]), reverse=True)
        return [inc for _, inc in items[offset : offset + limit]]

    def count(self) -> int:
        return len(self._items)

    def search(self, fingerprint: Fingerprint, k: int = 5) -> builtins.list[tuple[Incident, float]]:
        query = self.embedder.embed([fingerprint.text()])[0]
        if not self._items or k <= 0 or not query.any():
            return []
        incidents = [inc for _, inc, _ in self._items.values()]
        scores = np.stack([vec for _, _, vec in self._items.values()]) @ query
        best = np.argsort(-scores, kind="stable")[:k]
        return [(incidents[i], float(scores[i])) for i in best]

    def export_jsonl(self, fh: IO[str]) -> int:
        return write_jsonl((inc for _, inc, _ in sorted(self._items.values(), key=lambda s: s[0])), fh)

    def import_jsonl(self, fh: IO[str], source: str = "import") -> int:
        return self._insert(read_jsonl(fh, source), renew_on_clash=True)[1]

    def close(self) -> None:
        """Nothing to release; here so both stores can be used the same way."""


SCHEMA_VERSION = 1
_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS incidents (
        rowid INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT UNIQUE NOT NULL,
        created_at TEXT,
        failure_class TEXT,
        body TEXT NOT NULL,   -- the Incident as JSON
        vector BLOB NOT NULL  -- float32 little-endian, meta.dim wide
    )""",
    "CREATE INDEX IF NOT EXISTS incidents_created ON incidents (created_at)",
    "CREATE INDEX IF NOT EXISTS incidents_class ON incidents (failure_class, created_at)",
]
_INSERT = "INSERT INTO incidents (id, created_at, failure_class, body, vector) VALUES (?, ?, ?, ?, ?)"
_UPDATE_BODY = "UPDATE incidents SET body = ? WHERE id = ?"  # a completed incident: same fingerprint, same vector
_BUMP = "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
_MARK_REBUILD = (
    "UPDATE meta SET value = (SELECT value FROM meta WHERE key = 'generation') WHERE key = 'rebuild_generation'"
)


class SqliteIncidentStore(SqliteStore):
    """The durable store: SQLite (WAL, busy timeout) holds the truth; a faiss index beside it is a rebuildable cache.

    Several processes may write at once (the bot, batch triage): each add/remove bumps `generation` in its own
    transaction, and a remove also records it as `rebuild_generation`. A search whose index lags the database
    appends the rows past its max rowid (AUTOINCREMENT never reuses one) when only adds happened since, and
    rebuilds it otherwise. synchronous=NORMAL: a killed process never loses a committed incident; a power loss
    may drop the last few commits but never corrupts the file.

    The store remembers its embedder's name (a spec for `get_embedder`) and dim. Opened with no embedder it
    uses that one; opened with a different one it refuses with KnowledgeError, unless it is empty or
    `reembed=True`, which re-embeds every incident with the new embedder in one transaction.
    """

    def __init__(self, path: str | Path, embedder: Embedder | None = None, *, reembed: bool = False) -> None:
        self._open(path, "an incident store", fix="give another store path or restore it from an export")
        self._files = IndexFiles(self.path)
        self._index: VectorIndex | None = None
        with self._closing_on_error():
            offered = embedder or HashingEmbedder()
            meta = self._init_schema(
                SCHEMA_VERSION,
                _SCHEMA,
                [
                    ("store_uid", secrets.token_hex(8)),
                    ("generation", "0"),
                    ("rebuild_generation", "0"),
                    ("embedder", offered.name),
                    ("dim", str(offered.dim)),
                ],
            )
            self._uid = meta["store_uid"]
            self.embedder = self._resolve_embedder(meta, embedder, offered, reembed)

    # -- opening -------------------------------------------------------------------------------------------

    def _resolve_embedder(
        self, meta: dict[str, str], given: Embedder | None, offered: Embedder, reembed: bool
    ) -> Embedder:
        stored, dim = meta["embedder"], int(meta["dim"])
        if (offered.name, offered.dim) == (stored, dim):
            return offered
        if given is None:
            try:
                found = get_embedder(stored)
            except (ValueError, RuntimeError) as exc:
                raise KnowledgeError(
                    f"{self.path} was built with embedder {stored!r}, which cannot be loaded "
                    f"here ({exc}); install what it needs or open it with reembed=True"
                ) from exc
            if found.dim != dim:
                raise KnowledgeError(
                    f"{self.path}: embedder {stored!r} now gives dim {found.dim}, the store holds "
                    f"dim {dim}; open it with reembed=True to re-embed its incidents"
                )
            return found
        if not reembed and self.count():
            raise KnowledgeError(
                f"{self.path} holds vectors of embedder {stored!r} (dim {dim}), not {given.name!r} "
                f"(dim {given.dim}): open it without an embedder to keep {stored!r}, or with reembed=True "
                f"to re-embed its {self.count()} incidents with {given.name!r}"
            )
        self._reembed(given)
        return given

    def _reembed(self, embedder: Embedder) -> None:
        """Replace every vector and the stored embedder in one transaction; the index is then rebuilt."""
        with self._write() as db:
            rows = db.execute("SELECT rowid, body FROM incidents").fetchall()
            texts = [Incident.model_validate_json(body).fingerprint.text() for _, body in rows]
            vectors = embedder.embed(texts) if rows else np.zeros((0, embedder.dim), np.float32)
            db.executemany(
                "UPDATE incidents SET vector = ? WHERE rowid = ?",
                [(_blob(v), rowid) for (rowid, _), v in zip(rows, vectors, strict=True)],
            )
            db.executemany(
                "UPDATE meta SET value = ? WHERE key = ?", [(embedder.name, "embedder"), (str(embedder.dim), "dim")]
            )
            db.execute(_BUMP)
            db.execute(_MARK_REBUILD)

    def _check_embedder(self, db: sqlite3.Connection) -> None:
        """Refuse to mix vectors: another process may have re-embedded the store since this one opened it."""
        meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')"))
        if (meta["embedder"], int(meta["dim"])) != (self.embedder.name, self.embedder.dim):
            raise KnowledgeError(
                f"{self.path} was re-embedded with {meta['embedder']!r} after this process opened "
                f"it with {self.embedder.name!r}; reopen the store"
            )

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        return read_transaction(self._conn, self._lock)

    # -- the protocol --------------------------------------------------------------------------------------

    def add(self, incident: Incident) -> Incident:
        return self._insert([incident], renew_on_clash=False)[0][0]

    def add_many(self, incidents: Iterable[Incident]) -> list[Incident]:
        return self._insert(list(incidents), renew_on_clash=False)[0]

    def _insert(self, incidents: list[Incident], renew_on_clash: bool) -> tuple[list[Incident], int]:
        """(one stored incident per input, how many were new), in one write transaction: a clash rolls back all.

        The lookups run inside the transaction (BEGIN IMMEDIATE), so two processes adding the same incident at
        once still store it once: the second sees the first's row."""
        vectors = (
            self.embedder.embed([i.fingerprint.text() for i in incidents])
            if incidents
            else np.zeros((0, self.embedder.dim), np.float32)
        )
        final: dict[str, Incident] = {}
        ids: list[str] = []
        added = 0
        with self._write() as db:
            self._check_embedder(db)

            def lookup(id: str) -> Incident | None:
                if id in final:
                    return final[id]
                row = db.execute("SELECT body FROM incidents WHERE id = ?", (id,)).fetchone()
                return Incident.model_validate_json(row[0]) if row else None

            for incident, vector in zip(incidents, vectors, strict=True):
                outcome, incident = place(incident, lookup, renew_on_clash)
                if outcome == "clash":
                    raise ValueError(
                        f"incident {incident.id} is already in {self.path}: remove it first or add it without id"
                    )
                if outcome == "insert":
                    row = (
                        incident.id,
                        sort_time(incident.provenance.created_at),
                        incident.failure_class.value,
                        incident.model_dump_json(),
                        _blob(vector),
                    )
                    db.execute(_INSERT, row)
                    added += 1
                elif outcome == "update":
                    db.execute(_UPDATE_BODY, (incident.model_dump_json(), incident.id))
                final[incident.id] = incident
                ids.append(incident.id)
            if added:  # an update leaves rows and vectors as they were: the index stays current
                db.execute(_BUMP)
        return [final[i] for i in ids], added

    def get(self, id: str) -> Incident | None:
        with self._lock:
            row = self._conn.execute("SELECT body FROM incidents WHERE id = ?", (id,)).fetchone()
        return Incident.model_validate_json(row[0]) if row else None

    def ids_with_prefix(self, prefix: str, limit: int = 20) -> builtins.list[str]:
        if not prefix:
            return []
        # A range over the UNIQUE index on id (LIKE would scan and treat _ and % as wildcards); ids sort as
        # their UTF-8 bytes, so the range ends at the prefix with its last character bumped.
        args: tuple[int | str, ...]
        if prefix[-1] == chr(0x10FFFF):
            sql, args = "SELECT id FROM incidents WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT ?", (len(prefix), prefix)
        else:
            upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            sql, args = "SELECT id FROM incidents WHERE id >= ? AND id < ? ORDER BY id LIMIT ?", (prefix, upper)
        with self._lock:
            rows = self._conn.execute(sql, (*args, limit)).fetchall()
        return [i for (i,) in rows]

    def remove(self, id: str) -> bool:
        with self._write() as db:
            removed = db.execute("DELETE FROM incidents WHERE id = ?", (id,)).rowcount > 0
            if removed:
                db.execute(_BUMP)
                db.execute(_MARK_REBUILD)
        return removed

    def list(self, limit: int = 50, offset: int = 0, failure_class: str | None = None) -> list[Incident]:
        where, args = (
            ("WHERE failure_class = ?", [getattr(failure_class, "value", failure_class)])
            if failure_class is not None
            else ("", [])
        )
        sql = f"SELECT body FROM incidents {where} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?"
        with self._lock:
            rows = self._conn.execute(sql, [*args, limit, offset]).fetchall()
        return [Incident.model_validate_json(body) for (body,) in rows]

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM incidents").fetchone()[0])

    def search(self, fingerprint: Fingerprint, k: int = 5) -> builtins.list[tuple[Incident, float]]:
        query = self.embedder.embed([fingerprint.text()])[0]
        if k <= 0 or not query.any():
            return []
        index = self._fresh_index()
        with _one_openmp_thread():
            hits = index.search(query, k)
        marks = ",".join("?" * len(hits))
        with self._lock:
            bodies = dict(
                self._conn.execute(
                    f"SELECT rowid, body FROM incidents WHERE rowid IN ({marks})", [r for r, _ in hits]
                ).fetchall()
            )
        # A row removed by another process since the index was brought up to date is skipped.
        return [(Incident.model_validate_json(bodies[r]), score) for r, score in hits if r in bodies]

    def export_jsonl(self, fh: IO[str]) -> int:
        n = 0
        with self._read() as db:
            for (body,) in db.execute("SELECT body FROM incidents ORDER BY rowid"):
                fh.write(body + "\n")
                n += 1
        return n

    def import_jsonl(self, fh: IO[str], source: str = "import") -> int:
        return self._insert(read_jsonl(fh, source), renew_on_clash=True)[1]

    # -- the index -----------------------------------------------------------------------------------------

    def _meta_int(self, key: str) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0])

    def _fresh_index(self) -> VectorIndex:
        """The index as of the database's current generation: in memory, else from disk, else rebuilt."""
        with self._lock:
            if self._index is not None and self._index.generation == self._meta_int("generation"):
                return self._index
            with self._files.locked():
                name, dim = self.embedder.name, self.embedder.dim
                disk = self._files.read_meta(self._uid, name, dim)
                base = self._index
                # Reading 100 MB from disk only pays when the index in memory would otherwise be rebuilt.
                if disk is not None and (base is None or base.generation < self._meta_int("rebuild_generation")):
                    base = self._files.load(disk)
                    disk = disk if base is not None else None  # an unreadable file counts as none
                with self._read() as db:
                    self._check_embedder(db)
                    index, rebuilt = catch_up(db, base, dim)
                # Rewriting a 100 MB index for every new incident would cost more than the append it saves:
                # save after a rebuild, or once the rows differ from the file's by 1%.
                if rebuilt or disk is None or 100 * abs(index.index.ntotal - disk.ntotal) >= index.index.ntotal:
                    self._files.save(index, self._uid, name)
            self._index = index
            return index


_OPENMP = threading.Lock()


@contextmanager
def _one_openmp_thread() -> Iterator[None]:
    """faiss's OpenMP threads for one query over a flat index. With every core busy (a shared CI box, the bot
    beside training jobs) its threads wait on each other: top-5 over 100k incidents took a median 50-110 ms with
    2 threads and 10-16 ms with one, on a loaded 2-core machine (benchmarks/bench_memory.py). The thread count is
    process-wide, hence the lock; it is put back for whatever else in the process uses faiss."""
    with _OPENMP:
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            yield
        finally:
            faiss.omp_set_num_threads(threads)


def _blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()

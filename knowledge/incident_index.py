"""The faiss index beside an incident database: a cache of its vectors that can always be rebuilt from it.

`<db>.faiss` holds an IndexIDMap2(IndexFlatIP) keyed by the incidents' rowids; `<db>.faiss.json` says which
store, embedder and database generation it reflects, plus the index file's size and digest, so a missing,
torn, corrupt or foreign index is detected before faiss reads it and simply rebuilt. Writers replace both
files atomically (temp file, fsync, os.replace) under an exclusive flock on `<db>.lock`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np
from pydantic import ValidationError

from crashcart.knowledge.records import Strict

INDEX_VERSION = 1


class IndexMeta(Strict):
    """The sidecar: what the index file reflects, and how to tell it is the file that was written."""

    version: int = INDEX_VERSION
    store_uid: str
    embedder: str
    dim: int
    generation: int
    max_rowid: int
    ntotal: int
    size: int
    blake2b: str


@dataclass
class VectorIndex:
    """An in-memory index and the database state it reflects."""

    index: faiss.IndexIDMap2
    generation: int
    max_rowid: int

    @classmethod
    def empty(cls, dim: int) -> VectorIndex:
        return cls(faiss.IndexIDMap2(faiss.IndexFlatIP(dim)), generation=-1, max_rowid=0)

    def append(self, rowids: np.ndarray, vectors: np.ndarray) -> None:
        if len(rowids):
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), rowids.astype(np.int64))
            self.max_rowid = max(self.max_rowid, int(rowids.max()))

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(rowid, inner product) best first; at most k, fewer when the index holds fewer."""
        if self.index.ntotal == 0 or k <= 0:
            return []
        scores, ids = self.index.search(np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), k)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]


@dataclass(frozen=True)
class IndexFiles:
    """Where one database's index, sidecar and lock live."""

    db: Path

    @property
    def index(self) -> Path:
        return self.db.with_name(self.db.name + ".faiss")

    @property
    def sidecar(self) -> Path:
        return self.db.with_name(self.db.name + ".faiss.json")

    @property
    def lock(self) -> Path:
        return self.db.with_name(self.db.name + ".lock")

    @contextmanager
    def locked(self) -> Iterator[None]:
        """An exclusive lock across processes, so one rebuilds and saves while the others wait and reuse."""
        with open(self.lock, "a+b") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def read_meta(self, store_uid: str, embedder: str, dim: int) -> IndexMeta | None:
        """The sidecar when it exists, parses and belongs to this store and embedder; else None."""
        try:
            meta = IndexMeta.model_validate_json(self.sidecar.read_bytes())
        except (OSError, ValidationError, ValueError):
            return None
        if (meta.version, meta.store_uid, meta.embedder, meta.dim) != (INDEX_VERSION, store_uid, embedder, dim):
            return None
        return meta

    def load(self, meta: IndexMeta) -> VectorIndex | None:
        """The index file the sidecar describes, or None when it is missing, torn, corrupt or not ours."""
        try:
            data = self.index.read_bytes()
        except OSError:
            return None
        if len(data) != meta.size or _digest(data) != meta.blake2b:
            return None
        try:
            index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        except RuntimeError:
            return None
        if not isinstance(index, faiss.IndexIDMap2) or index.d != meta.dim or index.ntotal != meta.ntotal:
            return None
        return VectorIndex(index, generation=meta.generation, max_rowid=meta.max_rowid)

    def save(self, vi: VectorIndex, store_uid: str, embedder: str) -> None:
        """Write the index, then its sidecar, each atomically; a crash between leaves a mismatch that is rebuilt."""
        data = faiss.serialize_index(vi.index).tobytes()
        meta = IndexMeta(
            store_uid=store_uid,
            embedder=embedder,
            dim=vi.index.d,
            generation=vi.generation,
            max_rowid=vi.max_rowid,
            ntotal=vi.index.ntotal,
            size=len(data),
            blake2b=_digest(data),
        )
        _atomic_write(self.index, data)
        _atomic_write(self.sidecar, json.dumps(meta.model_dump(), indent=1).encode())


def catch_up(db: sqlite3.Connection, base: VectorIndex | None, dim: int) -> tuple[VectorIndex, bool]:
    """`base` brought to the database's generation, and whether it had to be rebuilt.

    Run inside one read transaction, so the generations, rows and count are one snapshot. Only adds since
    `base` (no remove at or after its generation): append the rows past its max rowid (AUTOINCREMENT never
    reuses one). Otherwise, or when the count disagrees after all, rebuild from every row.
    """
    meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('generation', 'rebuild_generation')"))
    generation, rebuild = int(meta["generation"]), int(meta["rebuild_generation"])
    rebuilt = base is None or not rebuild <= base.generation <= generation
    if rebuilt or base is None:
        base = VectorIndex.empty(dim)
    if base.generation != generation:
        _append_rows(db, base, dim)
    if base.index.ntotal != db.execute("SELECT count(*) FROM incidents").fetchone()[0]:
        base, rebuilt = VectorIndex.empty(dim), True
        _append_rows(db, base, dim)
    base.generation = generation
    return base, rebuilt


def _append_rows(db: sqlite3.Connection, index: VectorIndex, dim: int) -> None:
    rows = db.execute(
        "SELECT rowid, vector FROM incidents WHERE rowid > ? ORDER BY rowid", (index.max_rowid,)
    ).fetchall()
    rowids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
    vectors = np.frombuffer(b"".join(v for _, v in rows), dtype="<f4").reshape(len(rows), dim)
    index.append(rowids, vectors)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)

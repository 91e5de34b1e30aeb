"""Tests for knowledge/incident_store.py (both stores) and the faiss index files of the SQLite one."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import islice
from pathlib import Path

import faiss
import pytest

from crashcart.knowledge.embeddings import HashingEmbedder
from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.incident_io import content_ids
from crashcart.knowledge.incident_store import IncidentStore, MemoryIncidentStore, SqliteIncidentStore
from crashcart.knowledge.incidents import Fingerprint, Incident, Provenance
from crashcart.knowledge.taxonomy import Action, FailureClass

FAMILIES: dict[FailureClass, list[str]] = {
    FailureClass.NETWORK: [
        "rule:net.ib_completion_error",
        "NCCL WARN NET/IB : Got completion from peer <IP> with status=<NUM> opcode=<NUM> vendor err <NUM> (Recv)",
        "NCCL INFO transport/net.cc:<NUM> -> <NUM>",
        "NCCL INFO proxy.cc:<NUM> -> <NUM> [Progress Thread]",
    ],
    FailureClass.GPU_OOM: [
        "rule:memory.cuda_oom",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate <NUM> (GPU <NUM>; <NUM> total capacity)",
        "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    ],
    FailureClass.STORAGE: [
        "rule:storage.enospc",
        "OSError: [Errno <NUM>] No space left on device: <PATH>",
        "torch.save failed while writing checkpoint shard <NUM> to <PATH>",
    ],
}
T0 = datetime(2025, 1, 1)


def incident(cls: FailureClass = FailureClass.NETWORK, extra: str = "", *, id: str = "", minutes: int = 0) -> Incident:
    """An incident of one failure family: its rule id on the fingerprint's first line, its templates after."""
    rule, *templates = FAMILIES[cls]
    fp = Fingerprint(
        templates=[*templates, *([extra] if extra else [])], rule_ids=[rule.removeprefix("rule:")], classes=[cls]
    )
    return Incident(
        id=id,
        fingerprint=fp,
        failure_class=cls,
        action=Action.RETRY,
        provenance=Provenance(job=f"job-{cls.value}-{minutes}", created_at=T0 + timedelta(minutes=minutes)),
    )


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IncidentStore]:
    s: IncidentStore = MemoryIncidentStore() if request.param == "memory" else SqliteIncidentStore(tmp_path / "m.db")
    yield s
    s.close()


def fresh_like(s: IncidentStore, tmp_path: Path) -> IncidentStore:
    return MemoryIncidentStore() if isinstance(s, MemoryIncidentStore) else SqliteIncidentStore(tmp_path / "other.db")


# -- behaviour, both stores --------------------------------------------------------------------------------------


def test_both_stores_satisfy_the_protocol(store: IncidentStore) -> None:
    assert isinstance(store, IncidentStore)


def test_add_assigns_fresh_ids_and_keeps_given_ones(store: IncidentStore) -> None:
    a, b = store.add(incident()), store.add(incident(minutes=1))  # distinct incidents (another job): distinct ids
    assert a.id.startswith("inc-") and len(a.id) == 16 and int(a.id[4:], 16) >= 0
    assert a.id != b.id
    assert store.add(incident(id="inc-chosen")).id == "inc-chosen"
    assert store.get(a.id) == a and store.get("inc-missing") is None


def test_re_adding_an_id_raises_and_add_many_is_all_or_nothing(store: IncidentStore) -> None:
    kept = store.add(incident(id="inc-one"))
    with pytest.raises(ValueError, match="inc-one is already in"):
        store.add(incident(FailureClass.STORAGE, id="inc-one"))
    with pytest.raises(ValueError, match="inc-one"):  # another incident under a taken id, inside a batch
        store.add_many([incident(id="inc-two"), incident(FailureClass.GPU_OOM, id="inc-one")])
    assert store.count() == 1 and store.get("inc-two") is None and store.get("inc-one") == kept
    assert [i.id for i in store.add_many([incident(id="inc-two"), incident()])][0] == "inc-two"
    assert store.count() == 3


def test_list_is_newest_first_with_paging_and_class_filter(store: IncidentStore) -> None:
    added = store.add_many(
        [
            incident(FailureClass.NETWORK, minutes=1),
            incident(FailureClass.GPU_OOM, minutes=3),
            incident(FailureClass.NETWORK, minutes=2),
            incident(FailureClass.NETWORK, minutes=3),
        ]
    )
    newest = [added[3].id, added[1].id, added[2].id, added[0].id]  # equal times: the later insert first
    assert [i.id for i in store.list()] == newest
    assert [i.id for i in store.list(limit=2, offset=1)] == newest[1:3]
    assert [i.id for i in store.list(failure_class=FailureClass.NETWORK)] == [newest[0], newest[2], newest[3]]
    assert [i.id for i in store.list(failure_class="gpu_oom")] == [added[1].id]


def test_remove_and_count(store: IncidentStore) -> None:
    a, b = store.add(incident()), store.add(incident(FailureClass.STORAGE))
    assert store.remove(a.id) is True and store.remove(a.id) is False
    assert store.count() == 1 and store.get(a.id) is None
    assert [i.id for i, _ in store.search(a.fingerprint, k=5)] == [b.id]


def test_search_ranks_a_near_duplicate_first_and_an_unrelated_one_low(store: IncidentStore) -> None:
    net = store.add(incident(FailureClass.NETWORK))
    oom = store.add(incident(FailureClass.GPU_OOM))
    store.add(incident(FailureClass.STORAGE))
    query = incident(FailureClass.NETWORK, "NCCL INFO comm <HEX> rank <NUM> nranks <NUM> - Abort COMPLETE")
    hits = store.search(query.fingerprint, k=3)
    assert hits[0][0].id == net.id and hits[0][1] > 0.9
    assert dict((i.id, s) for i, s in hits)[oom.id] < 0.3
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert len(store.search(query.fingerprint, k=1)) == 1


def test_search_edge_cases(store: IncidentStore) -> None:
    assert store.search(incident().fingerprint) == []  # empty store
    store.add(incident())
    assert store.search(Fingerprint(templates=["<NUM> <HEX>"])) == []  # nothing to compare
    assert store.search(incident().fingerprint, k=0) == []


def test_export_import_round_trip_into_a_fresh_store_keeps_everything(store: IncidentStore, tmp_path: Path) -> None:
    originals = store.add_many([incident(cls, minutes=i) for i, cls in enumerate(FAMILIES)])
    buf = io.StringIO()
    assert store.export_jsonl(buf) == 3 and len(buf.getvalue().splitlines()) == 3
    other = fresh_like(store, tmp_path)
    assert other.import_jsonl(io.StringIO(buf.getvalue())) == 3
    for original in originals:
        copy = other.get(original.id)
        assert copy is not None and copy.provenance.source == "import"
        assert copy.model_copy(update={"provenance": original.provenance}) == original
    assert other.search(originals[1].fingerprint, k=1)[0][0].id == originals[1].id
    other.close()


def test_import_renews_clashing_ids_and_sets_the_source(store: IncidentStore) -> None:
    original = store.add(incident(id="inc-aaaaaaaaaaaa"))
    foreign = incident(FailureClass.STORAGE, id="inc-aaaaaaaaaaaa")  # another team's incident under the same id
    export = foreign.model_dump_json() + "\n"
    assert store.import_jsonl(io.StringIO(export + "\n" + export), source="evalset") == 1  # twice: stored once
    assert store.count() == 2 and store.get(original.id) == original
    (copy,) = [i for i in store.list() if i.id != original.id]
    assert copy.id == next(content_ids(foreign)) and copy.provenance.source == "evalset"
    assert store.import_jsonl(io.StringIO(export), source="evalset") == 0 and store.count() == 2


def test_import_of_a_bad_line_names_the_line_and_adds_nothing(store: IncidentStore) -> None:
    good = incident().model_dump_json()
    with pytest.raises(KnowledgeError, match=r":2: not an incident record \(failure_class"):
        bad = good.replace('"failure_class":"network"', '"failure_class":"cosmic_rays"')
        store.import_jsonl(io.StringIO(good + "\n" + bad + "\n"))
    with pytest.raises(KnowledgeError, match=":1: not an incident record"):
        store.import_jsonl(io.StringIO("{not json\n"))
    assert store.count() == 0


# -- idempotence: the same incident is stored once, under the same id (issue 11) ----------------------------------


def test_the_same_incident_added_twice_is_stored_once_under_its_content_id(store: IncidentStore) -> None:
    first = store.add(incident())
    assert first.id == next(content_ids(incident()))  # the id is a digest of the content, in every store
    assert store.add(incident()) == first and store.count() == 1
    twice = store.add_many([incident(FailureClass.STORAGE), incident(FailureClass.STORAGE), incident()])
    assert twice[0] == twice[1] and twice[2] == first and store.count() == 2
    assert [i.id for i, _ in store.search(first.fingerprint, k=5)].count(first.id) == 1


def test_the_content_id_ignores_when_and_who_but_not_what_or_which_job() -> None:
    base = incident()
    same = base.model_copy(
        update={
            "resolution": "reseated the cable",
            "provenance": Provenance(job=base.provenance.job, created_at=T0 + timedelta(days=3), confirmed_by="bob"),
        }
    )
    assert next(content_ids(same)) == next(content_ids(base))
    others = [
        incident(extra="NCCL WARN Abort"),  # another fingerprint
        base.model_copy(update={"action": Action.DRAIN_NODE_AND_RETRY}),
        base.model_copy(update={"failure_class": FailureClass.NODE_FAILURE}),
        base.model_copy(update={"provenance": Provenance(job="another-job", created_at=T0)}),
    ]
    assert len({next(content_ids(i)) for i in [base, *others]}) == 5


def test_a_second_record_completes_the_stored_one_and_never_overwrites_it(store: IncidentStore) -> None:
    first = store.add(incident())
    later = incident().model_copy(update={"resolution": "reseated the HCA cable"})
    later.provenance.confirmed_by, later.provenance.created_at = "alice", T0 + timedelta(days=1)
    done = store.add(later)
    assert (done.id, done.resolution, done.provenance.confirmed_by) == (first.id, "reseated the HCA cable", "alice")
    assert done.provenance.created_at == first.provenance.created_at and store.count() == 1
    assert store.get(first.id) == done and store.search(first.fingerprint, k=1)[0][0] == done
    other = incident().model_copy(update={"resolution": "rebooted the switch"})
    other.provenance.confirmed_by = "bob"
    assert store.add(other) == done  # what is stored stands
    assert store.list() == [done]


def test_importing_the_same_export_twice_adds_nothing_the_second_time(store: IncidentStore, tmp_path: Path) -> None:
    store.add_many([incident(cls, minutes=i) for i, cls in enumerate(FAMILIES)])
    buf = io.StringIO()
    store.export_jsonl(buf)
    assert store.import_jsonl(io.StringIO(buf.getvalue())) == 0 and store.count() == 3  # its own export
    other = fresh_like(store, tmp_path)
    assert other.import_jsonl(io.StringIO(buf.getvalue())) == 3
    assert other.import_jsonl(io.StringIO(buf.getvalue())) == 0 and other.count() == 3
    assert {i.id for i in other.list()} == {i.id for i in store.list()}
    other.close()


def test_an_incident_whose_content_id_is_taken_takes_the_next_one_every_time(store: IncidentStore) -> None:
    taken = next(content_ids(incident()))
    squatter = store.add(incident(FailureClass.STORAGE, id=taken))  # another incident chose that very id
    placed = store.add(incident())
    assert placed.id == list(islice(content_ids(incident()), 2))[1] != squatter.id
    assert store.add(incident()) == placed and store.count() == 2


def test_ids_with_prefix(store: IncidentStore) -> None:
    for id in ("inc-ab12", "inc-ab34", "inc-cd56", "inc-ab_x"):
        store.add(incident(id=id, minutes=len(store.ids_with_prefix("inc-"))))
    assert store.ids_with_prefix("inc-ab") == ["inc-ab12", "inc-ab34", "inc-ab_x"]
    assert store.ids_with_prefix("inc-ab", limit=2) == ["inc-ab12", "inc-ab34"]
    assert store.ids_with_prefix("inc-cd56") == ["inc-cd56"]
    assert store.ids_with_prefix("inc-a_") == [] and store.ids_with_prefix("") == []
    assert store.ids_with_prefix("inc-zz") == [] and store.ids_with_prefix("\U0010ffff") == []


def test_the_same_incident_added_by_two_stores_on_one_file_is_stored_once(tmp_path: Path) -> None:
    with SqliteIncidentStore(tmp_path / "m.db") as a, SqliteIncidentStore(tmp_path / "m.db") as b:
        assert a.add(incident()) == b.add(incident()) and a.count() == 1
    with SqliteIncidentStore(tmp_path / "m.db") as s:
        assert s.add(incident()).id == next(content_ids(incident())) and s.count() == 1


# -- SQLite: persistence, versions, embedders --------------------------------------------------------------------


def test_sqlite_store_persists_across_opens(tmp_path: Path) -> None:
    with SqliteIncidentStore(tmp_path / "m.db") as s:
        a = s.add(incident())
    with SqliteIncidentStore(tmp_path / "m.db") as s:
        assert s.get(a.id) == a and s.count() == 1
        assert s.search(a.fingerprint)[0][0].id == a.id
        assert s.embedder.name == "hashing:512:1-1"
    assert sqlite3.connect(tmp_path / "m.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_different_embedder_is_refused_unless_reembed(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SqliteIncidentStore(path) as s:
        a = s.add(incident())
    with pytest.raises(KnowledgeError, match=r"'hashing:512:1-1' \(dim 512\), not 'hashing:256:1-1'.*reembed=True"):
        SqliteIncidentStore(path, HashingEmbedder(dim=256))
    with SqliteIncidentStore(path, HashingEmbedder(dim=256), reembed=True) as s:
        assert s.search(a.fingerprint)[0] == (a, pytest.approx(1.0))
    with SqliteIncidentStore(path) as s:  # no embedder: the one the store was last built with
        assert s.embedder.name == "hashing:256:1-1" and s.search(a.fingerprint)[0][0] == a


def test_a_store_re_embedded_by_another_process_must_be_reopened(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SqliteIncidentStore(path) as old:
        a = old.add(incident())
        old.search(a.fingerprint)
        SqliteIncidentStore(path, HashingEmbedder(dim=256), reembed=True).add(incident(FailureClass.STORAGE))
        with pytest.raises(KnowledgeError, match="re-embedded with 'hashing:256:1-1'.*reopen the store"):
            old.add(incident())
        with pytest.raises(KnowledgeError, match="re-embedded with 'hashing:256:1-1'.*reopen the store"):
            old.search(a.fingerprint)
    with SqliteIncidentStore(path) as s:
        assert s.count() == 2 and s.search(a.fingerprint)[0][0] == a


def test_an_empty_store_simply_adopts_a_new_embedder(tmp_path: Path) -> None:
    SqliteIncidentStore(tmp_path / "m.db").close()
    with SqliteIncidentStore(tmp_path / "m.db", HashingEmbedder(dim=64)) as s:
        assert s.embedder.dim == 64


def test_a_store_whose_embedder_cannot_load_is_a_clear_error(tmp_path: Path) -> None:
    SqliteIncidentStore(tmp_path / "m.db").close()
    with sqlite3.connect(tmp_path / "m.db") as db:
        db.execute("UPDATE meta SET value = 'tfidf:9' WHERE key = 'embedder'")
    with pytest.raises(KnowledgeError, match=r"built with embedder 'tfidf:9'.*reembed=True"):
        SqliteIncidentStore(tmp_path / "m.db")


def test_a_newer_schema_is_refused_naming_the_upgrade(tmp_path: Path) -> None:
    SqliteIncidentStore(tmp_path / "m.db").close()
    with sqlite3.connect(tmp_path / "m.db") as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(KnowledgeError, match="schema v99 was written by a newer crashcart.*upgrade crashcart"):
        SqliteIncidentStore(tmp_path / "m.db")


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notes.db").write_bytes(b"these are my notes, not a database" * 100)
    with pytest.raises(KnowledgeError, match="notes.db: .*give another store path"):
        SqliteIncidentStore(tmp_path / "notes.db")


# -- SQLite: the index beside the database -----------------------------------------------------------------------


def sidecar(db: Path) -> dict:
    return json.loads(db.with_name(db.name + ".faiss.json").read_text())


def index_ntotal(db: Path) -> int:
    return faiss.read_index(str(db.with_name(db.name + ".faiss"))).ntotal


def assert_index_files_consistent(db: Path, at_most: int) -> None:
    """The index on disk matches its sidecar and lags the database by under 1% (it is saved lazily)."""
    meta, ntotal = sidecar(db), index_ntotal(db)
    assert meta["ntotal"] == ntotal and 0.99 * at_most <= ntotal <= at_most


def test_another_process_adds_are_appended_and_removes_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    reader, writer = SqliteIncidentStore(path), SqliteIncidentStore(path)
    a = writer.add(incident())
    assert reader.search(a.fingerprint, k=10) == [(a, pytest.approx(1.0))]
    b = writer.add(incident(extra="NCCL WARN Abort"))
    assert {i.id for i, _ in reader.search(a.fingerprint, k=10)} == {a.id, b.id}
    writer.remove(a.id)
    assert [i.id for i, _ in reader.search(a.fingerprint, k=10)] == [b.id]
    assert sidecar(path)["generation"] == 3 and index_ntotal(path) == 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "missing", "sidecar_garbage"])
def test_a_damaged_or_foreign_index_is_rebuilt_on_the_next_search(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "m.db"
    index_file, meta_file = path.with_name("m.db.faiss"), path.with_name("m.db.faiss.json")
    with SqliteIncidentStore(path) as s:
        added = s.add_many([incident(cls) for cls in FAMILIES])
        s.search(added[0].fingerprint)
    if damage == "garbage":
        index_file.write_bytes(os.urandom(4096))
    elif damage == "truncated":
        index_file.write_bytes(index_file.read_bytes()[:100])
    elif damage == "foreign":  # another store's index, with its sidecar: a different store_uid
        with SqliteIncidentStore(tmp_path / "other.db") as other:
            other.search(other.add(incident()).fingerprint)
        index_file.write_bytes(tmp_path.joinpath("other.db.faiss").read_bytes())
        meta_file.write_bytes(tmp_path.joinpath("other.db.faiss.json").read_bytes())
    elif damage == "missing":
        index_file.unlink()
    else:
        meta_file.write_text("{]")
    with SqliteIncidentStore(path) as s:
        assert [i.id for i, _ in s.search(added[2].fingerprint, k=1)] == [added[2].id]
    assert index_ntotal(path) == 3 and sidecar(path)["ntotal"] == 3


# -- SQLite: several processes, and a process killed mid-write ---------------------------------------------------

WORKER = """
import os, sys, time
from crashcart.knowledge.incident_store import SqliteIncidentStore
from crashcart.knowledge.incidents import Fingerprint, Incident, Provenance
path, tag, n, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
while not os.path.exists(path + ".go"):  # all start at once, opening the store included
    time.sleep(0.005)
store = SqliteIncidentStore(path)
out = os.open(path + "." + tag + ".ids", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
for i in range(n):
    fp = Fingerprint(templates=[f"worker {tag} step {i} failed", "NCCL WARN Abort"], rule_ids=["coll.abort"])
    inc = store.add(Incident(fingerprint=fp, failure_class="network", action="retry",
                             provenance=Provenance(job=f"{tag}-{i}")))
    os.write(out, (inc.id + "\\n").encode())  # after the commit: these ids are known to be stored
    if every and i % every == every - 1:
        store.search(fp, k=3)
"""


def spawn(path: Path, tag: str, n: int, every: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(path), tag, str(n), str(every)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def reported_ids(path: Path, tag: str) -> list[str]:
    file = path.with_name(f"{path.name}.{tag}.ids")
    return file.read_text().split() if file.exists() else []


def test_parallel_writers_lose_nothing_and_search_sees_every_row(tmp_path: Path) -> None:
    path = tmp_path / "m.db"  # not created beforehand: the workers race to create it too
    workers = [spawn(path, f"w{n}", 50, 10) for n in range(4)]
    time.sleep(0.5)  # let the interpreters start and import
    path.with_name("m.db.go").touch()
    for w in workers:
        out, _ = w.communicate(timeout=60)
        assert w.returncode == 0, out
    ids = [i for n in range(4) for i in reported_ids(path, f"w{n}")]
    with SqliteIncidentStore(path) as s:
        assert s.count() == 200 and len(set(ids)) == 200
        assert all(s.get(i) is not None for i in ids)
        hits = s.search(Fingerprint(templates=["worker w1 step 7 failed", "NCCL WARN Abort"]), k=500)
        assert {i.id for i, _ in hits} == set(ids)
        assert hits[0][0].provenance.job == "w1-7"
    assert_index_files_consistent(path, at_most=200)


def test_a_writer_killed_mid_way_leaves_a_sound_store(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SqliteIncidentStore(path) as s:
        s.search(s.add(incident()).fingerprint)  # an index file exists before the crash
    path.with_name("m.db.go").touch()
    child = spawn(path, "crash", 100_000, 25)
    deadline = time.monotonic() + 30
    while len(reported_ids(path, "crash")) < 120 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    ids = reported_ids(path, "crash")
    assert len(ids) >= 120, child.stdout.read() if child.stdout else ""
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with SqliteIncidentStore(path) as s:
        # Every reported id was committed; at most one more committed before its id was written.
        assert len(ids) + 1 <= s.count() <= len(ids) + 2
        assert all(s.get(i) is not None for i in ids)
        last = s.get(ids[-1])
        assert last is not None and last.fingerprint.templates[0] == f"worker crash step {len(ids) - 1} failed"
        # The last committed row is found as the best match. Its step number is one hashed token of 512 buckets,
        # so another step's number can share its bucket and tie it exactly: any of the tied best rows may come first.
        hits = s.search(last.fingerprint, k=10_000)
        assert ids[-1] in {i.id for i, score in hits if score >= hits[0][1] - 1e-6}
        everything = {i.id for i in s.list(limit=10_000)}
        assert {i.id for i, _ in hits} == everything
    assert_index_files_consistent(path, at_most=len(everything))

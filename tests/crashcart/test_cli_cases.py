"""`crashcart cases ...` and triage with memory: the loop an operator lives in, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# Lines no rule knows, from real logs (Loghub's Zookeeper_2k.log and HDFS_2k.log, in ../shared/data): a Zookeeper
# ensemble losing its quorum peers (its numbers vary per job), and a DataNode failing to serve a block.
QUORUM = "".join(
    line + "\n"
    for line in (
        "2015-07-29 19:13:2{i},282 - WARN  [RecvWorker:188978561024:QuorumCnxManager$RecvWorker@762] - "
        "Connection broken for id 188978561024, my id = {i}, error = ",
        "2015-07-29 19:13:2{i},721 - WARN  [QuorumPeer[myid={i}]/0:0:0:0:0:0:0:0:2181:QuorumCnxManager@368] - "
        "Cannot open channel to {s} at election address /10.10.34.12:3888",
    )
)
UNRELATED = (
    "081109 214043 2561 WARN dfs.DataNode$DataXceiver: 10.251.30.85:50010:Got exception while serving "
    "blk_-2918118818249673980 to /10.251.90.64:\n"
)


def _log(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_memory_loop_add_triage_search_export_import(cli, tmp_path: Path) -> None:
    db = str(tmp_path / "mem.db")
    first = _log(tmp_path, "first.log", QUORUM.format(i=1, s=100, g=7, h="gpu-a17"))
    again = _log(tmp_path, "again.log", QUORUM.format(i=4, s=2301, g=3, h="gpu-b02"))
    other = _log(tmp_path, "other.log", UNRELATED)

    code, out, _ = cli("triage", first, "--format", "json", "--memory", db)
    assert code == 2  # no store yet: one line, exit 2
    code, out, _ = cli("triage", first, "--format", "json", "--no-memory")
    assert json.loads(out)["diagnosis"]["failure_class"] == "unknown"  # no rule knows this scheduler

    code, out, _ = cli(
        "cases",
        "add",
        first,
        "--class",
        "storage",  # a class that does not drain: one matching incident never drains a node on its own
        "--by",
        "alice",
        "--resolution",
        "remounted the scratch filesystem, restarted",
        "--memory",
        db,
    )
    assert code == 0 and out.startswith("added inc-")
    incident_id = out.split()[1].rstrip(":")

    code, out, _ = cli("triage", again, "--format", "json", "--memory", db)
    d = json.loads(out)["diagnosis"]
    assert (d["failure_class"], d["decided_by"], d["novel"]) == ("storage", "memory", False)
    assert d["similar"][0]["id"] == incident_id and d["similar"][0]["similarity"] > 0.6
    assert "remounted the scratch filesystem" in d["summary"]

    code, out, _ = cli("triage", other, "--format", "json", "--memory", db)
    d = json.loads(out)["diagnosis"]
    assert (d["failure_class"], d["novel"]) == ("unknown", True)

    code, out, _ = cli("cases", "search", again, "--memory", db)
    assert code == 0 and incident_id[:10] in out
    code, out, _ = cli("cases", "show", incident_id, "--memory", db)
    shown = json.loads(out)
    assert shown["provenance"]["confirmed_by"] == "alice" and shown["failure_class"] == "storage"

    export = tmp_path / "team.jsonl"
    assert cli("cases", "export", str(export), "--memory", db)[0] == 0
    other_db = str(tmp_path / "other.db")
    code, out, _ = cli("cases", "import", str(export), "--memory", other_db)
    assert code == 0 and "imported 1" in out
    code, out, _ = cli("cases", "list", "--memory", other_db)
    assert incident_id[:10] in out and "1 incident in" in out

    assert cli("cases", "remove", incident_id, "--memory", db)[0] == 0
    code, _, err = cli("cases", "remove", incident_id, "--memory", db)
    assert code == 1 and f"no incident '{incident_id}'" in err  # nothing matched: exit 1, one line


def test_add_needs_a_class_and_list_needs_a_store(cli, tmp_path: Path) -> None:
    log = _log(tmp_path, "a.log", UNRELATED)
    code, _, err = cli("cases", "add", log, "--memory", str(tmp_path / "m.db"))
    assert code == 2 and "--class" in err
    code, _, err = cli("cases", "list", "--memory", str(tmp_path / "none.db"))
    assert code == 2 and "no incident store" in err


def test_add_a_labeled_set(cli, tmp_path: Path, dev_evalset: Path) -> None:
    db = str(tmp_path / "dev.db")
    code, out, _ = cli("cases", "add", "--labels", str(dev_evalset), "--memory", db)
    assert code == 0 and out.startswith("added 40 incidents")
    code, out, _ = cli("cases", "add", "--labels", str(dev_evalset), "--memory", db)  # again: idempotent
    assert code == 0 and out.startswith("added 0 incidents") and "(40 already stored)" in out
    code, out, _ = cli("cases", "list", "--format", "json", "--limit", "100", "--memory", db)
    listed = json.loads(out)
    assert (listed["count"], listed["total"]) == (40, 40) and len({i["id"] for i in listed["incidents"]}) == 40


@pytest.fixture(autouse=True)
def _no_default_store(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CRASHCART_MEMORY", str(tmp_path / "default-store-unused.db"))


def test_jobs_named_by_odd_paths_are_listed_as_plain_text(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # the table's job column in full
    db = str(tmp_path / "mem.db")
    (tmp_path / "r[").mkdir()  # the job defaults to the paths: `r[/]a.log` is rich markup that raises
    log = _log(tmp_path / "r[", "]a.log", QUORUM.format(i=1, s=100, g=7, h="gpu-a17"))
    resolution = "fixed \x1b[1m[/]\x1b[0m"
    assert cli("cases", "add", log, "--class", "node_failure", "--resolution", resolution, "--memory", db)[0] == 0
    for args in (("cases", "list"), ("cases", "search", log)):
        code, out, err = cli(*args, "--memory", db)
        assert code == 0, err
        assert "r[/]a.log" in out and "\x1b" not in out


def test_add_a_job_whose_file_name_is_not_utf8(cli, tmp_path: Path) -> None:
    """Issue 9: such a name crashed the store (JSON and SQLite take only UTF-8); it is kept with \\x escapes."""
    import os

    job = tmp_path / "job"
    job.mkdir()
    name = os.fsdecode(b"rank3-caf\xe9.log")
    (job / name).write_text(QUORUM.format(i=1, s=100, g=7, h="gpu-a17"))
    db = str(tmp_path / "mem.db")
    code, out, err = cli("cases", "add", str(job), "--class", "storage", "--memory", db)
    assert (code, err) == (0, ""), err
    code, out, _ = cli("triage", str(job), "--format", "json", "--memory", db)
    assert code == 0
    report = json.loads(out)
    assert report["diagnosis"]["failure_class"] == "storage"  # recalled from the stored incident
    assert report["diagnosis"]["evidence"][0]["file"] == "rank3-caf\\xe9.log"


def _add(cli, tmp_path: Path, db: str, name: str, *extra: str) -> str:
    log = _log(tmp_path, name, QUORUM.format(i=1, s=100, g=7, h="gpu-a17"))
    code, out, err = cli("cases", "add", log, "--class", "node_failure", *extra, "--memory", db)
    assert code == 0, err
    return out


def test_adding_or_importing_the_same_incident_again_stores_it_once(cli, tmp_path: Path) -> None:
    db = str(tmp_path / "mem.db")
    first = _add(cli, tmp_path, db, "a.log")
    assert first.startswith("added inc-")
    incident_id = first.split()[1].rstrip(":")
    again = _add(cli, tmp_path, db, "a.log", "--by", "alice", "--resolution", "drained it")
    assert again.startswith(f"already stored as {incident_id}:")
    shown = json.loads(cli("cases", "show", incident_id, "--memory", db)[1])
    assert (shown["resolution"], shown["provenance"]["confirmed_by"]) == ("drained it", "alice")  # completed

    export = tmp_path / "team.jsonl"
    assert cli("cases", "export", str(export), "--memory", db)[0] == 0
    other = str(tmp_path / "other.db")
    assert cli("cases", "import", str(export), "--memory", other)[1].startswith("imported 1 incident from")
    code, out, _ = cli("cases", "import", str(export), "--memory", other)
    assert code == 0 and out.startswith("imported 0 incidents from") and "(1 already stored)" in out
    listed = json.loads(cli("cases", "list", "--format", "json", "--memory", other)[1])
    assert listed["count"] == 1 and listed["incidents"][0]["id"] == incident_id


def test_show_and_remove_take_a_unique_id_prefix(cli, tmp_path: Path) -> None:
    db = str(tmp_path / "mem.db")
    ids = [_add(cli, tmp_path, db, f"{n}.log").split()[1].rstrip(":") for n in range(17)]  # 17 jobs, 17 ids
    assert len(set(ids)) == 17
    # Ids are 12 hex digits after "inc-": among 17 of them two share their first digit.
    first = ids[0]
    unique = next(first[:n] for n in range(5, len(first)) if sum(i.startswith(first[:n]) for i in ids) == 1)
    shared = next(i[:5] for i in ids if sum(j.startswith(i[:5]) for j in ids) > 1)
    code, out, _ = cli("cases", "show", unique, "--memory", db)
    assert code == 0 and json.loads(out)["id"] == first

    code, out, err = cli("cases", "show", shared, "--memory", db)
    candidates = sorted(i for i in ids if i.startswith(shared))
    assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1
    assert f"{shared!r} is ambiguous" in err and all(c in err for c in candidates)
    assert cli("cases", "remove", shared, "--memory", db)[0] == 2  # nothing removed on an ambiguous prefix

    code, out, err = cli("cases", "show", "inc-zzzz", "--memory", db)
    assert (code, out) == (1, "")
    assert err.strip() == "crashcart: error: no incident 'inc-zzzz': see `crashcart cases list`"

    code, out, _ = cli("cases", "remove", unique, "--memory", db)
    assert (code, out) == (0, f"removed {first}\n")
    assert json.loads(cli("cases", "list", "--format", "json", "--memory", db)[1])["total"] == 16


def test_an_empty_store_lists_zero_incidents(cli, tmp_path: Path) -> None:
    # No store yet at the default place ($CRASHCART_MEMORY here): 0 incidents, exit 0, nothing created.
    code, out, err = cli("cases", "list")
    assert (code, err) == (0, "") and out.startswith("0 incidents")
    assert not (tmp_path / "default-store-unused.db").exists()
    assert json.loads(cli("cases", "list", "--format", "json")[1]) == {"incidents": [], "count": 0, "total": 0}
    # A store that exists and holds nothing (its only incident removed).
    db = str(tmp_path / "mem.db")
    incident_id = _add(cli, tmp_path, db, "a.log").split()[1].rstrip(":")
    assert cli("cases", "remove", incident_id, "--memory", db)[0] == 0
    code, out, _ = cli("cases", "list", "--memory", db)
    assert (code, out) == (0, f"0 incidents in {db}\n")
    code, out, _ = cli("cases", "list", "--format", "json", "--memory", db)
    assert code == 0 and json.loads(out) == {"incidents": [], "count": 0, "total": 0}


def test_list_and_search_keep_ids_whole_at_60_columns(cli, monkeypatch, tmp_path: Path) -> None:
    """Ids are copied from `cases list` into `cases show`: a cut or wrapped id is useless, at any width."""
    monkeypatch.setenv("COLUMNS", "60")
    db = str(tmp_path / "mem.db")
    resolution = "drained gpu-a17, reseated the InfiniBand cable and reran the job from its last checkpoint"
    incident_id = _add(cli, tmp_path, db, "a.log", "--resolution", resolution, "--by", "alice").split()[1].rstrip(":")
    code, out, _ = cli("cases", "list", "--memory", db)
    assert code == 0 and incident_id in out.split() and "…" not in out
    code, out, _ = cli("cases", "search", _log(tmp_path, "b.log", QUORUM.format(i=4, s=2301)), "--memory", db)
    assert code == 0 and incident_id in out.split() and "…" not in out
    assert "reseated" in out.split() and "checkpoint" in out.split()  # prose wraps at words, never mid-word

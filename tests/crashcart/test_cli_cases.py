"""`crashcart cases ...` and triage with memory: the loop an operator lives in, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

QUORUM = """2026-03-01 10:00:0{i} INFO step {s} loss 2.1{i}
2026-03-01 10:00:09 WARNING zeta-scheduler: lease for shard group {g} expired, coordinator quorum lost
2026-03-01 10:00:09 CRITICAL zeta-scheduler: giving up on step {s} after quorum loss on host {h}
"""
UNRELATED = "2026-03-02 11:00:00 INFO widget cache warm\n2026-03-02 11:00:02 ERROR frobnicator checksum mismatch\n"


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
        "node_failure",
        "--by",
        "alice",
        "--resolution",
        "drained the host, restarted",
        "--memory",
        db,
    )
    assert code == 0 and out.startswith("added inc-")
    incident_id = out.split()[1].rstrip(":")

    code, out, _ = cli("triage", again, "--format", "json", "--memory", db)
    d = json.loads(out)["diagnosis"]
    assert (d["failure_class"], d["decided_by"], d["novel"]) == ("node_failure", "memory", False)
    assert d["similar"][0]["id"] == incident_id and d["similar"][0]["similarity"] > 0.6
    assert "drained the host" in d["summary"]

    code, out, _ = cli("triage", other, "--format", "json", "--memory", db)
    d = json.loads(out)["diagnosis"]
    assert (d["failure_class"], d["novel"]) == ("unknown", True)

    code, out, _ = cli("cases", "search", again, "--memory", db)
    assert code == 0 and incident_id[:10] in out
    code, out, _ = cli("cases", "show", incident_id, "--memory", db)
    shown = json.loads(out)
    assert shown["provenance"]["confirmed_by"] == "alice" and shown["failure_class"] == "node_failure"

    export = tmp_path / "team.jsonl"
    assert cli("cases", "export", str(export), "--memory", db)[0] == 0
    other_db = str(tmp_path / "other.db")
    code, out, _ = cli("cases", "import", str(export), "--memory", other_db)
    assert code == 0 and "imported 1" in out
    code, out, _ = cli("cases", "list", "--memory", other_db)
    assert incident_id[:10] in out and "1 incident(s)" in out

    assert cli("cases", "remove", incident_id, "--memory", db)[0] == 0
    code, _, err = cli("cases", "remove", incident_id, "--memory", db)
    assert code == 2 and f"no incident '{incident_id}'" in err


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
    code, out, err = cli("cases", "add", str(job), "--class", "node_failure", "--memory", db)
    assert (code, err) == (0, ""), err
    code, out, _ = cli("triage", str(job), "--format", "json", "--memory", db)
    assert code == 0
    report = json.loads(out)
    assert report["diagnosis"]["failure_class"] == "node_failure"  # recalled from the stored incident
    assert report["diagnosis"]["evidence"][0]["file"] == "rank3-caf\\xe9.log"

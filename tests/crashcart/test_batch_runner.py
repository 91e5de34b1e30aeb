"""crashcart/batch/runner.py and results.py: parallel triage that survives bad jobs and resumes where it stopped."""

from __future__ import annotations

import gzip
import os
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from proctree import kill_when

from crashcart.batch.models import BatchJob, BatchResult
from crashcart.batch.results import ResultStore, default_results_path
from crashcart.batch.runner import logs_key, run_batch, stat_logs, triage_jobs
from crashcart.batch.tree import discover_jobs
from crashcart.evals.generator import JobSpec, generate_job
from crashcart.knowledge.errors import CrashcartError, InputError

START = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)
EXPECTED = {"hw": "gpu_hardware", "ib": "network", "oom": "gpu_oom"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three small generated jobs, one with a truncated gzip, one with a binary file, one with an empty logs/."""
    root = tmp_path_factory.mktemp("tree")
    for seed, (name, scenario) in enumerate((("hw", "xid79"), ("ib", "ib_link"), ("oom", "gpu_oom"))):
        generate_job(
            root / name, JobSpec(nodes=2, total_mb=0.3, scenario=scenario, fault_node=1, seed=seed, start=START)
        )
    text = gzip.compress(b"2025-03-01 10:00:00 INFO step 1 loss 2.0\n" * 5000)
    (root / "badgz" / "logs").mkdir(parents=True)
    (root / "badgz" / "logs" / "node00.log.gz").write_bytes(text[: len(text) // 2])
    (root / "binary" / "logs").mkdir(parents=True)
    (root / "binary" / "logs" / "core.dump").write_bytes(bytes(range(256)) * 64)
    (root / "empty" / "logs").mkdir(parents=True)
    return root


def _by_id(results: list[BatchResult]) -> dict[str, BatchResult]:
    return {r.job.job_id: r for r in results}


def _run(jobs: list[BatchJob], store: ResultStore, **kw) -> tuple[list[BatchResult], list[tuple[int, int]]]:
    calls: list[tuple[int, int]] = []
    results = run_batch(jobs, results=store, workers=2, progress=lambda done, total: calls.append((done, total)), **kw)
    return results, calls


def test_batch_triages_survives_bad_jobs_and_resumes(tree: Path, tmp_path: Path) -> None:
    jobs = discover_jobs(tree)
    with ResultStore(tmp_path / "batch.db") as store:
        first, calls = _run(jobs, store)
        got = _by_id(first)
        assert [r.job.job_id for r in first] == [j.job_id for j in jobs]
        for name, cls in EXPECTED.items():
            d = got[name].diagnosis
            assert got[name].status == "ok" and d is not None
            assert (d.failure_class.value, d.faulty_nodes) == (cls, ["node01"])
            assert got[name].bytes > 250_000 and got[name].seconds > 0 and got[name].triaged_at is not None
        # A node that died mid-write: its .gz is read to the cut, and the result says where it stopped.
        assert got["badgz"].status == "ok" and got["badgz"].diagnosis is not None
        [cut] = got["badgz"].skipped
        assert cut.path.endswith("node00.log.gz") and "corrupt or truncated gzip" in cut.reason
        assert got["binary"].status == "error" and "core.dump: binary: not text" in (got["binary"].error or "")
        assert got["empty"].status == "no_logs" and got["empty"].diagnosis is None
        assert calls[0] == (0, 5) and calls[-1] == (5, 5)  # the empty job needs no worker
        assert len(store) == 6

        again, calls = _run(jobs, store)
        assert again == first and calls == [(0, 0)]  # nothing changed: nothing triaged

        log = tree / "ib" / "logs" / "node00.log"
        stat = log.stat()
        os.utime(log, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
        third, calls = _run(jobs, store)
        assert calls[-1] == (1, 1)
        changed = [r.job.job_id for r, old in zip(third, first, strict=True) if r.triaged_at != old.triaged_at]
        assert changed == ["ib"] and _by_id(third)["ib"].status == "ok"

        forced, calls = _run(jobs, store, force=True)
        assert calls[-1] == (5, 5)
        assert {r.job.job_id: r.status for r in forced} == {r.job.job_id: r.status for r in first}


def test_a_reused_result_carries_the_jobs_current_metadata(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("2025-03-01 10:00:00 INFO step 1 loss 2.0\n")
    job = BatchJob(job_id="j", log_paths=[log], gpus=8)
    with ResultStore(tmp_path / "b.db") as store:
        run_batch([job], results=store, workers=1)
        [again] = run_batch([job.model_copy(update={"gpus": 64})], results=store, workers=1)
        assert again.job.gpus == 64 and store.get("j").job.gpus == 64  # type: ignore[union-attr]


def test_missing_logs_and_repeated_ids(tmp_path: Path) -> None:
    gone = BatchJob(job_id="gone", log_paths=[tmp_path / "slurm-9.out"])
    other = BatchJob(job_id="other")
    with ResultStore(tmp_path / "b.db") as store:
        results = run_batch([gone, other, gone.model_copy(update={"name": "dup"})], results=store, workers=1)
    assert [(r.job.job_id, r.job.name) for r in results] == [("gone", ""), ("other", "")]  # the first of an id wins
    assert results[1].status == "no_logs" and "lists no log files" in (results[1].error or "")
    assert results[0].status == "no_logs" and "missing: " in (results[0].error or "")
    assert "slurm-9.out" in (results[0].error or "")


def test_a_job_whose_metadata_cannot_be_read_is_an_error_until_it_is_fixed(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("2025-03-01 10:00:00 INFO step 1 loss 2.0\n")
    bad = BatchJob(job_id="bad", log_paths=[log], metadata_error="j/job.json: invalid job metadata at gpus: ...")
    good = BatchJob(job_id="good", log_paths=[log])
    with ResultStore(tmp_path / "b.db") as store:
        first = run_batch([bad, good], results=store, workers=1)
        assert [(r.job.job_id, r.status, r.error) for r in first] == [
            ("bad", "error", "j/job.json: invalid job metadata at gpus: ..."),
            ("good", "ok", None),
        ]
        [fixed] = run_batch([bad.model_copy(update={"metadata_error": None})], results=store, workers=1)
        assert fixed.status == "ok"  # the logs did not change, but the stored error is not reused


def test_a_run_wide_error_stops_the_batch_and_is_never_stored_as_a_jobs_result(tree: Path, tmp_path: Path) -> None:
    """A rule store the workers cannot open is the run's error, not the jobs': stored, a rerun after the fix would
    reuse it for every job whose logs did not change (issue 9)."""
    broken = tmp_path / "rules.db"
    broken.write_bytes(b"not a database\n" * 64)
    jobs = discover_jobs(tree)
    with ResultStore(tmp_path / "batch.db") as store:
        with pytest.raises(CrashcartError) as stopped:
            run_batch(jobs, results=store, workers=2, rules_path=broken)
        message = str(stopped.value)
        assert message.startswith("batch stopped at job ") and "\n" not in message
        assert f"cannot open the stores: {broken}: cannot open as a rule store" in message
        assert [(r.job.job_id, r.status) for r in store.all()] == [("empty", "no_logs")]  # known before any worker

        fixed, calls = _run(jobs, store)
        assert calls[-1] == (5, 5)  # every job triaged now: no stored error stood in for it
        got = _by_id(fixed)
        assert [got[name].status for name in EXPECTED] == ["ok", "ok", "ok"]
        assert not [r for r in fixed if "cannot open the stores" in (r.error or "")]


def test_logs_key_follows_paths_sizes_and_mtimes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("x\n")
    b.write_text("y\n")
    key = logs_key(stat_logs([a, b]))
    assert key == logs_key(stat_logs([b, a])) == logs_key(stat_logs([tmp_path]))  # order and folders do not matter
    a.write_text("xx\n")
    assert logs_key(stat_logs([a, b])) != key
    assert stat_logs([tmp_path / "nope"])[0][1:] == (-1, -1)


# -- a worker that dies: only its job is marked -----------------------------------------------------------


def _dies_on_boom(job: BatchJob, key: str) -> BatchResult:
    if job.job_id == "boom":
        os._exit(9)  # what the kernel's OOM killer does to a worker, as far as the pool can tell
    return BatchResult(job=job, status="ok", logs_key=key)


def test_a_job_that_kills_its_worker_is_isolated_and_the_rest_complete() -> None:
    todo = [(BatchJob(job_id=i), "k") for i in ("a", "b", "boom", "c", "d", "e")]
    seen: list[tuple[int, int]] = []
    results = list(
        triage_jobs(todo, workers=2, fn=_dies_on_boom, context="fork", progress=lambda d, t: seen.append((d, t)))
    )
    status = {r.job.job_id: r.status for r in results}
    assert status == {"a": "ok", "b": "ok", "boom": "error", "c": "ok", "d": "ok", "e": "ok"}
    assert "worker process died" in (next(r for r in results if r.job.job_id == "boom").error or "")
    assert seen[-1] == (6, 6)


# -- a batch killed with SIGKILL takes its processes with it ----------------------------------------------


@pytest.fixture(scope="module")
def busy_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four 20 MB jobs: each keeps a worker busy for seconds, so the kill lands mid-triage."""
    root = tmp_path_factory.mktemp("busy")
    for seed in range(4):
        generate_job(root / f"job{seed}", JobSpec(nodes=4, total_mb=20, scenario="xid79", seed=seed, start=START))
    return root


def test_a_batch_killed_with_sigkill_leaves_no_worker_or_forkserver(busy_tree: Path, tmp_path: Path) -> None:
    """kill -9 runs no cleanup in the parent: its forkserver and workers must notice and end on their own."""
    cmd = [str(Path(sys.executable).with_name("crashcart")), "batch", str(busy_tree), "--workers", "2"]
    cmd += ["--results", str(tmp_path / "b.db"), "--format", "json", "-o", str(tmp_path / "out.json")]

    def workers_started(pid: int, members: dict[int, int]) -> bool:  # the forkserver's children
        return sum(1 for p in members.values() if p != pid and p in members) >= 2

    recorded, left = kill_when(cmd, workers_started)
    assert len(recorded) >= 4, recorded  # the batch, the forkserver, two workers (and a resource tracker)
    assert left == [], f"still running after the batch was killed: {left} of {recorded}"


# -- the result store ---------------------------------------------------------------------------------------


def test_store_round_trips_replaces_and_persists(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "batch.db"
    r = BatchResult(job=BatchJob(job_id="x", gpus=8), status="no_logs", logs_key="k1")
    with ResultStore(path) as store:
        assert store.get("x") is None and store.all() == []
        store.put(r)
        store.put(r.model_copy(update={"logs_key": "k2"}))
    with ResultStore(path) as store:
        assert [s.logs_key for s in store.all()] == ["k2"] and store.get("x").job.gpus == 8  # type: ignore[union-attr]
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_store_errors_name_the_fix(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("this is not sqlite " * 100)
    with pytest.raises(InputError, match=r"junk.db: cannot open as a batch .*not a database.*--results PATH"):
        ResultStore(junk)
    newer = tmp_path / "newer.db"
    ResultStore(newer).close()
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(InputError, match="schema v99 was written by a newer crashcart"):
        ResultStore(newer)


def test_default_results_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CRASHCART_BATCH_RESULTS", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_results_path() == tmp_path / "crashcart" / "batch.db"
    monkeypatch.setenv("CRASHCART_BATCH_RESULTS", str(tmp_path / "x.db"))
    assert default_results_path() == tmp_path / "x.db"

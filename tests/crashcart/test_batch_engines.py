"""crashcart/batch/engines.py: triage on a Dask cluster, a job that kills its worker isolated, stores opened once."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import dask
import pytest
from batch_jobs import dies_on_boom, three_jobs

from crashcart.batch import engines, runner
from crashcart.batch.engines import DaskEngine, _on_worker, check_workers
from crashcart.batch.models import BatchJob
from crashcart.batch.results import ResultStore
from crashcart.batch.runner import run_batch, triage_one
from crashcart.batch.tree import discover_jobs
from crashcart.knowledge.errors import InputError
from crashcart.stores import open_rule_store


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """A local cluster of 2 workers whose scheduler gives up on a task the first time its worker dies (its
    default allows 3 deaths; the engine's isolation is the same whatever the number, only slower)."""
    from distributed import LocalCluster

    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.CRITICAL,
        ) as cluster,
    ):
        yield cluster.scheduler_address


def test_a_job_that_kills_its_worker_is_its_error_and_the_rest_complete(scheduler: str) -> None:
    todo = [(BatchJob(job_id=i), "k") for i in ("a", "b", "boom", "c", "d", "e")]
    seen: list[tuple[int, int]] = []
    with DaskEngine(scheduler, fn=dies_on_boom) as engine:
        results = list(engine.triage(todo, (None, None, None), lambda d, t: seen.append((d, t))))
    status = {r.job.job_id: r.status for r in results}
    assert status == {"a": "ok", "b": "ok", "boom": "error", "c": "ok", "d": "ok", "e": "ok"}
    assert "worker process died" in (next(r for r in results if r.job.job_id == "boom").error or "")
    assert seen[0] == (0, 6) and seen[-1] == (6, 6) and len(seen) == 7


def test_a_worker_without_crashcart_is_refused_in_one_line(
    scheduler: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check asks each real worker for the distribution's version. Here one the driver has and the workers lack
    (its metadata is in a folder on the driver's sys.path only: they started before it was added), as crashcart is
    missing on a worker where it was never installed."""
    from distributed import Client

    info = tmp_path / "only_on_the_driver-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: only-on-the-driver\nVersion: 2.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with Client(scheduler) as client:
        client.wait_for_workers(2)  # back from the killing test before: the check asks the workers there are
        check_workers(client)  # crashcart itself: every worker has this version
        with pytest.raises(InputError, match=r"^Dask worker tcp://\S+ has no crashcart, this batch runs 2\.0: ") as err:
            check_workers(client, dist="only-on-the-driver")
    assert str(err.value).endswith("install it on every worker (pip install 'crashcart[dask]')")


def test_run_batch_on_the_engine_stores_each_result_and_starts_nothing_for_a_rerun(
    scheduler: str, tmp_path: Path
) -> None:
    jobs = discover_jobs(three_jobs(tmp_path / "jobs"))
    with ResultStore(tmp_path / "b.db") as store:
        with DaskEngine(scheduler) as engine:
            first = run_batch(jobs, results=store, engine=engine)
        assert [r.status for r in first] == ["ok"] * 3 and len(store) == 3
        never = DaskEngine("tcp://127.0.0.1:1")  # no scheduler there: a rerun with nothing to do never joins one
        calls: list[tuple[int, int]] = []
        with never:
            again = run_batch(jobs, results=store, engine=never, progress=lambda d, t: calls.append((d, t)))
        assert again == first and calls == [(0, 0)]


def test_a_worker_opens_the_stores_once_for_the_same_paths_and_anew_for_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """_on_worker as a Dask worker runs it, here in this process (whose worker state is put back after)."""
    monkeypatch.setattr(runner, "_WORKER", {})
    monkeypatch.setattr(engines, "_OPENED", {})
    jobs = discover_jobs(three_jobs(tmp_path / "jobs"))
    first, second = (open_rule_store(tmp_path / f"rules{i}.db", create=True) for i in (1, 2))
    first.close()
    second.close()
    init = (None, tmp_path / "rules1.db", None)
    out = _on_worker(triage_one, jobs[0], "k", init)
    opened = runner._WORKER["rules"]
    assert (out.status, out.logs_key, out.job) == ("ok", "k", jobs[0])
    assert _on_worker(triage_one, jobs[1], "k", init).status == "ok" and runner._WORKER["rules"] is opened
    _on_worker(triage_one, jobs[2], "k", (None, tmp_path / "rules2.db", None))
    assert runner._WORKER["rules"] is not opened

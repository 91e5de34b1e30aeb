"""Where a batch's triage runs when it is not this machine's process pool: a Dask cluster (`--engine dask`).

The driver keeps every decision: which jobs to triage (their logs keys), storing each result, the summary. An
engine only runs runner.triage_one over the todo list and hands each result back as it lands, in the shape of
runner.triage_jobs. What a task ships is small: the BatchJob (log paths and metadata, never log contents: a worker
reads the logs where they live, on the file system the cluster shares), the logs key and the stores' paths. Each
worker process opens the stores once, for as long as it triages for a batch with those paths. A result comes back
as the BatchResult itself, pickled (about 0.1 ms and 5 KB a job; a model_dump dict validated on the driver measured
no cheaper, benchmarks/bench_engines.py), so run_wide, which is never written out, travels with it.

A job that raises is an `error` result (triage_one's own); a task the cluster cannot run (crashcart missing on a
worker, a cancelled task) stops the batch with one line, storing nothing for it. A job whose worker dies (the
scheduler gives up on it after its allowed failures, as KilledWorker) is triaged again alone once the others are
done, as the local pool does, so only the job that kills its worker again is marked.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Generator, Sequence
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from crashcart.batch.models import BatchJob, BatchResult
from crashcart.batch.runner import Progress, TriageFn, describe, died, init_worker, triage_one
from crashcart.knowledge.errors import InputError

if TYPE_CHECKING:
    from distributed import Client

DASK_ADDRESS_ENV = "DASK_SCHEDULER_ADDRESS"  # Dask's own convention for the scheduler a client joins
DASK_EXTRA = "pip install 'crashcart[dask]'"
CONNECT_TIMEOUT_S = 30  # how long a client keeps trying a scheduler that does not answer


class Engine(Protocol):
    """Runs triage_one over (job, logs key) pairs somewhere, yielding each result as it completes."""

    def triage(
        self, todo: Sequence[tuple[BatchJob, str]], init: tuple[Any, ...], progress: Progress | None
    ) -> Generator[BatchResult]: ...


class DaskEngine:
    """Triage on a Dask cluster: the scheduler at `address` (else $DASK_SCHEDULER_ADDRESS), or with neither a
    local cluster of `workers` processes (default: CPUs) that ends with the engine. Joined (or started) on the
    first job to triage, so a rerun that reuses every result starts nothing. The workers must have crashcart
    installed and see the logs at the same paths. `fn` exists for tests (it must be importable on the workers).
    """

    def __init__(self, address: str | None = None, workers: int | None = None, *, fn: TriageFn = triage_one) -> None:
        try:
            import distributed  # noqa: F401  (here, so a missing extra is said before any work)
        except ImportError:
            raise InputError(f"--engine dask needs Dask, which is not installed: {DASK_EXTRA}") from None
        self._address = address or os.environ.get(DASK_ADDRESS_ENV) or None
        self._workers, self._fn = workers, fn
        self._client: Client | None = None
        self._stack = ExitStack()

    def __enter__(self) -> DaskEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _connect(self) -> Client:
        from distributed import Client, LocalCluster

        if self._client is not None:
            return self._client
        if self._address is None:
            # One thread per worker: triage is CPU-bound Python, and a worker's stores are opened per process.
            cluster = LocalCluster(
                n_workers=self._workers or os.cpu_count() or 1,
                threads_per_worker=1,
                processes=True,
                dashboard_address="127.0.0.1:0",  # its HTTP server on a free port, this machine only
                silence_logs=logging.CRITICAL,  # a worker killed by a job is the batch's to report
            )
            self._client = self._stack.enter_context(Client(self._stack.enter_context(cluster)))
            return self._client
        try:
            client = self._stack.enter_context(Client(self._address, timeout=CONNECT_TIMEOUT_S))
        except (OSError, ValueError) as exc:  # refused, timed out, or not an address
            raise InputError(f"cannot reach the Dask scheduler at {self._address}: {exc}; fix --address") from None
        check_workers(client)
        self._client = client
        return client

    def triage(
        self, todo: Sequence[tuple[BatchJob, str]], init: tuple[Any, ...], progress: Progress | None
    ) -> Generator[BatchResult]:
        from distributed import as_completed

        total, count, killers = len(todo), 0, []
        if progress:
            progress(0, total)
        if not todo:
            return
        client = self._connect()
        batch = uuid.uuid4().hex[:12]  # task keys unique to this batch: a cluster may serve several
        futures = {
            self._submit(job, key, init, f"crashcart-triage-{batch}-{i}"): (job, key)
            for i, (job, key) in enumerate(todo)
        }
        try:
            for fut in as_completed(futures):
                result = self._result(fut, *futures[fut])
                if result is None:
                    killers.append(futures[fut])
                    continue
                count += 1
                if progress:
                    progress(count, total)
                yield result
            for i, (job, key) in enumerate(killers):  # alone, so a worker it kills takes no other job with it
                result = self._result(self._submit(job, key, init, f"crashcart-alone-{batch}-{i}"), job, key)
                count += 1
                if progress:
                    progress(count, total)
                yield result or died(job, key)
        finally:
            client.cancel(list(futures))  # a batch stopped early (a run-wide error) leaves nothing queued

    def _submit(self, job: BatchJob, key: str, init: tuple[Any, ...], name: str) -> Any:
        assert self._client is not None
        return self._client.submit(_on_worker, self._fn, job, key, init, key=name, pure=False)

    @staticmethod
    def _result(fut: Any, job: BatchJob, key: str) -> BatchResult | None:
        """The task's result; None when its worker died under it (the scheduler's KilledWorker)."""
        from distributed.scheduler import KilledWorker

        try:
            return fut.result()
        except KilledWorker:
            return None
        except Exception as exc:  # triage_one raises nothing: the cluster could not run the task or send it back
            return BatchResult(
                job=job,
                status="error",
                logs_key=key,
                error=f"the Dask cluster could not run its triage ({describe(exc)}): is crashcart, the same "
                "version, installed on every worker?",
                triaged_at=datetime.now(UTC),
                run_wide=True,  # the cluster's, not this job's: the batch stops, and a rerun triages the job
            )


def check_workers(client: Client, dist: str = "crashcart") -> None:
    """Every worker has crashcart, the driver's version. A worker without it cannot even load a task, and Dask
    then waits for that task forever; one of another version may triage otherwise. (Workers that join later are
    not checked.) `dist` exists for tests."""
    from importlib.metadata import version

    want = version(dist)
    for worker, got in sorted(client.run(version, dist, on_error="return").items()):
        if got != want:
            has = f"crashcart {got}" if isinstance(got, str) else "no crashcart"
            raise InputError(
                f"Dask worker {worker} has {has}, this batch runs {want}: install it on every worker ({DASK_EXTRA})"
            )


# -- inside a worker process ---------------------------------------------------------------------------------

_TASK_LOCK = threading.Lock()  # one triage at a time per process: the opened stores are the process's
_OPENED: dict[str, tuple[Any, ...]] = {}  # "init": the store paths the process has open now


def _on_worker(fn: TriageFn, job: BatchJob, key: str, init: tuple[Any, ...]) -> BatchResult:
    """One job on a Dask worker: the stores opened once per process for these paths, then runner's triage."""
    with _TASK_LOCK:
        if _OPENED.get("init") != init:
            init_worker(*init)
            _OPENED["init"] = init
        return fn(job, key)

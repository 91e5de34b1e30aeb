"""Triage many jobs in parallel processes; store each result as it lands, so a rerun skips unchanged jobs.

One process per job at a time (triage's own per-file pool is off inside a worker: the batch is the parallel
unit). A job that fails to triage becomes an `error` result and the batch goes on; a job whose worker process
dies (killed for memory, a crash in a native library) is isolated by rerunning the unfinished jobs one at a
time, so only the job that kills its worker is marked. An engine (crashcart/batch/engines.py: a Dask cluster) runs
the same triage_one elsewhere; deciding what to triage and storing the results stay here.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crashcart.batch.models import BatchJob, BatchResult, JobPages
from crashcart.batch.results import ResultStore
from crashcart.knowledge.errors import CrashcartError, KnowledgeError
from crashcart.parsers.sources import printable
from crashcart.parsers.workers import worker_pool

if TYPE_CHECKING:
    from crashcart.batch.engines import Engine

Progress = Callable[[int, int], None]  # (jobs triaged so far, jobs to triage in this run)
TriageFn = Callable[[BatchJob, str], BatchResult]
_Stat = tuple[str, int, int]  # path, size, mtime_ns (-1, -1 when missing)


def run_batch(
    jobs: Iterable[BatchJob],
    *,
    results: ResultStore,
    workers: int | None = None,
    memory_path: str | Path | None = None,
    rules_path: str | Path | None = None,
    progress: Progress | None = None,
    force: bool = False,
    pages: JobPages | None = None,
    engine: Engine | None = None,
) -> list[BatchResult]:
    """Triage every job whose logs changed since its stored result (all of them with force); one result per job.

    memory_path / rules_path: the incident store and rule store each worker opens (None: not consulted).
    pages: where each triaged job's HTML report is written (named by crashcart.htmlreport.batch.page_name), from
    the whole report the worker holds; a stored result whose page is missing there is triaged again for it.
    engine: where the jobs are triaged (crashcart.batch.engines); None: a process pool of `workers` here.
    Results come back in the order of `jobs` (a repeated job id counts once: the first wins).
    """
    first: dict[str, BatchJob] = {}
    for job in jobs:
        first.setdefault(job.job_id, job)
    unique = list(first.values())
    done: dict[str, BatchResult] = {}
    todo: list[tuple[BatchJob, str, int]] = []
    for job in unique:
        stats = stat_logs(job.log_paths)
        key = logs_key(stats)
        stored = None if force else results.get(job.job_id)
        if job.metadata_error is not None:
            done[job.job_id] = _bad_metadata(job)
            results.put(done[job.job_id])
        elif stored is not None and stored.logs_key == key and (pages is None or _has_page(pages, stored)):
            done[job.job_id] = _with_job(stored, job, results)
        elif not any(size >= 0 for _, size, _ in stats):
            done[job.job_id] = _no_logs(job, key, stats)
            results.put(done[job.job_id])
        else:
            todo.append((job, key, sum(max(size, 0) for _, size, _ in stats)))
    todo.sort(key=lambda t: -t[2])  # largest first: the long jobs start early and the pool ends together
    pairs, init = [(j, k) for j, k, _ in todo], (memory_path, rules_path, pages)
    triaged = (
        engine.triage(pairs, init, progress)
        if engine is not None
        else triage_jobs(pairs, workers=workers, init=init, progress=progress)
    )
    with contextlib.closing(triaged):  # a run-wide error raised here closes it now: the pool ends, the queue empties
        for result in triaged:
            done[result.job.job_id] = _stored(result, results)
    return [done[j.job_id] for j in unique]


def _has_page(pages: JobPages, stored: BatchResult) -> bool:
    from crashcart.htmlreport.batch import page_name

    return stored.status != "ok" or (pages.folder / page_name(stored.job.job_id)).is_file()


def _stored(result: BatchResult, results: ResultStore) -> BatchResult:
    """The result, once stored; a run-wide error is never stored as the job's (a rerun would reuse it after the
    fix) but stops the batch with its one line."""
    if result.run_wide:
        raise CrashcartError(
            f"batch stopped at job {result.job.job_id}: {result.error}; the jobs triaged so far are stored, "
            "run the batch again once this is fixed"
        )
    results.put(result)
    return result


def stat_logs(paths: Sequence[Path]) -> list[_Stat]:
    """(path, size, mtime_ns) of every file the paths name, folders expanded, sorted; a missing path gives -1s."""
    found: list[_Stat] = []
    for path in map(Path, paths):
        if path.is_dir():
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                found += [_stat(Path(dirpath) / n) for n in filenames if not n.startswith(".")]
        else:
            found.append(_stat(path))
    return sorted(found)


def _stat(path: Path) -> _Stat:
    try:
        st = path.stat()
    except OSError:
        return (str(path.absolute()), -1, -1)
    return (str(path.absolute()), st.st_size, st.st_mtime_ns)


def logs_key(stats: Sequence[_Stat]) -> str:
    """The identity of a job's logs: a hash of their sorted paths, sizes and modification times."""
    digest = hashlib.sha256()
    for path, size, mtime in stats:
        digest.update(f"{path}\0{size}\0{mtime}\n".encode("utf-8", "surrogateescape"))  # a name may not be UTF-8
    return digest.hexdigest()[:32]


def _with_job(stored: BatchResult, job: BatchJob, results: ResultStore) -> BatchResult:
    """The stored result with the job's current metadata (a job.json may have changed while its logs did not)."""
    if stored.job == job:
        return stored
    updated = stored.model_copy(update={"job": job})
    results.put(updated)
    return updated


def _no_logs(job: BatchJob, key: str, stats: Sequence[_Stat]) -> BatchResult:
    missing = [p for p, size, _ in stats if size < 0]
    why = f"missing: {', '.join(missing[:3])}" if missing else "the job lists no log files"
    return BatchResult(
        job=job, status="no_logs", error=f"no log files to triage ({why})", logs_key=key, triaged_at=datetime.now(UTC)
    )


def _bad_metadata(job: BatchJob) -> BatchResult:
    """The job's own error; no logs key, so that once its job.json is fixed a rerun triages it."""
    return BatchResult(job=job, status="error", error=job.metadata_error, triaged_at=datetime.now(UTC))


def triage_jobs(
    todo: Sequence[tuple[BatchJob, str]],
    *,
    workers: int | None = None,
    init: tuple[Any, ...] = (None, None, None),
    progress: Progress | None = None,
    fn: TriageFn | None = None,
    context: str = "forkserver",
) -> Generator[BatchResult]:
    """Yield a result per (job, logs key) as each completes, whatever happens to the worker processes.

    A dead worker breaks the whole pool; the unfinished jobs then run one at a time, so the job that kills its
    worker again is marked `error` and the others complete. `fn` and `context` exist for tests.
    """
    fn = fn or triage_one
    pending, total, count = list(todo), len(todo), 0
    size = max(1, min(workers or os.cpu_count() or 1, len(todo)))
    if progress:
        progress(0, total)
    while pending:
        finished: set[str] = set()
        for result in _run_pool(pending, size, init, fn, context):
            finished.add(result.job.job_id)
            count += 1
            if progress:
                progress(count, total)
            yield result
        rest = [t for t in pending if t[0].job_id not in finished]
        if rest and size == 1:  # the first unfinished job killed a lone worker: it is the culprit
            count += 1
            if progress:
                progress(count, total)
            yield died(*rest[0])
            rest = rest[1:]
        pending, size = rest, 1


def _run_pool(
    todo: Sequence[tuple[BatchJob, str]], size: int, init: tuple[Any, ...], fn: TriageFn, context: str
) -> Iterator[BatchResult]:
    """Results of one pool until it is done or broken (then the unfinished jobs are simply not yielded)."""
    pool = worker_pool(size, context=context, initializer=init_worker, initargs=init)  # they die with the batch
    try:
        futures: dict[Future, tuple[BatchJob, str]] = {pool.submit(fn, job, key): (job, key) for job, key in todo}
        waiting = set(futures)
        while waiting:
            ready, waiting = wait(waiting, return_when=FIRST_COMPLETED)
            for fut in ready:
                try:
                    result = fut.result()
                except BrokenProcessPool:
                    return
                except Exception as exc:  # the result could not come back (e.g. it did not pickle)
                    job, key = futures[fut]
                    result = BatchResult(
                        job=job, status="error", logs_key=key, error=describe(exc), triaged_at=datetime.now(UTC)
                    )
                yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def died(job: BatchJob, key: str) -> BatchResult:
    return BatchResult(
        job=job,
        status="error",
        logs_key=key,
        triaged_at=datetime.now(UTC),
        error="the worker process died while triaging this job (killed for memory, or a crash): "
        f"triage it alone with `crashcart triage {' '.join(map(printable, job.log_paths[:3]))}`",
    )


# -- inside a worker process ---------------------------------------------------------------------------------

_WORKER: dict[str, Any] = {}


def init_worker(memory_path: str | Path | None, rules_path: str | Path | None, pages: JobPages | None = None) -> None:
    """Open the stores once per worker (closing any it had open). Never raises (that would break the pool): a
    failure is kept, and every job of this worker reports it."""
    for store in (_WORKER.get("memory"), _WORKER.get("rules")):
        if store is not None:
            with contextlib.suppress(Exception):
                store.close()
    _WORKER.clear()
    _WORKER["pages"] = pages
    try:
        from crashcart.stores import open_memory, open_rule_store

        _WORKER["memory"] = open_memory(memory_path) if memory_path is not None else None
        _WORKER["rules"] = open_rule_store(rules_path) if rules_path is not None else None
    except Exception as exc:
        _WORKER["error"] = describe(exc)


def triage_one(job: BatchJob, key: str) -> BatchResult:
    """Triage one job in this process; every exception becomes an `error` result."""
    from crashcart.api import triage

    began = time.perf_counter()
    base: dict[str, Any] = {"job": job, "logs_key": key}
    try:
        if "error" in _WORKER:
            raise KnowledgeError(f"cannot open the stores: {_WORKER['error']}")
        report = triage(job.log_paths, workers=1, memory=_WORKER.get("memory"), rule_store=_WORKER.get("rules"))
        if _WORKER.get("pages") is not None:
            _write_page(_WORKER["pages"], job, report)
        out = BatchResult(
            **base, status="ok", diagnosis=report.diagnosis, bytes=report.stats.bytes, skipped=report.skipped
        )
    except Exception as exc:
        out = BatchResult(
            **base,
            status="error",
            error=describe(exc),
            bytes=sum(max(s, 0) for _, s, _ in stat_logs(job.log_paths)),
            run_wide=isinstance(exc, _RUN_WIDE),
        )
    return out.model_copy(update={"seconds": round(time.perf_counter() - began, 3), "triaged_at": datetime.now(UTC)})


def _write_page(pages: JobPages, job: BatchJob, report: Any) -> None:
    """The job's HTML report, beside the batch's. A page that cannot be written (a full disk, or a bug in the
    renderer) never loses the job's result: it is left out, and the CLI names each job whose page is missing."""
    from crashcart.htmlreport.batch import page_name
    from crashcart.htmlreport.job import to_html

    with contextlib.suppress(Exception):
        (pages.folder / page_name(job.job_id)).write_text(to_html(report, back=f"../{pages.batch_page}"), "utf-8")


# Errors of the run, not of a job's logs: the knowledge files and the stores (opening them, SQLite underneath).
_RUN_WIDE = (KnowledgeError, sqlite3.Error)


def describe(exc: Exception) -> str:
    """A CrashcartError's message names the fix already; anything else is a bug, so its type is kept."""
    return str(exc) if isinstance(exc, CrashcartError) else f"{type(exc).__name__}: {exc}"

"""What a batch found, weighed by cost: which failures burn the most GPU time, and which nodes keep failing.

Counting jobs alone misleads. In Acme's study of two LLM clusters (NSDI 2024) infrastructure failures were 11%
of failed jobs but 82% of the GPU time lost to failures: big jobs die of infrastructure, small ones of bugs.
So every figure here comes as jobs and as GPU-hours (GPUs allocated x elapsed time).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from crashcart.agent.actions import drain_command
from crashcart.batch.models import BatchResult
from crashcart.knowledge.records import Strict, is_host
from crashcart.knowledge.taxonomy import INFRA_CLASSES, FailureClass

REPEAT_MIN_JOBS = 2  # a node named faulty by this many jobs is a repeat offender
Decider = Literal["rules", "structure", "memory", "llm", "unknown"]
DECIDERS: tuple[Decider, ...] = ("rules", "structure", "memory", "llm", "unknown")


class Totals(Strict):
    """Counts over every job, and the throughput of the work this run did (not the results it reused)."""

    jobs: int
    triaged: int  # status ok
    errors: int
    no_logs: int
    gpu_hours: float  # all jobs, whatever their status
    bytes: int  # log bytes read, all jobs
    seconds: float  # triage time summed over jobs (CPU-side; jobs ran in parallel)
    new_jobs: int  # triaged by this run
    reused: int  # taken from the result store: logs unchanged
    new_bytes: int
    wall_s: float  # wall time of this run (the sum of new jobs' seconds when not measured)
    jobs_per_min: float
    mb_per_s: float


class ClassRow(Strict):
    """One failure class: its jobs and the GPU-hours they had used, as counts and as shares of triaged jobs."""

    failure_class: FailureClass
    infrastructure: bool
    jobs: int
    job_share: float
    gpu_hours: float
    gpu_hour_share: float


class DeciderRow(Strict):
    """Who settled the class: the rules, incident memory, the LLM, or nobody (class unknown)."""

    decided_by: Decider
    jobs: int
    share: float


class Split(Strict):
    """A group of triaged jobs as a share of them all, by count and by GPU-hours."""

    jobs: int
    job_share: float
    gpu_hours: float
    gpu_hour_share: float


class Offender(Strict):
    """A node that infrastructure failures of several jobs name as faulty: drain it before it kills another."""

    node: str
    jobs: int
    job_ids: list[str]
    classes: list[FailureClass]
    gpu_hours: float  # of the jobs it took down
    drain: str  # the Slurm command that takes it out of service


class Problem(Strict):
    """A job the batch could not triage, and why."""

    job_id: str
    status: Literal["error", "no_logs"]
    error: str


class BatchSummary(Strict):
    totals: Totals
    classes: list[ClassRow]  # by GPU-hours, then jobs
    infrastructure: Split  # the classes in infrastructure_classes
    other: Split  # every other triaged job: the job's own faults, timeouts without a cause, unknown
    infrastructure_classes: list[FailureClass]
    deciders: list[DeciderRow]  # always all five, in a fixed order
    offenders: list[Offender]  # by jobs, then GPU-hours
    problems: list[Problem]


def summarise(
    results: Sequence[BatchResult], *, since: datetime | None = None, wall_s: float | None = None
) -> BatchSummary:
    """Summarise a batch. Results triaged at or after `since` are this run's new work (all of them when None);
    wall_s is how long the run took, for the throughput."""
    ok = [r for r in results if r.status == "ok" and r.diagnosis is not None]
    classes = _classes(ok)
    infra = [r for r in ok if _class(r) in INFRA_CLASSES]
    return BatchSummary(
        totals=_totals(results, ok, since, wall_s),
        classes=classes,
        infrastructure=_split(infra, ok),
        other=_split([r for r in ok if _class(r) not in INFRA_CLASSES], ok),
        infrastructure_classes=sorted(INFRA_CLASSES, key=lambda c: c.value),
        deciders=_deciders(ok),
        offenders=_offenders(ok),
        problems=[
            Problem(job_id=r.job.job_id, status=r.status, error=r.error or "") for r in results if r.status != "ok"
        ],
    )


def _class(r: BatchResult) -> FailureClass:
    assert r.diagnosis is not None
    return r.diagnosis.failure_class


def _share(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole else 0.0


def _hours(rs: Sequence[BatchResult]) -> float:
    return sum(r.job.gpu_hours for r in rs)


def _totals(
    results: Sequence[BatchResult], ok: Sequence[BatchResult], since: datetime | None, wall_s: float | None
) -> Totals:
    new = [r for r in results if since is None or (r.triaged_at is not None and r.triaged_at >= since)]
    wall = wall_s if wall_s is not None else sum(r.seconds for r in new)
    new_bytes = sum(r.bytes for r in new)
    return Totals(
        jobs=len(results),
        triaged=len(ok),
        errors=sum(r.status == "error" for r in results),
        no_logs=sum(r.status == "no_logs" for r in results),
        gpu_hours=round(_hours(results), 3),
        bytes=sum(r.bytes for r in results),
        seconds=round(sum(r.seconds for r in results), 3),
        new_jobs=len(new),
        reused=len(results) - len(new),
        new_bytes=new_bytes,
        wall_s=round(wall, 3),
        jobs_per_min=round(len(new) / wall * 60, 1) if wall > 0 else 0.0,
        mb_per_s=round(new_bytes / 1e6 / wall, 1) if wall > 0 else 0.0,
    )


def _classes(ok: Sequence[BatchResult]) -> list[ClassRow]:
    groups: dict[FailureClass, list[BatchResult]] = defaultdict(list)
    for r in ok:
        groups[_class(r)].append(r)
    total_h = _hours(ok)
    rows = [
        ClassRow(
            failure_class=c,
            infrastructure=c in INFRA_CLASSES,
            jobs=len(rs),
            job_share=_share(len(rs), len(ok)),
            gpu_hours=round(_hours(rs), 3),
            gpu_hour_share=_share(_hours(rs), total_h),
        )
        for c, rs in groups.items()
    ]
    return sorted(rows, key=lambda row: (-row.gpu_hours, -row.jobs, row.failure_class.value))


def _split(part: Sequence[BatchResult], ok: Sequence[BatchResult]) -> Split:
    return Split(
        jobs=len(part),
        job_share=_share(len(part), len(ok)),
        gpu_hours=round(_hours(part), 3),
        gpu_hour_share=_share(_hours(part), _hours(ok)),
    )


def decider(r: BatchResult) -> Decider:
    """Who settled this job's class; a job whose class is unknown was settled by nobody."""
    assert r.diagnosis is not None
    if r.diagnosis.decided_by == "none" or r.diagnosis.failure_class is FailureClass.UNKNOWN:
        return "unknown"
    return r.diagnosis.decided_by


def _deciders(ok: Sequence[BatchResult]) -> list[DeciderRow]:
    counts = {d: 0 for d in DECIDERS}
    for r in ok:
        counts[decider(r)] += 1
    return [DeciderRow(decided_by=d, jobs=n, share=_share(n, len(ok))) for d, n in counts.items()]


def _offenders(ok: Sequence[BatchResult]) -> list[Offender]:
    """Nodes named faulty by infrastructure failures of several jobs. An OOM or a code bug names the node where
    a rank died, not a bad node, so those jobs do not count."""
    by_node: dict[str, list[BatchResult]] = defaultdict(list)
    for r in ok:
        if _class(r) in INFRA_CLASSES:
            assert r.diagnosis is not None
            for node in dict.fromkeys(n for n in r.diagnosis.faulty_nodes if is_host(n)):  # "rank 3" drains nothing
                by_node[node].append(r)
    found = [_offender(node, rs) for node, rs in by_node.items() if len(rs) >= REPEAT_MIN_JOBS]
    return sorted(found, key=lambda o: (-o.jobs, -o.gpu_hours, o.node))


def _offender(node: str, rs: Sequence[BatchResult]) -> Offender:
    classes = sorted({_class(r) for r in rs}, key=lambda c: c.value)
    reason = f"crashcart: {len(rs)} failed jobs ({', '.join(c.value for c in classes)})"
    return Offender(
        node=node,
        jobs=len(rs),
        job_ids=sorted(r.job.job_id for r in rs),
        classes=classes,
        gpu_hours=round(_hours(rs), 3),
        drain=drain_command(node, reason),
    )

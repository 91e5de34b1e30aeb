"""Trees of generated failed jobs for the batch tests (one folder a job, as a cluster's log root holds them), and a
triage that kills its worker."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from crashcart.batch.models import BatchJob, BatchResult
from crashcart.evals.generator import JobSpec, generate_job

START = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)


def three_jobs(root: Path) -> Path:
    """Three jobs under `root`; node05 is named faulty by two infrastructure failures (a repeat offender)."""
    for seed, (name, scenario) in enumerate((("a", "xid79"), ("b", "ib_link"), ("c", "code_bug"))):
        generate_job(
            root / "2025-03" / name,
            JobSpec(nodes=6, gpus_per_node=4, total_mb=0.4, scenario=scenario, fault_node=5, seed=seed, start=START),
        )
    return root


SCENARIOS = ("xid79", "ecc", "ib_link", "gpu_oom", "host_oom", "nan_loss", "storage", "node_fail", "code_bug", "none")


def fifty_jobs(root: Path) -> Path:
    """Fifty small jobs under `root`, every scenario of the generator, in every layout; the infrastructure ones
    fault on one of three nodes, so the summary has repeat offenders to agree on."""
    layouts = ("per_node", "slurm", "per_rank")
    for i in range(50):
        spec = JobSpec(
            nodes=3,
            gpus_per_node=4,
            total_mb=0.1,
            scenario=SCENARIOS[i % len(SCENARIOS)],
            fault_node=i % 3,
            seed=i,
            start=START,
            layout=layouts[i % 3],
        )
        generate_job(root / f"cluster/job{i:02d}", spec)
    return root


def dies_on_boom(job: BatchJob, key: str) -> BatchResult:
    """A triage that ends its worker process on job "boom", as the kernel's OOM killer would; an importable home
    (tests/support is on the workers' sys.path) so a Dask worker can run it."""
    if job.job_id == "boom":
        os._exit(9)
    return BatchResult(job=job, status="ok", logs_key=key)

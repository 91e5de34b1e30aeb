"""A small tree of generated failed jobs for the batch tests: one folder a job, as a cluster's log root holds them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

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

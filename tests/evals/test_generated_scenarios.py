"""End to end on generated multi-node jobs: every built-in failure, in each log layout, is named with its node.

Each job has 4 nodes x 8 GPUs; the fault is on node02 and every other node shows only its symptoms.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.api import triage
from crashcart.evals.generator import JobSpec, generate_job
from crashcart.evals.scenarios import SCENARIOS
from crashcart.knowledge.taxonomy import FailureClass

LAYOUTS = ["per_node", "slurm", "per_rank"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_generated_job_is_diagnosed(tmp_path: Path, scenario: str, layout: str) -> None:
    job = generate_job(tmp_path, JobSpec(nodes=4, total_mb=1, scenario=scenario, fault_node=2, seed=3, layout=layout))
    report = triage([tmp_path / "logs"], workers=1)
    d = report.diagnosis
    assert d.failure_class is (job.failure_class or FailureClass.UNKNOWN)
    if job.faulty_node is not None:
        assert d.faulty_nodes == [job.faulty_node]
    else:
        assert d.faulty_nodes == []
    if job.failure_class is not None:
        assert any(any(e in ev.text for e in job.evidence) for ev in d.evidence), [ev.text for ev in d.evidence]
        assert d.iteration is not None and abs(d.iteration - job.iterations) <= 1  # the last one logged

"""`crashcart watch --slurm JOBID` against a real Slurm: it finds the running job's output file through Slurm, reports
the root cause the job prints, and ends with the final diagnosis once Slurm says the job is over."""

from __future__ import annotations

import os
import subprocess
import sys

from cluster import SlurmCluster  # tests/slurm/cluster.py (put on sys.path by conftest.py)
from test_batch_slurm import GPU_OOM_LOG, ITERATIONS, _print, _script

from crashcart.agent.watch_reports import REPORT, FinalReport, RootCauseReport
from crashcart.knowledge.taxonomy import FailureClass


def test_watch_follows_a_slurm_job_to_its_end(slurm_cluster: SlurmCluster) -> None:
    body = _print(ITERATIONS) + "sleep 4\n" + _print(GPU_OOM_LOG) + "sleep 2\nexit 1\n"
    job = slurm_cluster.sbatch(_script(body), "-J", "watch-oom", "--gres=gpu:1", "-o", "watch-%j.out")
    proc = subprocess.run(  # from submission: the job is pending or starting, its file not there yet
        [sys.executable, "-m", "crashcart.cli", "watch", "--slurm", job, "--poll", "0.2"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": slurm_cluster.env["PATH"]},  # sacct and scontrol of the private cluster
    )
    assert proc.returncode == 0, proc.stderr
    reports = [REPORT.validate_json(line) for line in proc.stdout.splitlines()]
    kinds = [type(r) for r in reports]
    assert kinds == [RootCauseReport, FinalReport], proc.stdout
    cause, final = reports
    assert isinstance(cause, RootCauseReport) and isinstance(final, FinalReport)
    assert cause.failure_class is FailureClass.GPU_OOM
    assert cause.evidence[0].file.endswith(f"watch-{job}.out")
    assert final.ended == "slurm state FAILED"
    assert final.failure_class is FailureClass.GPU_OOM

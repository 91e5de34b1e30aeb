"""Slurm job-step ids: raw lines beside whether they name a step (and so carry no training iteration)."""

from __future__ import annotations

import pytest

from crashcart.parsers.slurm import SLURM_STEP, is_slurm_step

LINES = [
    # slurmstepd and srun since Slurm 20.11 (chrisknewman/tusas#149, ishandhanani/srt-slurm#250)
    (
        "slurmstepd: error: Detected 1 oom_kill event in StepId=440575.0. Some of the step tasks have been OOM Killed.",
        True,
    ),
    ("srun: Terminating StepId=440575.0", True),
    ("slurmstepd: error: *** STEP 440575.0 ON nid001277 CANCELLED AT 2023-12-05T07:16:01 ***", True),
    ("srun: Step created for StepId=2195594.1", True),
    # behind a progress bar that lost its \r (the line of tests/parsers/test_attribution.py)
    (
        "Preparing test set...:  46%|████▋     | 31/67 [29:02<35:12, 58.67s/it]slurmstepd: error: *** STEP "
        "6053.0 ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***",
        True,
    ),
    # older releases (hafs-community/HAFS#101, lanl/PyBNF#118)
    (
        "slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. Some of your processes may have "
        "been killed by the cgroup out-of-memory handler.",
        True,
    ),
    ("srun: Terminating job step 3495064.0", True),
    ("slurmstepd: error: Detected 2 oom-kill event(s) in step 3756240.batch cgroup.", True),
    # training progress, whose numbers are iterations (horovod/horovod#2484, huggingface/accelerate#1837)
    ("[0]<stdout>:Iter #0: 120.0 img/sec per GPU", False),
    ("{'loss': 1.306, 'learning_rate': 1.2195121951219514e-06, 'epoch': 0.0}", False),
    # Slurm lines without a step id (aertslab/pySCENIC#456)
    ("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.", False),
]


@pytest.mark.parametrize(("line", "step"), LINES)
def test_is_slurm_step(line: str, step: bool) -> None:
    assert is_slurm_step(line) is step


def test_the_step_id_is_what_matches() -> None:
    m = SLURM_STEP.search("srun: Terminating job step 3495064.0")
    assert m is not None and m.group(0) == "job step 3495064.0"

"""Slurm's job-step ids, which read like training steps to a progress reader.

`slurmstepd: error: *** STEP 6053.0 ON node17 CANCELLED` and `Detected 1 oom_kill event in StepId=440575.0`
name job 6053's step 0, not iteration 6053: a progress timeline that took them for iterations would put the
job's last progress on the line that killed it. The id is always `<jobid>.<step>`, the step a number or one
of Slurm's named steps (batch, extern, interactive), and always in one of the phrasings below.
"""

from __future__ import annotations

import re

SLURM_STEP = re.compile(
    r"StepId=\d+\.\w+"  # slurmstepd / srun since 20.11: `in StepId=440575.0`, `Terminating StepId=440575.0`
    r"|\*\*\* STEP \d+\.\w+ ON "  # slurmstepd's cancel banner
    r"|\b(?:job|in) step \d+\.\w+"  # older releases: `Terminating job step 3495064.0`, `in step 3495064.0 cgroup`
    r"|\bstep \d+\.(?:batch|extern|interactive)\b"
)


def is_slurm_step(text: str) -> bool:
    """Whether the line names a Slurm job step (`STEP 6053.0`), so its number is no training iteration."""
    return SLURM_STEP.search(text) is not None

"""agent/teardown.py: what other ranks print once the launcher or the scheduler stops the group is context."""

from __future__ import annotations

from pathlib import Path

from crashcart.agent.teardown import teardown_starts
from crashcart.api import triage
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import FailureClass, Role
from crashcart.parsers.models import FileScan, TemplateStat

# rank 1 fails in the training code (alibaba/RecIS#15); torchrun stops the node's other workers (NVIDIA/nccl#1409);
# rank 0's DataLoader worker dies of the SIGKILL that follows (the line as in pytorch/pytorch#8976).
BUG = (
    "[rank1]: AttributeError: 'Trainer' object has no attribute '_train_eval_loop'. "
    "Did you mean: '_train_evaluate_loop'?"
)
SIGTERM = (
    "W0816 01:45:41.684000 140650667333440 torch/distributed/elastic/multiprocessing/api.py:858] "
    "Sending process 340263 closing signal SIGTERM"
)
KILLED = "[rank0]: RuntimeError: DataLoader worker (pid 1817) is killed by signal: Killed. "


def _write(tmp_path: Path, name: str, *lines: str) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_another_ranks_error_after_torchrun_started_the_teardown_is_context(tmp_path: Path) -> None:
    report = triage(_write(tmp_path, "train.log", BUG, SIGTERM, KILLED), workers=1)
    assert report.diagnosis.failure_class is FailureClass.CODE_BUG
    assert report.diagnosis.faulty_ranks == [1]
    killed = next(e for e in report.events if getattr(e, "rule_id", "") == "mem.host.dataloader_killed")
    assert (killed.role, killed.demoted) == (Role.CONTEXT, "teardown")
    # the same lines without the teardown line: the killed worker outranks the bug
    alone = triage(_write(tmp_path, "other.log", BUG, KILLED), workers=1)
    assert alone.diagnosis.failure_class is FailureClass.HOST_OOM


# Someone scancels the job (slurmstepd's line as in IGNF/myria3d#123) and srun stops the step (huggingface/m4-logs,
# tr_141-hanging); rank 0's own log has its steps until then and the DataLoader worker killed at the end of the grace.
STEPD = "slurmstepd: error: *** STEP 6053.0 ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***"
ABORTED = "srun: Job step aborted: Waiting up to 62 seconds for job step to finish."
# Megatron-LM's training_log (megatron/training/training.py) in the timestamped form of NVIDIA/Megatron-LM#756's
# lines in knowledge/healthy/megatron.log; the numbers are this test's
STEP = (
    " [2024-04-23 12:18:{ss}] iteration      {it}/  100000 | consumed samples:       522240 | elapsed time per"
    " iteration (ms): 2950.1 | learning rate: 2.999E-04 | global batch size:  1024 | lm loss: 2.345678E+00 |"
)


def test_a_cancellation_with_no_failure_before_it_stays_a_cancellation(tmp_path: Path) -> None:
    # the cancellation's own time ("CANCELLED AT") places it before the untimed error of the other file
    job = tmp_path / "job"
    job.mkdir()
    _write(job, "slurm-6053.out", STEPD, ABORTED)
    _write(job, "rank0.log", STEP.format(ss="01", it=510), STEP.format(ss="31", it=520), KILLED)
    report = triage([job], workers=1)
    assert report.diagnosis.failure_class is FailureClass.CANCELLED
    killed = next(e for e in report.events if getattr(e, "rule_id", "") == "mem.host.dataloader_killed")
    assert (killed.role, killed.demoted) == (Role.CONTEXT, "teardown")


def _stat(file: str, line: int, text: str) -> TemplateStat:
    ref = LineRef(file=file, line=line, text=text)
    return TemplateStat(template_id=f"{file}:{line}", template=text, count=1, first=ref, last=ref)


def test_teardown_starts_per_node_for_the_node_launchers_and_per_job_for_srun_and_mpirun() -> None:
    # DeepSpeed's launch.py (deepspeedai/DeepSpeed#1581); mpirun's abort note (SPECFEM/specfem2d#1210)
    deepspeed = "[2021-11-21 08:32:07,148] [INFO] [launch.py:131:sigkill_handler] Killing subprocess 250621"
    mpirun = "Primary job  terminated normally, but 1 process returned"
    scans = [
        FileScan(file=name, node=node, lines=9, bytes=99, hits=[], templates=[_stat(name, line, text)])
        for name, node, line, text in (("node03.log", "node03", 7, deepspeed), ("mpirun.out", None, 4, mpirun))
    ]
    starts = sorted(teardown_starts(scans, []), key=lambda s: s.file)
    assert [(s.file, s.line, s.scope, s.node, s.scheduler) for s in starts] == [
        ("mpirun.out", 4, "job", None, False),
        ("node03.log", 7, "node", "node03", False),
    ]

"""Cancellation families of knowledge/signatures/scheduler.yaml in the wordings of other schedulers and clouds
(Kubernetes' Job deadline and preemption, Kueue, AWS Batch, Cromwell on Google Batch, Lightning's Slurm requeue),
read in a whole log beside the healthy line of the same program.

Every line is one a real program printed, with the thread it was seen in or the source that prints it.
"""

from __future__ import annotations

from pathlib import Path

from triage_lines import triage_lines

from crashcart.knowledge.taxonomy import FailureClass


def test_a_kubernetes_job_past_its_deadline_was_stopped_but_one_past_its_backoff_limit_failed(tmp_path: Path) -> None:
    # kubectl get events of a Job past activeDeadlineSeconds (kubernetes/kubernetes:pkg/controller/job)
    deadline = (
        "2m30s       Warning   DeadlineExceeded            job/sample-domain1-introspector         Job was active "
        "longer than specified deadline"
    )
    assert triage_lines(tmp_path, deadline).diagnosis.failure_class is FailureClass.CANCELLED
    # the same controller's BackoffLimitExceeded: its pods failed on their own
    backoff = "Job has reached the specified backoff limit"
    assert triage_lines(tmp_path, backoff).diagnosis.failure_class is not FailureClass.CANCELLED


def test_a_pod_preempted_by_kube_scheduler_or_kueue_was_cancelled(tmp_path: Path) -> None:
    # kubectl get events of a victim pod (preemption.go's Eventf)
    kube = (
        "default     68s         Normal   Preempted   pod/low-priority-pod   Preempted by pod "
        "d9d25b95-4a7d-4214-8a30-8ce1fd616f67 on node worker-0"
    )
    assert triage_lines(tmp_path, kube).diagnosis.failure_class is FailureClass.CANCELLED
    # kubernetes-sigs/kueue#7350: the low-priority Workload's conditions, admitted then evicted
    kueue = triage_lines(
        tmp_path,
        "   message: Quota reserved in ClusterQueue q1",
        "   reason: QuotaReserved",
        "   message: 'Preempted to accommodate a workload (UID: 9f542104-a9e2-4344-ad2e-9c136204da18,",
        "    JobUID: a20d0a6a-64a3-46ce-9b95-8cfb3bf6e675) due to prioritization in the",
        "    ClusterQueue'",
        "   reason: Preempted",
    )
    assert kueue.diagnosis.failure_class is FailureClass.CANCELLED


def test_a_spot_host_the_cloud_took_back_is_a_cancellation(tmp_path: Path) -> None:
    # ministryofjustice/modernisation-platform-environments#17291: AWS Batch's status reason for a spot job
    aws = '    "StatusReason": "Host EC2 (instance i-08784105ffff56b4f) terminated."'
    assert triage_lines(tmp_path, aws).diagnosis.failure_class is FailureClass.CANCELLED
    # broadinstitute/cromwell#7457: Cromwell's report of Google Batch's exit code 50001
    gcp = (
        " [2024-06-21 12:30:09,28] [info] WorkflowManagerActor: Workflow 2cdef371-703c-4c1e-92b5-0e013dcda6c8 "
        "failed (during ExecutingWorkflowState): java.lang.Exception: Task myWorkflow.myTask:NA:1 failed: A Spot VM "
        "for the job was preempted during run time"
    )
    assert triage_lines(tmp_path, gcp).diagnosis.failure_class is FailureClass.CANCELLED


# Lightning-AI/pytorch-lightning:src/lightning/pytorch/trainer/connectors/signal_connector.py
REQUEUE_ENABLED = "SLURM auto-requeueing enabled. Setting signal handlers."  # at every start under Slurm
REQUEUE_SIGNAL = "Handling auto-requeue signal: 10"  # on SIGUSR1, before it checkpoints and requeues


def test_lightning_requeueing_on_slurms_signal_is_a_cancellation_its_set_up_line_is_not(tmp_path: Path) -> None:
    assert triage_lines(tmp_path, REQUEUE_ENABLED).diagnosis.failure_class is not FailureClass.CANCELLED
    report = triage_lines(tmp_path, REQUEUE_ENABLED, REQUEUE_SIGNAL)
    assert report.diagnosis.failure_class is FailureClass.CANCELLED
    assert report.diagnosis.evidence[0].rule_id == "sched.requeued"


# DeepSpeed 0.19.8's launcher (deepspeedai/DeepSpeed:deepspeed/launcher/launch.py, sigkill_handler) in its logger's
# format (deepspeed/utils/logging.py): the source's format strings with plausible values filled in
DS_SIGINT = "[2024-05-01 12:00:00,123] [INFO] [launch.py:262:sigkill_handler] Main process received SIGINT, exiting"
DS_SIGTERM = "[2024-05-01 12:00:00,123] [INFO] [launch.py:262:sigkill_handler] Main process received SIGTERM, exiting"


def test_deepspeeds_launcher_interrupted_is_cancelled_and_its_sigterm_a_symptom(tmp_path: Path) -> None:
    interrupted = triage_lines(tmp_path, DS_SIGINT)
    assert interrupted.diagnosis.failure_class is FailureClass.CANCELLED
    assert interrupted.diagnosis.evidence[0].rule_id == "launch.agent_interrupted"
    terminated = triage_lines(tmp_path, DS_SIGTERM)
    assert terminated.diagnosis.evidence[0].rule_id == "launch.agent_death_signal"
    assert terminated.diagnosis.evidence[0].role.value == "symptom"


def test_a_ray_task_retried_after_its_node_was_preempted_is_not_the_jobs_end(tmp_path: Path) -> None:
    # ray 2.60.0's _raylet.so: the task is retried and the retry is not counted, the job goes on
    report = triage_lines(
        tmp_path,
        "Task MyTrainer.train failed due to node preemption. The task will be retried, but the retry will not count "
        "against the normal retry count.",
    )
    assert not any(getattr(e, "rule_id", "") == "sched.cloud_preemption" for e in report.events)


def test_the_elastic_agent_signalled_at_its_exit_barrier_is_a_cancel_symptom(tmp_path: Path) -> None:
    # torch 2.14.1's torch/distributed/elastic/agent/server/api.py (_exit_barrier): the source's format
    report = triage_lines(
        tmp_path,
        "W0501 12:00:00.123000 1234 torch/distributed/elastic/agent/server/api.py:1005] Got termination signal: 15",
    )
    assert report.diagnosis.failure_class is FailureClass.CANCELLED
    assert report.diagnosis.evidence[0].rule_id == "launch.agent_death_signal"


def test_sallocs_time_limit_is_the_time_limit_and_a_bare_revoke_only_a_symptom(tmp_path: Path) -> None:
    # salloc and srun of the Debian slurm-client 22.05.8 package: the source's format strings, a job id filled in
    timed_out = triage_lines(
        tmp_path, "salloc: Job 123456 has exceeded its time limit and its allocation has been revoked."
    )
    assert timed_out.diagnosis.evidence[0].rule_id == "sched.time_limit"
    revoked = triage_lines(tmp_path, "srun: error: Job allocation 123456 has been revoked")
    assert revoked.diagnosis.failure_class is FailureClass.CANCELLED
    assert revoked.diagnosis.evidence[0].rule_id == "sched.allocation_revoked"
    assert revoked.diagnosis.evidence[0].role.value == "symptom"


def test_a_wall_clock_kill_reported_by_crab_on_htcondor_is_the_time_limit(tmp_path: Path) -> None:
    # dmwm/CRABServer#9366: CMS CRAB's PostJob after HTCondor killed a job at its maximum wall time
    crab = (
        "Mon, 27 Jul 2026 11:04:56 CEST(+0200):ERROR:RetryJob Not retrying job due to wall clock limit (job "
        "automatically killed on the worker node)"
    )
    report = triage_lines(tmp_path, crab, "Jobs lasted 131.0 seconds (0:02:11) vs. 120 (0:02:00) MAX")
    assert report.diagnosis.failure_class is FailureClass.CANCELLED
    assert report.diagnosis.evidence[0].rule_id == "sched.time_limit"

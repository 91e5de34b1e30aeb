"""Node-failure families of knowledge/signatures/node.yaml in the wordings of other schedulers and kernels
(Kubernetes' NodeLost pods, RCU stalls, Slurm's unkillable steps and failed task launches, JAX's coordination
service), read in a whole log with the node each one accuses.

Every line is one a real program printed, with the thread it was seen in or the source that prints it.
"""

from __future__ import annotations

from pathlib import Path

from triage_lines import triage_lines

from crashcart.knowledge.taxonomy import FailureClass


def test_a_pod_whose_node_was_lost_accuses_that_node(tmp_path: Path) -> None:
    # kubectl describe pod of a GKE pod whose node died: the NodeLost status (NodeUnreachablePodMessage,
    # kubernetes/kubernetes:pkg/util/node/node.go)
    report = triage_lines(
        tmp_path,
        "Status:    Terminating (expires Tue, 23 May 2017 15:06:09 +0200)",
        "Reason:    NodeLost",
        "Message:   Node gke-kubia-default-pool-32a2cac8-m0g1 which was running pod kubia-0 is unresponsive",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.faulty_nodes == ["gke-kubia-default-pool-32a2cac8-m0g1"]


def test_an_rcu_stall_is_a_stuck_host(tmp_path: Path) -> None:
    # cilium/tetragon#328: the RCU stall detector's report and the first lines of its dump
    report = triage_lines(
        tmp_path,
        "[  103.087243] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
        "[  103.087558] rcu: \t1-...!: (0 ticks this GP) idle=cf8/0/0x0 softirq=20/20 fqs=0 ",
        "[  103.087821] \t(detected by 0, t=38227 jiffies, g=-1127, q=10)",
        "[  103.088024] Sending NMI from CPU 0 to CPUs 1:",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.evidence[0].rule_id == "node.soft_lockup"


# ai4d-iasc/trixie#45: the slurmd log of a cancelled step whose processes survived SIGKILL; the node drained
CANCEL = "[2020-12-14T09:43:55.500] [63532.0] error: *** STEP 63532.0 ON cn106 CANCELLED AT 2020-12-14T09:43:55 ***"
UNKILLABLE = (
    "[2020-12-14T09:44:56.002] [63532.0] error: *** STEP 63532.0 STEPD TERMINATED ON cn106 AT 2020-12-14T09:44:56 "
    "DUE TO JOB NOT ENDING WITH SIGNALS ***"
)


def test_a_step_slurm_could_not_kill_accuses_its_node_unless_a_cancel_stopped_the_job(tmp_path: Path) -> None:
    alone = triage_lines(tmp_path, UNKILLABLE, "[2020-12-14T09:44:58.306] [63532.0] done with job")
    assert alone.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert alone.diagnosis.faulty_nodes == ["cn106"]
    # after the cancel it is the teardown's: the job was stopped on purpose, whatever the node did then
    cancelled = triage_lines(tmp_path, CANCEL, "[2020-12-14T09:43:55.502] [63532.extern] done with job", UNKILLABLE)
    assert cancelled.diagnosis.failure_class is FailureClass.CANCELLED


def test_srun_failing_to_launch_on_a_node_accuses_that_node(tmp_path: Path) -> None:
    # aws/aws-parallelcluster#4179: a large job whose step launch times out on some nodes' slurmd
    report = triage_lines(
        tmp_path,
        "srun: error: Task launch for StepId=20.0 failed on node compute-od-gpu-st-p4d-24xlarge-33: Socket timed out"
        " on send/recv operation",
        "srun: error: Application launch failed: Socket timed out on send/recv operation",
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.faulty_nodes == ["compute-od-gpu-st-p4d-24xlarge-33"]


def test_jaxs_lost_task_heartbeat_alone_is_a_node_failure(tmp_path: Path) -> None:
    # jax-ml/jax#23599: the coordination service sets a task to ERROR after its heartbeats stop
    report = triage_lines(
        tmp_path,
        "2024-10-09 15:47:38.568412: E external/xla/xla/tsl/distributed_runtime/coordination/coordination_service.cc"
        ":1170] /job:jax_worker/replica:0/task:0 has been set to ERROR in coordination service: UNAVAILABLE: Task "
        "/job:jax_worker/replica:0/task:0 heartbeat timeout. This indicates that the remote task has failed, got "
        "preempted, or crashed unexpectedly. Check the task logs for an earlier error to debug further. "
        "[type.googleapis.com/tensorflow.CoordinationServiceError='']",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE


def test_rays_node_terminated_unexpectedly_is_a_node_failure_but_its_expected_drain_is_not(tmp_path: Path) -> None:
    # the node's death reason ray 2.60.0's GCS adds to an ActorDiedError (adjacent strings of its gcs_server binary,
    # src/ray/gcs/gcs_actor_manager.cc): the source's format with a reason of the same binary filled in
    died = triage_lines(
        tmp_path,
        "(TrainController pid=79312) \tthe actor's node was terminated unexpectedly: raylet has lagging heartbeats due "
        "to slow network or busy workload.",
    )
    assert died.diagnosis.failure_class is FailureClass.NODE_FAILURE
    drained = triage_lines(
        tmp_path,
        "(TrainController pid=79312) \tthe actor's node was terminated expectedly: DRAIN_NODE_REASON_IDLE_TERMINATION",
    )
    assert not any(getattr(e, "rule_id", "") == "node.ray_node_died" for e in drained.events)


# slurmd and slurmstepd of the Debian 22.05 package (slurmd_22.05.8): the source's format strings, values filled in
PROLOG_FAILED = "slurmd: error: Prolog failure on node gpu-node-07"
EPILOG_FAILED = "[2024-05-01T12:00:00.123] error: [job 123456] epilog failed status=1:0"
MONITOR_UNKILLABLE = (
    "slurmstepd: error: step_terminate_monitor: unkillable after 60 sec, calling: /usr/local/sbin/unkillable.sh"
)


def test_a_slurm_prolog_failure_is_the_node_it_names_but_an_epilog_failure_is_not(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, PROLOG_FAILED)
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.evidence[0].rule_id == "node.slurm_prolog_failed"
    assert report.diagnosis.evidence[0].node == "gpu-node-07"
    epilog = triage_lines(tmp_path, EPILOG_FAILED)
    assert not any(getattr(e, "rule_id", "") == "node.slurm_prolog_failed" for e in epilog.events)


def test_slurmstepds_unkillable_monitor_is_the_unkillable_step(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, MONITOR_UNKILLABLE)
    assert report.diagnosis.evidence[0].rule_id == "node.slurm_unkillable_step"


def test_sallocs_node_failure_accuses_the_node_it_names(tmp_path: Path) -> None:
    # nebius/soperator#854: the physical host under worker-1 rebooted during a 4-node allocation
    report = triage_lines(tmp_path, "0: worker-2", "2: worker-1", "salloc: error: Node failure on worker-1")
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.faulty_nodes == ["worker-1"]


def test_a_raylet_terminated_unexpectedly_is_its_node_not_the_segfault_ray_lists_as_a_reason(tmp_path: Path) -> None:
    # ray-project/ray#29412: the driver's report of a dead raylet, wrapped where the issue wrapped it
    report = triage_lines(
        tmp_path,
        "2022-10-17 14:23:59,720 WARNING worker.py:1839 -- Raylet is terminated: ip=172.29.58.176, "
        "id=c28cee44b5cd67e730b3a9f729ca772f9bfd3f4b936ae1999d38cf36. Termination is unexpected. Possible reasons "
        "include: (1) SIGKILL by the user or system",
        "OOM killer, (2) Invalid memory access from Raylet causing SIGSEGV or SIGBUS, (3) Other termination signals. "
        "Last 20 lines of the Raylet logs:",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.evidence[0].rule_id == "node.ray_raylet_died"
    assert report.diagnosis.faulty_nodes == ["172.29.58.176"]
    # the same source's graceful form: the raylet was sent SIGTERM
    graceful = triage_lines(tmp_path, "Raylet is terminated. Termination is graceful.")
    assert not any(getattr(e, "rule_id", "") == "node.ray_raylet_died" for e in graceful.events)


def test_a_kernel_oops_in_the_gpu_driver_is_a_node_failure(tmp_path: Path) -> None:
    # NVIDIA/gpu-operator#274: the vmcore-dmesg of a GPU node that panicked
    report = triage_lines(
        tmp_path,
        "[ 395.350871] BUG: unable to handle kernel NULL pointer dereference at 00000000000000b1",
        "[ 395.350973] PGD 5c9846d067 P4D 5c9846d067 PUD 5c9847f067 PMD 0",
        "[ 395.351068] Oops: 0000 [#1] SMP NOPTI",
        "[ 395.351681] RIP: 0010:_nv031695rm+0x79/0x940 [nvidia]",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.evidence[0].rule_id == "node.kernel_oops"


def test_rays_task_on_a_dead_node_is_a_node_failure(tmp_path: Path) -> None:
    # ray-project/ray#58638: the NODE_DIED task error of Ray 2.5x
    report = triage_lines(
        tmp_path,
        "Task failed because the node it was running on is dead or unavailable. Node IP: 127.0.0.1, node ID: "
        "e55b8ca03ebf3f7418f51533d8d55abeaab75fa9b29e2e6282b47646. This can happen if the node was preempted, had a "
        "hardware failure, or its raylet crashed unexpectedly.",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE


def test_ssh_through_a_jump_host_to_a_node_that_is_gone_is_a_lost_host_but_a_refused_forward_is_not(
    tmp_path: Path,
) -> None:
    # illinois-scicomp/machine-shop-maintenance#66: a host that did not come back from a reboot, reached via a jump host
    gone = triage_lines(
        tmp_path,
        "channel 0: open failed: connect failed: No route to host",
        "stdio forwarding failed",
        "kex_exchange_identification: Connection closed by remote host",
    )
    assert gone.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert gone.diagnosis.evidence[0].rule_id == "node.host_unreachable"
    # ssh's format for a forwarded port with no listener (channels.c): the host answered
    refused = triage_lines(tmp_path, "channel 2: open failed: connect failed: Connection refused")
    assert not any(getattr(e, "rule_id", "") == "node.host_unreachable" for e in refused.events)


def test_a_raylet_that_learns_it_was_dropped_is_its_node(tmp_path: Path) -> None:
    # ray-project/ray#10345: the RAY_CHECK message of node_manager.cc the PR rewords
    report = triage_lines(tmp_path, "Exiting because this node manager has mistakenly been marked dead by the monitor.")
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.evidence[0].rule_id == "node.ray_raylet_died"


def test_rays_older_actor_on_a_dead_node_wording_is_the_same_family(tmp_path: Path) -> None:
    # GenNodeDiedCause's format (ray-project/ray:src/ray/gcs/gcs_actor_manager.cc) under a RayActorError, node id filled
    report = triage_lines(
        tmp_path,
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.",
        "\tclass_name: RayTrainWorker",
        "The actor is dead because its node has died. Node Id: "
        "56b97436e67393f15565e024278867700c2bd0ec6ca9e0dac7261fd1",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert any(getattr(e, "rule_id", "") == "node.ray_node_died" for e in report.events)


def test_slurmctld_killing_a_job_on_a_failed_node_accuses_that_node(tmp_path: Path) -> None:
    # slurmctld's kill_running_job_by_node_name (SchedMD/slurm:src/slurmctld/job_mgr.c): the source's format, values
    # filled in; a job that merely ended by a signal names no node (ArjunaCluster/ArjunaUsers#137)
    report = triage_lines(
        tmp_path,
        "[2024-05-01T11:59:58.001] error: Nodes gpu-node-07 not responding",
        "[2024-05-01T12:00:00.123] Killing JobId=123456 on failed node gpu-node-07",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.faulty_nodes == ["gpu-node-07"]
    ended = triage_lines(tmp_path, "[2022-05-27T11:37:57.377] _job_complete: JobId=127441 WTERMSIG 9")
    assert not any(getattr(e, "rule_id", "") == "node.slurm_failed_node_kill" for e in ended.events)


def test_kubernetes_node_whose_kubelet_stopped_reporting_is_a_lost_node_but_a_ready_one_is_not(
    tmp_path: Path,
) -> None:
    # kubectl describe node of a NotReady node: the node lifecycle controller's NodeStatusUnknown conditions
    # (kubernetes/kubernetes:pkg/controller/nodelifecycle/node_lifecycle_controller.go)
    lost = triage_lines(
        tmp_path,
        "  MemoryPressure   Unknown   Thu, 08 Oct 2026 00:37:41 +0530   Thu, 08 Oct 2026 00:38:53 +0530   "
        "NodeStatusUnknown   Kubelet stopped posting node status.",
        "  Ready            Unknown   Thu, 08 Oct 2026 00:37:41 +0530   Thu, 08 Oct 2026 00:38:53 +0530   "
        "NodeStatusUnknown   Kubelet stopped posting node status.",
    )
    assert lost.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert lost.diagnosis.evidence[0].rule_id == "node.k8s_node_status_unknown"
    ready = triage_lines(
        tmp_path,
        "  Ready            True    Mon, 03 Aug 2020 12:01:00 +0000   Mon, 03 Aug 2020 11:00:00 +0000   "
        "KubeletReady                 kubelet is posting ready status",
    )
    assert ready.diagnosis.failure_class is not FailureClass.NODE_FAILURE


def test_rays_actor_whose_owners_node_crashed_accuses_the_owners_node(tmp_path: Path) -> None:
    # the actor error Ray's GCS writes for actors owned by a worker on a dead node (GenOwnerDiedCause in OnNodeDead,
    # ray-project/ray:src/ray/gcs/gcs_actor_manager.cc), as a driver printed it
    report = triage_lines(
        tmp_path,
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
        "\tip: 10.208.0.212",
        "The actor is dead because its owner has died. Owner Id: "
        "05000000ffffffffffffffffffffffffffffffffffffffffffffffff Owner Ip address: 10.208.0.212 Owner worker exit "
        "type: SYSTEM_ERROR Worker exit detail: Owner's node has crashed.",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.faulty_nodes == ["10.208.0.212"]


def test_torque_killing_a_job_that_lost_a_sister_mom_is_a_node_failure(tmp_path: Path) -> None:
    # Open MPI users list: an mpirun job under Torque whose MOM lost a sister node's daemon
    report = triage_lines(
        tmp_path,
        "=>> PBS: job killed: node 18 (n314) requested job terminate, 'EOF' (code 1099) - received SISTER_EOF "
        "attempting to communicate with sister MOM's",
        "mpirun: Forwarding signal 10 to job",
        "mpirun: killing job...",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.evidence[0].rule_id == "node.pbs_sister_mom_lost"


def test_a_raylet_the_gcs_gave_up_on_health_checks_is_its_node(tmp_path: Path) -> None:
    # vllm-project/vllm#19960: the worker raylet's fatal event after the GCS dropped it
    report = triage_lines(
        tmp_path,
        '{"custom_fields":{"node_id":"a418db09539dd8e5b9800eb27416ecf0f8f62df5a1c720f0484d96ca"},'
        '"event_id":"03cdd9ea75bc4aceb7d23e840be2f8a4612a","host_name":"minion-1","label":"RAYLET_MARKED_DEAD",'
        '"message":"[Timeout] Exiting because this node manager has mistakenly been marked as dead by the GCS: GCS '
        "failed to check the health of this node for 5 times. This is likely because the machine or raylet has become "
        'overloaded.","pid":"89","severity":"FATAL","source_type":"RAYLET","timestamp":1750683',
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.evidence[0].rule_id == "node.ray_raylet_died"


def test_mpiruns_lost_daemon_accuses_the_remote_daemons_node_not_its_own(tmp_path: Path) -> None:
    # PoonLab/covizu#408: the help text under a lost ORTE daemon, mpirun on BEVi and the lost daemon on n0
    report = triage_lines(
        tmp_path,
        "bpsh: Child process exit abnormally.",
        "--------------------------------------------------------------------------",
        "ORTE has lost communication with a remote daemon.",
        "",
        "  HNP daemon   : [[10831,0],0] on node BEVi",
        "  Remote daemon: [[10831,0],1] on node n0",
        "",
        "This is usually due to either a failure of the TCP network",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.faulty_nodes == ["n0"]


def test_a_ray_process_that_lost_the_gcs_points_at_the_head(tmp_path: Path) -> None:
    # ray-project/ray#11309: a Ray 1.0 worker that could not reconnect to the head's GCS
    report = triage_lines(
        tmp_path,
        "(pid=136534) F1009 07:02:26.344231 136534 136534 service_based_gcs_client.cc:207] Couldn't reconnect to GCS "
        "server. The last attempted GCS server address was 192.168.1.98:39953",
        "(pid=136534) *** Check failure stack trace: ***",
        "(pid=136534)     @     0x7f56afdb7f5d  google::LogMessage::Fail()",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert report.diagnosis.evidence[0].rule_id == "node.ray_gcs_unreachable"

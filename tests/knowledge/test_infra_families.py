"""Infrastructure message families in the signatures, read whole: what each decides once the other lines of the
same log are there (knowledge/signatures/{gpu,network,collectives,node,launcher,scheduler}.yaml).

Every line is one a real program printed, with the thread it was seen in.
"""

from __future__ import annotations

from pathlib import Path

from triage_lines import triage_lines

from crashcart.knowledge.taxonomy import FailureClass, Role


def test_a_gpu_that_fell_off_the_bus_at_probe_is_hardware_without_an_xid(tmp_path: Path) -> None:
    # dmesg of NVIDIA/NVSentinel#155: the driver's three-line message, its last line on its own
    report = triage_lines(
        tmp_path,
        "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0",
        "               NVRM: (PCI ID: 10de:26b5) installed in this system has",
        "               NVRM: fallen off the bus and is not responding to commands.",
        "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).",
    )
    assert report.diagnosis.failure_class is FailureClass.GPU_HARDWARE
    assert report.diagnosis.evidence[0].line == 3


def test_the_drivers_reset_required_status_is_hardware(tmp_path: Path) -> None:
    # scitix/sichek#51: nccl-tests failed only with GPU1, whose channel allocation returned NV_ERR_RESET_REQUIRED
    report = triage_lines(
        tmp_path,
        "    [Sun Jan 11 09:52:01 2026] NVRM: rpcRmApiAlloc_GSP: GspRmAlloc failed: hClient=0xc1d1a616; "
        "hParent=0x5c000054; hObject=0x5c00005b; hClass=0x0000c86f; paramsSize=0x00000170; paramsStatus=0x00000062;"
        " status=0x00000062 ",
        "    [Sun Jan 11 09:52:01 2026] NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required "
        "[NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ kernel_channel.c:2874 ",
    )
    assert report.diagnosis.failure_class is FailureClass.GPU_HARDWARE
    assert report.diagnosis.evidence[0].rule_id == "gpu.rm_status_lost"


# deepspeedai/DeepSpeedExamples#310: every rank gets the subnet manager's async event right after NCCL init
REREGISTER = "gpu1:5021:5386 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client reregistration"
INIT = "gpu1:5021:5376 [0] NCCL INFO comm 0x453b9880 rank 0 nranks 8 cudaDev 0 busId 4f000 - Init COMPLETE"


def test_a_subnet_manager_event_is_the_fabric_only_when_nothing_else_failed(tmp_path: Path) -> None:
    alone = triage_lines(tmp_path, INIT, REREGISTER)
    assert alone.diagnosis.failure_class is FailureClass.NETWORK
    # a GPU runs out of memory after it (the line of nmhkahn/CARN-pytorch#11): the event is no cause then
    oom = (
        "RuntimeError: CUDA out of memory. Tried to allocate 195.25 MiB (GPU 0; 4.00 GiB total capacity; 2.88"
        " GiB already allocated; 170.14 MiB fre"
    )
    with_oom = triage_lines(tmp_path, INIT, REREGISTER, oom)
    assert with_oom.diagnosis.failure_class is FailureClass.GPU_OOM


def test_a_watchdog_line_hard_wrapped_by_the_console_is_still_a_collective_timeout(tmp_path: Path) -> None:
    # huggingface/open-r1#620: the console wrapped each watchdog line inside 'OpType'
    report = triage_lines(
        tmp_path,
        "[rank2]:[E424 01:11:21.160832730 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=4, OpTy",
        "pe=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800010 milliseconds before timing out.",
    )
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT
    timeout = next(e for e in report.events if getattr(e, "rule_id", "") == "coll.watchdog_timeout")
    assert (timeout.seq, timeout.op) == (4, None)


def test_the_watchdogs_checktimeout_stack_alone_is_a_collective_timeout(tmp_path: Path) -> None:
    # Lightning-AI/pytorch-lightning#20832: only the C++ frames of the watchdog's exception survived, wrapped
    report = triage_lines(
        tmp_path,
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        "std::ratio<1l, 1000l> > >) + 0x282 (0x7f6aaafa5672 in /home/ubuntu/.cache/pypoetry/v",
        "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f6aaafacab3 in /home/ubuntu/.cache/pypoetry/"
        "virtualenvs/nemo-asr-finetuning-tBwAFCAJ-py3.10/lib/python3.10/site-package",
    )
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT


# wenet-e2e/wespeaker#171: several single-node torchrun jobs shared one rendezvous store; the first to finish took it
# down, and the others failed to shut their rendezvous down at exit
SHUTDOWN = (
    "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'node04.localdomain_3882442_0' has "
    "failed to shutdown the rendezvous '9987b766-350c-48bf-aa45-cfc2da182f33' due to an error of type "
    "RendezvousConnectionError."
)
# pytorch/pytorch#76287: an agent losing its rendezvous mid-run, the node that hosted it gone
KEEPALIVE = (
    "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'jean-zay-iam37-ib0_187281_0' has "
    "failed to send a keep-alive heartbeat to the rendezvous 'none' due to an error of type RendezvousConnectionError."
)


def test_a_rendezvous_that_failed_to_shut_down_is_a_launch_setting_not_a_lost_node(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, SHUTDOWN, "RuntimeError: Broken pipe")
    assert report.diagnosis.failure_class is FailureClass.CONFIG_ERROR
    # a keep-alive lost mid-run says the rendezvous host went away: that stays a node failure
    assert triage_lines(tmp_path, KEEPALIVE, SHUTDOWN).diagnosis.failure_class is FailureClass.NODE_FAILURE


def test_rays_monitor_marking_a_node_dead_outranks_the_get_error_it_raises(tmp_path: Path) -> None:
    # ray-project/ray#3628 (Ray 0.6: the monitor, later the detector, misses the heartbeats)
    report = triage_lines(
        tmp_path,
        "The node with client ID 581656f84659be9bba58da993729644cfb554836 has been marked dead because the monitor has"
        " missed too many heartbeats from it.",
        "Traceback (most recent call last):",
        '  File "/home/anurag/.local/lib/python2.7/site-packages/ray/worker.py", line 2358, in get',
        "    raise RayGetError(object_ids[i], value)",
        "ray.worker.RayGetError: Could not get objectid ObjectID(0100000008623a3fd1946a9132866d6f6113876e). It was "
        "created by remote function <unknown> which failed with:",
    )
    assert report.diagnosis.failure_class is FailureClass.NODE_FAILURE


def test_a_cloud_reclaiming_the_machine_is_a_cancellation_and_what_follows_is_its_teardown(tmp_path: Path) -> None:
    # NovaSky-AI/SkyRL#1688: the pods are evicted, then the trainer cannot place its workers any more
    report = triage_lines(
        tmp_path,
        "(autoscaler +44m27s) Instance k-1a5e56fa0001 (node IP: 10.1.140.199) will be terminated soon (reason: "
        "kubernetes-pod-termination).",
        "(autoscaler +44m27s) [autoscaler] Cluster resized to {184 CPU, 8 GPU}.",
        "Traceback (most recent call last):",
        '  File ".../skyrl/train/utils/utils.py", line 801, in get_ray_pg_ready_with_timeout',
        "    raise RuntimeError(",
        "RuntimeError: Failed to create placement group with 1 bundles (requiring 2.0 GPUs, 1.0 CPUs total) in 180",
    )
    assert report.diagnosis.failure_class is FailureClass.CANCELLED
    raised = next(e for e in report.events if getattr(e, "rule_id", "").startswith("traceback."))
    assert (raised.role, raised.demoted) == (Role.CONTEXT, "teardown")


def test_a_tpu_workers_shutdown_notice_ends_the_run_it_interrupts(tmp_path: Path) -> None:
    # megagonlabs/t5-japanese#1: T5 pre-training on a preemptible TPU, stopped at step 488600
    report = triage_lines(
        tmp_path,
        "I0902 03:33:36.516501 140070334211904 basic_session_run_hooks.py:260] loss = 1.109375, step = 488600 "
        "(45.410 sec)",
        "INFO:tensorflow:Outfeed finished for iteration (1862, 53)",
        "INFO:tensorflow:ShutdownHook: lame workers found: HeartbeatManager(/job:worker/replica:0/task:0/device:CPU:0)",
    )
    assert report.diagnosis.failure_class is FailureClass.CANCELLED


# ray-project/ray#63807: Ray Train's report of a worker whose node was drained, the reason on the line below
RAY_NODE_DIED = (
    "(TrainController pid=79312) The actor died because its node has died. Node Id: "
    "b157c93de9603b1458ae4bd22668b46a4f0ae249bf9467072ba6fd45"
)
RAY_PREEMPTED = (
    "(TrainController pid=79312) \tthe actor's node was preempted: preemption_integration_demo: simulating node drain"
)


def test_a_ray_node_that_died_is_a_node_failure_unless_the_cloud_says_it_took_it(tmp_path: Path) -> None:
    assert triage_lines(tmp_path, RAY_NODE_DIED).diagnosis.failure_class is FailureClass.NODE_FAILURE
    assert triage_lines(tmp_path, RAY_NODE_DIED, RAY_PREEMPTED).diagnosis.failure_class is FailureClass.CANCELLED


def test_ranks_missing_from_init_process_groups_barrier_are_a_collective_timeout(tmp_path: Path) -> None:
    # vllm-project/vllm#1401: one of two ranks never reached init_process_group
    report = triage_lines(
        tmp_path,
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 1, for key: "
        "store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)",
    )
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT


def test_rocms_gpu_memory_access_fault_is_the_cuda_illegal_address_of_an_amd_gpu(tmp_path: Path) -> None:
    # ROCmSoftwarePlatform/hiptensorflow#60: ResNet training on CIFAR-10 dies at step 901
    report = triage_lines(
        tmp_path,
        "INFO:tensorflow:loss = 1.00229, step = 901, precision = 0.703125",
        "Memory access fault by GPU node-1 on address 0x1e4000. Reason: Page not present or supervisor privilege.",
        "Aborted (core dumped)",
    )
    assert report.diagnosis.failure_class is FailureClass.CUDA_ERROR


def test_an_amd_gpu_hang_reset_by_its_driver_is_gpu_hardware_to_retry(tmp_path: Path) -> None:
    # ROCm/legacy-rocm-build#2533: ROCm on an RX 7900 XT, the sdma ring hangs and the driver resets the GPU
    report = triage_lines(
        tmp_path,
        "Oct  7 12:58:23 Ubuntu-Desktop kernel: [ 2237.944235] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 "
        "timeout, signaled seq=16060, emitted seq=16062",
        "Oct  7 12:58:23 Ubuntu-Desktop kernel: [ 2237.944732] amdgpu 0000:0a:00.0: amdgpu: GPU reset begin!",
    )
    assert (report.diagnosis.failure_class, report.diagnosis.action.value) == (FailureClass.GPU_HARDWARE, "retry")


def test_a_rendezvous_store_never_reached_is_the_launch_setting_but_lost_keep_alives_are_the_node(
    tmp_path: Path,
) -> None:
    # pytorch/pytorch#64926: torchrun's error file on hosts with several NICs, the store never reached
    unreachable = triage_lines(
        tmp_path,
        "[INFO] 2021-09-13 22:17:26,653 api: Starting elastic_operator with launch configs:",
        "  rdzv_backend     : c10d",
        "  rdzv_endpoint    : 10.28.1.16",
        "[ERROR] 2021-09-13 22:18:26,678 error_handler: {",
        '  "message": {',
        '    "message": "RendezvousConnectionError: The connection to the C10d store has failed. See inner exception '
        'for details.",',
    )
    assert unreachable.diagnosis.failure_class is FailureClass.CONFIG_ERROR
    # pytorch/pytorch#76287: the agents of a running job lose the store's node, their keep-alives fail first
    lost = triage_lines(
        tmp_path,
        "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'jean-zay-iam37-ib0_187281_0' has "
        "failed to send a keep-alive heartbeat to the rendezvous 'none' due to an error of type "
        "RendezvousConnectionError.",
        "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has "
        "failed. See inner exception for details.",
    )
    assert lost.diagnosis.failure_class is FailureClass.NODE_FAILURE

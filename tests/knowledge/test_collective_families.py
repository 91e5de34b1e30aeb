"""Collective-timeout families of knowledge/signatures/collectives.yaml in the wordings of other versions and
runtimes (torch 2.6's watchdog, gloo's closed pairs, store waits, JAX's and torch_xla's barriers), read in a
whole log beside the traceback that raises them.

Every line is one a real program printed, with the thread it was seen in or the source that prints it.
"""

from __future__ import annotations

from pathlib import Path

from triage_lines import triage_lines

from crashcart.knowledge.taxonomy import FailureClass

# ProcessGroupNCCL.cpp's watchdogHandler in torch 2.6, as a verl run (Ray workers) printed it
WORK_IDS = (
    "(WorkerDict pid=3490362) [rank1]:[E1118 20:32:23.957372583 ProcessGroupNCCL.cpp:2168] [PG ID 0 PG GUID "
    "0(default_pg) Rank 1]  failure detected by watchdog at work sequence id: 2635 PG status: last enqueued work: "
    "2635, last completed work: 2634"
)


def test_torch_2_6s_watchdog_work_ids_are_a_collective_timeout_with_its_sequence_number(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, WORK_IDS)
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT
    ids = next(e for e in report.events if getattr(e, "rule_id", "") == "coll.watchdog_work_ids")
    assert ids.seq == 2635


def test_gloos_closed_pairs_after_a_timeout_are_a_collective_timeout(tmp_path: Path) -> None:
    # signalException in pytorch/gloo:gloo/transport/tcp/unbound_buffer.cc, as torch's gloo groups raise it
    report = triage_lines(tmp_path, "RuntimeError: Application timeout caused pair closure")
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT


def test_a_store_key_no_rank_set_in_time_is_a_collective_timeout_not_the_code(tmp_path: Path) -> None:
    # modelscope/ms-swift#4906: GRPO's weight sync to vLLM waits on a key in the c10d store
    report = triage_lines(
        tmp_path,
        '[rank0]:   File "/home/tiger/.local/lib/python3.11/site-packages/vllm/distributed/utils.py", line 197, in '
        "broadcast_obj",
        "[rank0]:     recv_obj = pickle.loads(self.store.get(key))",
        "[rank0]:                             ^^^^^^^^^^^^^^^^^^^",
        "[rank0]: torch.distributed.DistStoreError: wait timeout after 300000ms, keys: /broadcast_from/0/75465",
    )
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT


def test_jaxs_coordination_barrier_timing_out_is_a_collective_timeout(tmp_path: Path) -> None:
    # ayaka14732/llama-2-jax#20: jax.distributed.initialize on one host of eight, the others never came
    report = triage_lines(
        tmp_path,
        "Traceback (most recent call last):",
        '  File "/root/llama-2-jax/train.py", line 89, in main',
        '    jax.distributed.initialize(coordinator_address="localhost", num_processes=8, process_id=0)',
        '  File "/root/miniconda3/envs/jax/lib/python3.11/site-packages/jax/_src/distributed.py", line 95, in '
        "initialize",
        "    self.client.connect()",
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: PjRT_Client_Connect. "
        "Timed out task names:",
        "/job:jax_worker/replica:0/task:1",
    )
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT
    assert any(e.rule_id == "coll.xla_barrier_timeout" for e in report.diagnosis.evidence)


# A blocking-wait timeout as a diffusers run printed it (huggingface/diffusers#12422)
BLOCKING_WAIT = (
    "[rank1]:[E1002 18:16:40.662691402 ProcessGroupNCCL.cpp:756] [Rank 1] Work WorkNCCL(SeqNum=2521, OpType=ALLREDUCE,"
    " NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) timed out in blocking wait."
)
# The heartbeat monitor's kill, as nvFuser's multidevice tests printed it (NVIDIA/Fuser#3055)
MONITOR_KILL = (
    "[F930 15:23:07.686401350 ProcessGroupNCCL.cpp:1309] [PG ID 6 PG GUID  Rank 0] [PG ID 6 PG GUID  Rank 0]"
    " Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL watchdog hang."
)
# torch 2.14.1's ProcessGroupNCCL.cpp, read from the adjacent strings of libtorch_cuda.so (the torch wheel): the
# source's format string with plausible values filled in (no run that printed it is at hand)
MONITOR_DISABLED = (
    "[rank0]:[W1201 10:00:00.123456789 ProcessGroupNCCL.cpp:1600] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
    "ProcessGroupNCCL monitor thread is disabled, but would have terminated the process"
)


def test_a_blocking_wait_timeout_is_a_collective_timeout_with_its_sequence_number(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, BLOCKING_WAIT)
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT
    wait = next(e for e in report.events if getattr(e, "rule_id", "") == "coll.blocking_wait_timeout")
    assert wait.seq == 2521


def test_the_heartbeat_monitor_killing_the_process_is_a_hang_but_its_disabled_note_is_not(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, MONITOR_KILL)
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT
    assert report.diagnosis.evidence[0].rule_id == "coll.heartbeat_monitor"
    disabled = triage_lines(tmp_path, MONITOR_DISABLED)
    assert not any(getattr(e, "rule_id", "").startswith("coll.") for e in disabled.events)


def test_horovods_stall_shutdown_is_a_collective_timeout(tmp_path: Path) -> None:
    # horovod 0.28.1's horovod/common/stall_inspector.cc: the source's format, a shutdown time filled in
    report = triage_lines(
        tmp_path, 'One or more rank (marked by "!") is stalled for longer than 600 seconds. Will shutdown.'
    )
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT
    assert report.diagnosis.evidence[0].rule_id == "coll.horovod_stall_shutdown"


def test_xlas_rendezvous_termination_timeout_is_a_collective_hang_but_its_false_alarm_is_not(tmp_path: Path) -> None:
    # openxla/xla:xla/service/rendezvous.cc: the source's format as a jax CPU run quoted it (run id filled in)
    report = triage_lines(
        tmp_path,
        "Termination timeout for `all gather RendezvousKey{run_id=RunId: 7, global_devices=[1, 3], "
        "num_local_participants=2, collective_op_kind=cross_module, op_id=28}` of 40 seconds exceeded. Exiting to "
        "ensure a consistent program state. Expected 2 threads to join the rendezvous, but only 1 of them arrived on "
        "time.",
    )
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT
    assert report.diagnosis.evidence[0].rule_id == "coll.xla_rendezvous_termination"
    unstuck = triage_lines(
        tmp_path,
        "E0601 12:00:00.000000  4242 rendezvous.cc:96] Thread is unstuck! Warning above was a false-positive. Perhaps "
        "the timeout is too short.",
    )
    assert unstuck.diagnosis.failure_class is not FailureClass.COLLECTIVE_TIMEOUT


def test_horovods_stall_warning_wrapped_by_the_console_is_still_the_stall(tmp_path: Path) -> None:
    # horovod/horovod#1442: the console wrapped the stall inspector's warning mid-word, the stalled rank below it
    report = triage_lines(
        tmp_path,
        "[1,0]<stderr>:[2019-10-09 05:33:38.249493: W horovod/common/stall_inspector.cc:105] One or more tensors were "
        "submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remaind",
        "er of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different "
        "tensors or that only subset of ranks is submitting tensors, which will cause deadlock.",
        "[1,0]<stderr>:Stalled ranks:",
    )
    assert report.diagnosis.failure_class is FailureClass.COLLECTIVE_TIMEOUT
    assert report.diagnosis.evidence[0].rule_id == "coll.horovod_stall"

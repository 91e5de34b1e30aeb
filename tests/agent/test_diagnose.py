"""The deterministic diagnosis: root cause over symptoms, first in time, locality, evidence, unknown."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from crashcart.agent.diagnose import diagnose
from crashcart.agent.events import CollectiveTimeoutEvent, FailureEvent, ProgressEvent, XidEvent, build_events
from crashcart.api import triage
from crashcart.evals.metrics import node_matches
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, Action, FailureClass, Role, Stage
from crashcart.parsers.models import FileScan, Frame, StackDump, TemplateStat

T0 = datetime(2024, 11, 28, 7, 0, 0)
# oobabooga/textgen#1490 (dev case r-gpuoom-lora-ckpt-save-textgen-663)
OOM = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 68.00 MiB (GPU 0; 23.99 GiB"
    " total capacity; 22.07 GiB already allocated; 0 bytes free; 22.99 GiB reserved in total by PyTorch)"
    " If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation. "
    " See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
)
# torchrun's failure summary's first line (Vision-CAIR/MiniGPT-4#237, as in tests/agent/test_events.py)
CHILD_FAILED = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
# epfLLM/Megatron-LLM#11 (knowledge/healthy/megatron.log)
ITERATION_122 = (
    " iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration (ms):"
    " 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 | loss"
    " scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 | number of nan iterations:   0 |"
)


def _scan(file: str, node: str | None, ranks: list[int | None], templates: list[str] = ("x <NUM>",)) -> FileScan:
    stats = []
    for rank in ranks:
        for i, text in enumerate(templates):
            ref = LineRef(file=file, line=i + 1, text=text.replace("<NUM>", "1"), node=node, rank=rank)
            stats.append(
                TemplateStat(template_id=f"t{i}", template=text, node=node, rank=rank, count=1, first=ref, last=ref)
            )
    return FileScan(file=file, node=node, lines=len(templates), bytes=10, hits=[], templates=stats)


def _fail(
    cls: FailureClass,
    prio: int,
    *,
    role: Role = Role.ROOT_CAUSE,
    node: str | None = None,
    rank: int | None = None,
    file: str = "a.log",
    line: int = 1,
    minutes: int | None = None,
    text: str = "boom",
    rule: str | None = None,
    stage: Stage | None = None,
) -> FailureEvent:
    return FailureEvent(
        time=None if minutes is None else T0 + timedelta(minutes=minutes),
        file=file,
        line=line,
        node=node,
        rank=rank,
        text=text,
        rule_id=rule or f"{cls.value}-{prio}",
        failure_class=cls,
        action=DEFAULT_ACTION[cls],
        role=role,
        priority=prio,
        stage=stage,
    )


def _timeout(node: str, minutes: int, rank: int | None = None) -> CollectiveTimeoutEvent:
    return CollectiveTimeoutEvent(
        time=T0 + timedelta(minutes=minutes),
        file=f"{node}.log",
        line=50,
        node=node,
        rank=rank,
        # NVIDIA/Megatron-LM#735 (shared dev set, d-timeout-001)
        text=(
            "[rank2]:[E ProcessGroupNCCL.cpp:754] [Rank 2] Watchdog caught collective operation timeout:"
            " WorkNCCL(SeqNum=305, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600381"
            " milliseconds before timing out."
        ),
        op="ALLREDUCE",
        seq=305,
        rule_id="watchdog-timeout",
        failure_class=FailureClass.COLLECTIVE_TIMEOUT,
        action=Action.RETRY,
        role=Role.SYMPTOM,
        priority=40,
    )


def test_xid_on_one_node_beats_timeouts_everywhere_and_names_the_node() -> None:
    nodes = [f"node{i:02d}" for i in range(16)]
    xid = XidEvent(
        time=T0,
        file="kernel-node07.log",
        line=3,
        node="node07",
        text="[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",  # wilicc/gpu-burn#1
        rule_id="xid-hw",
        failure_class=FailureClass.GPU_HARDWARE,
        action=Action.DRAIN_NODE_AND_RETRY,
        role=Role.ROOT_CAUSE,
        priority=95,
        xid=79,
    )
    events = [xid] + [_timeout(n, 10) for n in nodes if n != "node07"]
    scans = [_scan(f"{n}.log", n, [None]) for n in nodes]
    d = diagnose(events, scans)
    assert d.failure_class is FailureClass.GPU_HARDWARE
    assert d.action is Action.DRAIN_NODE_AND_RETRY
    assert d.faulty_nodes == ["node07"]
    assert d.evidence[0].file == "kernel-node07.log" and d.evidence[0].line == 3
    assert "XID 79" in d.summary and "node07" in d.summary
    assert any("dcgmi" in step or "drain" in step for step in d.mitigation)
    assert d.confidence >= 0.8


def test_only_timeouts_is_collective_timeout_with_no_faulty_node() -> None:
    nodes = ["node00", "node01", "node02", "node03"]
    d = diagnose([_timeout(n, 10) for n in nodes], [_scan(f"{n}.log", n, [None]) for n in nodes])
    assert d.failure_class is FailureClass.COLLECTIVE_TIMEOUT
    assert d.action is Action.RETRY
    assert d.faulty_nodes == []
    assert d.confidence < 0.6


def test_silent_rank_is_reported_as_the_laggard_of_a_timeout() -> None:
    events = [_timeout("node00", 10, rank=r) for r in range(8) if r != 5]
    d = diagnose(events, [_scan("node00.log", "node00", list(range(8)))])
    assert d.failure_class is FailureClass.COLLECTIVE_TIMEOUT
    assert d.faulty_ranks == [5]


def test_higher_priority_root_cause_wins_over_generic_exception() -> None:
    events = [
        # Megvii-BaseDetection/YOLOX#184 (dev case e-code-torch-typo-yolox-068)
        _fail(FailureClass.CODE_BUG, 35, line=2, text="AttributeError: module 'torch' has no attribute 'tensor_as'"),
        _fail(FailureClass.GPU_OOM, 85, line=1, text=OOM, rank=3),
        _fail(FailureClass.UNKNOWN, 10, role=Role.SYMPTOM, line=9, text=CHILD_FAILED),
    ]
    d = diagnose(events, [_scan("a.log", None, [0, 1, 2, 3])])
    assert d.failure_class is FailureClass.GPU_OOM
    assert d.faulty_ranks == [3]
    assert d.evidence[0].text.startswith("torch.cuda.OutOfMemoryError")


def test_first_error_in_time_beats_the_connection_resets_it_caused() -> None:
    events = [
        _fail(
            FailureClass.HOST_OOM, 40, node="node03", file="node03.log", minutes=0, text="Killed"
        ),  # castorini/hedwig#70
        _fail(
            FailureClass.NETWORK,
            50,
            node="node01",
            file="node01.log",
            minutes=2,
            # NVIDIA/nccl#1920 (dev case r-net-sockreset-004)
            text=(
                "2025-11-24T03:20:21.001125857Z [2025-11-24 11:20:21] gpu-server320 [5] misc/socket.cc:46 NCCL WARN"
                " socketProgressOpt: Call to send to 10.44.137.149<52905> failed : Connection reset by peer"
            ),
        ),
    ]
    scans = [_scan(f"node0{i}.log", f"node0{i}", [None]) for i in range(4)]
    d = diagnose(events, scans)
    assert d.failure_class is FailureClass.HOST_OOM
    assert d.faulty_nodes == ["node03"]
    assert [a.failure_class for a in d.alternatives] == [FailureClass.NETWORK]


def test_files_without_time_give_no_first_bonus() -> None:
    events = [
        _fail(FailureClass.HOST_OOM, 40, node="node03", file="node03.log"),
        _fail(FailureClass.NETWORK, 50, node="node01", file="node01.log"),
    ]
    d = diagnose(events, [_scan(f"node0{i}.log", f"node0{i}", [None]) for i in range(4)])
    assert d.failure_class is FailureClass.NETWORK


def test_class_on_every_rank_names_no_rank() -> None:
    events = [_fail(FailureClass.CONFIG_ERROR, 50, rank=r, line=r + 1) for r in range(4)]
    d = diagnose(events, [_scan("a.log", None, [0, 1, 2, 3])])
    assert d.failure_class is FailureClass.CONFIG_ERROR
    assert d.faulty_ranks == []


def test_stage_and_iteration_from_progress_and_rule_stage() -> None:
    # a Megatron iteration line (epfLLM/Megatron-LLM#11, knowledge/healthy/megatron.log)
    progress = ProgressEvent(file="a.log", line=1, text=ITERATION_122, iteration=122, rank=0)
    oom = _fail(FailureClass.GPU_OOM, 85, line=2, rank=0)
    d = diagnose([progress, oom], [_scan("a.log", None, [0])])
    assert d.stage is Stage.TRAINING and d.iteration == 122
    save = _fail(  # unslothai/unsloth#534 (dev case r-m2-storage-enospc-kaggle-unsloth-022)
        FailureClass.STORAGE, 75, line=2, text="OSError: [Errno 28] No space left on device", stage=Stage.CHECKPOINT
    )
    assert diagnose([progress, save], [_scan("a.log", None, [0])]).stage is Stage.CHECKPOINT


def test_unknown_when_no_signal_shows_rare_error_lines() -> None:
    scan = _scan("a.log", None, [None], templates=["step <NUM> ok", "weird failure in module <NUM>"])
    d = diagnose([], [scan])
    assert d.failure_class is FailureClass.UNKNOWN
    assert d.action is Action.ESCALATE_INFRA
    assert d.decided_by == "none"
    assert any("weird failure" in e.text for e in d.evidence)


def test_unknown_class_symptom_alone_stays_unknown() -> None:
    d = diagnose(
        [_fail(FailureClass.UNKNOWN, 10, role=Role.SYMPTOM, text=CHILD_FAILED)], [_scan("a.log", None, [None])]
    )
    assert d.failure_class is FailureClass.UNKNOWN
    assert d.evidence[0].text == CHILD_FAILED


def test_evidence_is_capped_and_deduplicated() -> None:
    events = [_fail(FailureClass.STORAGE, 75, rank=r, line=r + 1) for r in range(20)]
    events += [_fail(FailureClass.STORAGE, 75, rank=0, line=99)]
    d = diagnose(events, [_scan("a.log", None, list(range(40)))])
    assert 1 < len(d.evidence) <= 8
    keys = [(e.rule_id, e.node, e.rank) for e in d.evidence]
    assert len(keys) == len(set(keys))


def test_node_named_by_the_message_outranks_the_node_that_printed_it() -> None:
    # srun's accusation (GoogleCloudPlatform/cluster-toolkit#1600) and slurmstepd's banner on the host that printed
    # it (the Jean Zay logbook line of tests/agent/test_events.py): two jobs' lines, one job's hosts
    accused = _fail(
        FailureClass.NODE_FAILURE,
        88,
        node="hpcsmall-debug-ghpc-0",
        text="srun: error: Node failure on hpcsmall-debug-ghpc-0",
    )
    accused = accused.model_copy(update={"names_node": True})
    printer = _fail(
        FailureClass.NODE_FAILURE,
        88,
        node="jean-zay-iam17",
        line=2,
        text=(
            "slurmstepd: error: *** STEP 1943824.0 ON jean-zay-iam17 CANCELLED AT 2023-03-06T03:17:51 DUE TO NODE"
            " FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"
        ),
    )
    hosts = ["jean-zay-iam17", "hpcsmall-debug-ghpc-0", "node02", "node03"]
    d = diagnose([accused, printer], [_scan(f"{h}.log", h, [None]) for h in hosts])
    assert d.faulty_nodes == ["hpcsmall-debug-ghpc-0"]


def test_weak_echoes_of_the_class_do_not_add_nodes() -> None:
    # the kernel's OOM killer on its host (docker/for-linux#1001) and the launcher's echo with no host in it
    # (xxayt/MGSV#2, shared dev set d-hostoom-001), printed on another node
    host = "ubuntu-s-1vcpu-2gb-ams3-01"
    oom_kill = (
        "May 15 23:09:30 ubuntu-s-1vcpu-2gb-ams3-01 kernel: [  518.050606] Out of memory: Killed process 15784"
        " (python3) total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB"
    )
    echo = (
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 178) of binary:"
        " /root/miniconda3/envs/MGSV_env/bin/python"
    )
    kernel = _fail(FailureClass.HOST_OOM, 85, node=host, file="k.log", text=oom_kill)
    launcher = _fail(FailureClass.HOST_OOM, 40, node="node00", file="s.out", text=echo)
    hosts = ["node00", "node01", host, "node03"]
    d = diagnose([kernel, launcher], [_scan(f"{h}.log", h, [None]) for h in hosts])
    assert d.faulty_nodes == [host]


def test_job_wide_classes_name_no_culprit_rank() -> None:
    events = [
        # vpetren/gradnorm_tf#17 (shared dev set, d-loss-nan-002), as two ranks would print it
        _fail(FailureClass.LOSS_DIVERGENCE, 70, rank=7, text="epoch: 3451 loss: nan"),
        _fail(FailureClass.LOSS_DIVERGENCE, 70, rank=15, line=2, text="epoch: 3451 loss: nan"),
    ]
    d = diagnose(events, [_scan("a.log", None, list(range(16)))])
    assert (d.failure_class, d.faulty_nodes, d.faulty_ranks) == (FailureClass.LOSS_DIVERGENCE, [], [])


def _write(folder: Path, name: str, *lines: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("\n".join(lines) + "\n")


# Megatron-LM's training_log (megatron/training/training.py) in the timestamped form of NVIDIA/Megatron-LM#756's
# lines in knowledge/healthy/megatron.log; the numbers are this test's
STEP = (
    " [{day} {hms}] iteration      {it}/  100000 | consumed samples:       522240 | elapsed time per"
    " iteration (ms): 2950.1 | learning rate: 2.999E-04 | global batch size:  1024 | lm loss: 2.345678E+00 |"
)


def _steps(start: str, count: int, first_it: int = 510, day: str = "2024-08-30") -> list[str]:
    t = datetime.fromisoformat(f"{day}T{start}")
    times = [(t + timedelta(seconds=30 * i)).strftime("%H:%M:%S") for i in range(count)]
    return [STEP.format(day=day, hms=hms, it=first_it + 10 * i) for i, hms in enumerate(times)]


def test_a_hardware_xid_the_node_trained_past_is_named_in_the_summary_but_not_the_verdict(tmp_path: Path) -> None:
    job = tmp_path / "job"
    # dmesg of the node (leptonai/gpud#46), its training log going on for minutes, then a CUDA OOM
    # (Lightning-AI/litgpt#303)
    xid = (
        "[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008,"
        " errorString CTX SWITCH TIMEOUT, Info 0x58005"
    )
    oom = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.06 GiB. GPU 0 has a total capacty of"
        " 23.70 GiB of which 1.27 GiB is free."
    )
    _write(job, "kernel-node07.log", xid)
    _write(job, "node07.log", *_steps("11:43:00", 20), oom)
    d = triage([job], workers=1).diagnosis
    assert d.failure_class is FailureClass.GPU_OOM
    assert "training outlived XID 109 on node07 (survived, not the cause: worth a check)" in d.summary
    _write(job, "node07.log", *_steps("11:33:00", 20), oom)  # the last step before the Xid: it stands
    assert triage([job], workers=1).diagnosis.failure_class is FailureClass.GPU_HARDWARE


def test_the_cause_on_the_rank_that_stopped_first_beats_a_peers_reaction_to_it(tmp_path: Path) -> None:
    # rank 1's GPU fails (bmaltais/kohya_ss#733) a minute before rank 0 stops stepping; rank 0's socket to it is
    # then reset (NVIDIA/nccl#1920), a slightly more specific rule
    job = tmp_path / "job"
    _write(job, "rank1.log", *_steps("11:18:40", 2, day="2025-11-24"), "RuntimeError: CUDA error: unknown error")
    reset = (
        "2025-11-24T03:20:21.001125857Z [2025-11-24 11:20:21] gpu-server320 [5] misc/socket.cc:46 NCCL WARN"
        " socketProgressOpt: Call to send to 10.44.137.149<52905> failed : Connection reset by peer"
    )
    _write(job, "rank0.log", *_steps("11:18:40", 4, day="2025-11-24"), reset)
    d = triage([job], workers=1).diagnosis
    assert d.failure_class is FailureClass.CUDA_ERROR
    assert d.faulty_nodes == ["rank 1"] and d.faulty_ranks == [1]  # no host known: the rank as the place
    assert node_matches("rank1", d.faulty_nodes, []) and not node_matches("rank0", d.faulty_nodes, [])
    # without the progress lines nobody stopped first, and the more specific rule wins
    _write(job, "rank1.log", "RuntimeError: CUDA error: unknown error")
    _write(job, "rank0.log", reset)
    assert triage([job], workers=1).diagnosis.failure_class is FailureClass.NETWORK


def test_a_stall_with_no_deeper_cause_is_a_collective_timeout_decided_by_the_timeline(tmp_path: Path) -> None:
    # steps every 30 s, then nothing until DeepSpeed's launcher kills the workers (deepspeedai/DeepSpeed#1581)
    killing = "[2024-08-30 13:32:07,148] [INFO] [launch.py:131:sigkill_handler] Killing subprocess 250621"
    _write(tmp_path / "job", "node03.log", *_steps("11:00:00", 10), killing)
    d = triage([tmp_path / "job"], workers=1).diagnosis
    assert (d.failure_class, d.decided_by) == (FailureClass.COLLECTIVE_TIMEOUT, "structure")
    assert d.summary.endswith(
        "from the progress timeline: no progress for 147 min after this line while the log went on"
    )
    assert d.evidence[0].rule_id == "timeline.hang_stall" and "iteration      600/" in d.evidence[0].text


def test_context_signals_never_decide() -> None:
    # a rule that fired on PyTorch's note under a CUDA error (WangLibo1995/GeoSeg#20), made context by events
    note = _fail(FailureClass.CUDA_ERROR, 90, text="For debugging consider passing CUDA_LAUNCH_BLOCKING=1.")
    d = diagnose([note.model_copy(update={"role": Role.CONTEXT, "demoted": "hint"})], [_scan("a.log", None, [None])])
    assert d.failure_class is FailureClass.UNKNOWN
    assert d.evidence[0].text == "For debugging consider passing CUDA_LAUNCH_BLOCKING=1."


def test_a_hang_in_stack_dumps_names_the_rank_whose_stack_differs() -> None:
    # py-spy dumps of a BLOOM eval hang (bigscience-workshop/bigscience, train/tr11-176B-ml/chronicles.md): two
    # ranks wait in broadcast, one in its DataLoader queue. Innermost frame last.
    common = [
        Frame(file="megatron/training.py", function="evaluate"),
        Frame(file="pretrain_gpt.py", function="get_batch_pipe"),
    ]
    waiting = [*common, Frame(file="torch/distributed/distributed_c10d.py", function="broadcast", package="torch")]
    loading = [
        Frame(file="megatron/training.py", function="evaluate"),
        Frame(file="torch/utils/data/dataloader.py", function="_try_get_data", package="torch"),
        Frame(file="queue.py", function="get", package="python"),
        Frame(file="threading.py", function="wait", package="python"),
    ]
    scans = []
    for rank, (pid, state, frames) in enumerate(
        [(688514, "idle", loading), (688515, "active", waiting), (688516, "active", waiting)]
    ):
        header = f'Thread {pid} ({state}): "MainThread"'
        ref = LineRef(file=f"trace-{rank}.out", line=2, text=header, rank=rank)
        dump = StackDump(start=ref, thread=header, frames=frames)
        scans.append(FileScan(file=ref.file, rank=rank, lines=20, bytes=900, hits=[], templates=[], stacks=[dump]))
    d = diagnose(build_events(scans), scans)
    assert (d.failure_class, d.decided_by, d.faulty_ranks) == (FailureClass.COLLECTIVE_TIMEOUT, "structure", [0])
    assert d.summary.endswith(
        "from the stack dumps: rank 0's stack (in _try_get_data, torch/utils/data/dataloader.py)"
        " differs from its peers'"
    )

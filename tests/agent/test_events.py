"""build_events: hits grouped per (rule, node, rank, file), tagged by kind, and put in one time order."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import TypeAdapter

from crashcart.agent.events import (
    CheckpointEvent,
    CollectiveTimeoutEvent,
    Event,
    FailureEvent,
    ProgressEvent,
    XidEvent,
    build_events,
    is_hint,
    rank_hosts,
)
from crashcart.api import triage
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import Action, FailureClass, Role, Stage
from crashcart.parsers.models import FileScan, RuleHit, TemplateStat, Traceback
from crashcart.parsers.tracebacks import read_structure


def _hit(
    file: str,
    line: int,
    text: str,
    cls: FailureClass = FailureClass.STORAGE,
    *,
    rule: str = "r",
    role: Role = Role.ROOT_CAUSE,
    node: str | None = None,
    rank: int | None = None,
    time: datetime | None = None,
    captures: dict[str, str] | None = None,
    stage: Stage | None = None,
) -> RuleHit:
    return RuleHit(
        rule_id=rule,
        failure_class=cls,
        action=Action.FIX_JOB,
        role=role,
        priority=50,
        stage=stage,
        ref=LineRef(file=file, line=line, text=text, node=node, rank=rank, time=time),
        captures=captures or {},
    )


def _scan(file: str, hits: list[RuleHit], templates: list[TemplateStat] = ()) -> FileScan:
    return FileScan(file=file, lines=100, bytes=1000, hits=hits, templates=list(templates))


def test_repeated_hits_collapse_into_one_event_with_a_count() -> None:
    # NVIDIA/NeMo-Aligner#502's exception line
    hits = [_hit("a.log", n, "OSError: [Errno 5] Input/output error", rank=0) for n in (5, 9, 12)]
    events = build_events([_scan("a.log", hits)])
    assert len(events) == 1
    assert isinstance(events[0], FailureEvent)
    assert (events[0].line, events[0].count) == (5, 3)


def test_kinds_xid_timeout_checkpoint() -> None:
    hits = [
        _hit(
            "k.log",
            1,
            "[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",  # wilicc/gpu-burn#1
            FailureClass.GPU_HARDWARE,
            rule="xid",
            captures={"xid": "79"},
        ),
        _hit(
            "k.log",
            2,
            # NVIDIA/Megatron-LM#735 (shared dev set, d-timeout-001)
            "[rank2]:[E ProcessGroupNCCL.cpp:754] [Rank 2] Watchdog caught collective operation timeout:"
            " WorkNCCL(SeqNum=305, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600381"
            " milliseconds before timing out.",
            FailureClass.COLLECTIVE_TIMEOUT,
            rule="wd",
            role=Role.SYMPTOM,
            captures={"seq": "305", "op": "ALLREDUCE"},
        ),
        _hit(
            "k.log",
            3,
            " loading checkpoint from /nas/megatron_gpt/ at iteration 100",  # intelligent-machine-learning/dlrover#977
            FailureClass.STORAGE,
            rule="ck",
            role=Role.CONTEXT,
            stage=Stage.CHECKPOINT,
        ),
        # NCCL's version line (knowledge/healthy/nccl.log), hit by a context rule of no kind
        _hit("k.log", 4, "NCCL version 2.21.5+cuda12.4", FailureClass.STORAGE, rule="ctx", role=Role.CONTEXT),
    ]
    events = build_events([_scan("k.log", hits)])
    assert [type(e) for e in events] == [XidEvent, CollectiveTimeoutEvent, CheckpointEvent]
    assert events[0].xid == 79
    assert (events[1].seq, events[1].op) == (305, "ALLREDUCE")
    assert events[2].op == "load"


def test_time_order_across_files_and_untimed_lines_inherit_their_files_time() -> None:
    a = _scan(
        "a.log",
        [
            _hit("a.log", 10, "x", rule="a1", time=datetime(2024, 1, 1, 12, 5)),
            _hit("a.log", 11, "traceback line without time", rule="a2"),
        ],
    )
    b = _scan("b.log", [_hit("b.log", 99, "y", rule="b1", time=datetime(2024, 1, 1, 12, 1))])
    events = build_events([a, b])
    assert [(e.file, e.line) for e in events] == [("b.log", 99), ("a.log", 10), ("a.log", 11)]


def test_progress_event_from_the_last_line_of_an_iteration_template() -> None:
    # two of Megatron's iteration lines (epfLLM/Megatron-LLM#11, knowledge/healthy/megatron.log) and their template
    first = LineRef(
        file="a.log",
        line=1,
        text=(
            " iteration      122/  250000 | consumed samples:       124928 | elapsed time per"
            " iteration (ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss:"
            " 2.504220E+00 | loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 |"
            " number of nan iterations:   0 |"
        ),
        rank=0,
    )
    last = LineRef(
        file="a.log",
        line=90,
        text=(
            " iteration      125/  250000 | consumed samples:       128000 | elapsed time per"
            " iteration (ms): 89075.2 | learning rate: 9.375E-06 | global batch size:  1024 | lm loss:"
            " 2.477393E+00 | loss scale: 1.0 | grad norm: 0.356 | number of skipped iterations:   0 |"
            " number of nan iterations:   0 |"
        ),
        rank=0,
    )
    template = (
        "iteration <NUM>/ <NUM> | consumed samples: <NUM> | elapsed time per iteration (ms): <NUM>"
        " | learning rate: <NUM> | global batch size: <NUM> | lm loss: <NUM> | loss scale: <NUM> |"
        " grad norm: <NUM> | number of skipped iterations: <NUM> | number of nan iterations: <NUM>"
        " |"
    )
    stat = TemplateStat(template_id="t", template=template, rank=0, count=50, first=first, last=last)
    other = TemplateStat(template_id="u", template="hello <NUM>", count=1, first=first, last=first)
    events = build_events([_scan("a.log", [], [stat, other])])
    assert len(events) == 1 and isinstance(events[0], ProgressEvent)
    assert (events[0].iteration, events[0].line, events[0].count) == (125, 90, 50)


def test_a_slurm_job_step_is_no_progress(tmp_path: Path) -> None:
    # slurmstepd's cancel banner (IGNF/myria3d#123) names job 6053's step 0, not iteration 6053
    log = tmp_path / "slurm-6053.out"
    log.write_text("slurmstepd: error: *** STEP 6053.0 ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***\n")
    report = triage(log)
    assert not [e for e in report.events if e.kind == "progress"]
    assert report.diagnosis.iteration is None


def test_events_round_trip_through_json_unchanged() -> None:
    hits = [
        _hit("k.log", 1, "Xid 48", FailureClass.GPU_HARDWARE, rule="xid", captures={"xid": "48"}),
        _hit("k.log", 2, "boom", rule="f"),
    ]
    events = build_events([_scan("k.log", hits)])
    adapter = TypeAdapter(list[Event])
    assert adapter.validate_json(adapter.dump_json(events)) == events


def test_rank_hosts_from_nccl_init_lines_places_rank_only_events_on_their_node() -> None:
    init = _hit(
        "slurm-1.out",
        3,
        # deepspeedai/DeepSpeed#2931 (dev case r-net-ibretry-010)
        "PHLRR4036:24142:24263 [3] NCCL INFO comm 0x5562191160f0 rank 3 nranks 16 cudaDev 3 busId 13000"
        " - Init COMPLETE",
        rule="ctx.nccl_init",
        role=Role.CONTEXT,
        node="PHLRR4036",
        rank=1,
        captures={"rank": "3"},
    )
    oom = _hit(
        "slurm-1.out",
        90,
        # QwenLM/Qwen3-Coder#174 (shared dev set, d-gpuoom-001), a rank-3 line with no host on it
        "2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB. GPU 3"
        " has a total capacity of 79.10 GiB of which 98.00 MiB is free. Process 387746 has 78.89 GiB memory in use."
        " Of the allocated memory 70.12 GiB is allocated by PyTorch, and 765.81 MiB is reserved by PyTorch but"
        " unallocated. If reserved but unallocated memory is large try setting"
        " PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory"
        " Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        FailureClass.GPU_OOM,
        rule="oom",
        rank=3,
    )
    events = build_events([_scan("slurm-1.out", [init, oom])])
    assert [(e.rule_id, e.node, e.rank) for e in events] == [("oom", "PHLRR4036", 3)]


def test_a_node_named_in_the_message_is_the_events_node() -> None:
    hit = _hit(
        "slurm-1.out",
        3,
        "srun: error: Node failure on hpcsmall-debug-ghpc-0",  # GoogleCloudPlatform/cluster-toolkit#1600
        FailureClass.NODE_FAILURE,
        rule="nf",
        node="node00",
        captures={"node": "hpcsmall-debug-ghpc-0"},
    )
    (event,) = build_events([_scan("slurm-1.out", [hit])])
    assert (event.node, event.names_node) == ("hpcsmall-debug-ghpc-0", True)


def test_a_host_a_report_names_is_the_events_node_without_a_capture() -> None:
    # mpirun reports the node of the process that died, printed on the launching node (PoonLab/covizu#408)
    line = (
        "mpirun noticed that process rank 14 with PID 4257 on node compute-0-2.local exited on signal 11 "
        "(Segmentation fault)."
    )
    hit = _hit("mpirun.log", 9, line, FailureClass.NODE_FAILURE, rule="mpi", node="head01")
    (event,) = build_events([_scan("mpirun.log", [hit])])
    assert (event.node, event.names_node) == ("compute-0-2.local", True)


def test_slurmstepds_banner_places_its_event_but_accuses_no_node() -> None:
    # slurmstepd's banner (slurm's "*** %s ON %s CANCELLED AT %s DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR
    # DETAILS ***", as a Jean Zay job printed it in a public training logbook) names the host the step ran on,
    # which printed it; the node that failed is named elsewhere (srun's "Node failure on X")
    line = (
        "slurmstepd: error: *** STEP 1943824.0 ON jean-zay-iam17 CANCELLED AT 2023-03-06T03:17:51 DUE TO NODE"
        " FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"
    )
    hit = _hit("slurm-1943824.out", 40, line, FailureClass.NODE_FAILURE, rule="nf")
    (event,) = build_events([_scan("slurm-1943824.out", [hit])])
    assert (event.node, event.names_node) == ("jean-zay-iam17", False)


# torchrun's failure summary (Vision-CAIR/MiniGPT-4#237): the failed rank and its host, each on a line of its own
CHILD_FAILED = [
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "============================================================",
    "train.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "  <NO_OTHER_FAILURES>",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2023-05-19_16:39:58",
    "  host      : n136-117-136.byted.org",
    "  rank      : 0 (local_rank: 0)",
    "  exitcode  : 1 (pid: 78970)",
    "  error_file: <N/A>",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    "============================================================",
]


def test_the_launchers_summary_places_the_failed_rank_on_its_host() -> None:
    record, _ = read_structure(CHILD_FAILED, 20, lambda text, no: LineRef(file="train.log", line=no, text=text))
    assert isinstance(record, Traceback)
    hit = _hit("train.log", 5, "RuntimeError: CUDA error: an illegal memory access was encountered", rank=0)
    scan = _scan("train.log", [hit]).model_copy(update={"tracebacks": [record]})
    assert rank_hosts([scan]) == {0: "n136-117-136.byted.org"}


BIG = "9" * 5000  # over Python's 4,300-digit int() limit


def test_absurd_numbers_in_captures_give_no_number_not_a_crash() -> None:
    # the lines of the tests above, their numbers replaced by absurd ones
    hits = [
        _hit("k.log", 1, f"NVRM: Xid (PCI:0000:3b:00): {BIG}, pid=1", rule="xid", captures={"xid": BIG}),
        _hit(
            "k.log",
            2,
            f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={BIG}, OpType=ALLREDUCE",
            FailureClass.COLLECTIVE_TIMEOUT,
            rule="wd",
            role=Role.SYMPTOM,
            captures={"seq": BIG, "op": "ALLREDUCE"},
        ),
        _hit(
            "k.log",
            3,
            f"node02:4311:4400 [3] NCCL INFO comm 0x55 rank {BIG} nranks 32 - Init COMPLETE",
            rule="ctx.nccl_init",
            role=Role.CONTEXT,
            node="node02",
            captures={"rank": BIG},
        ),
        _hit("k.log", 4, f"[rank{BIG}]: torch.OutOfMemoryError: CUDA out of memory.", FailureClass.GPU_OOM, rule="oom"),
    ]
    events = build_events([_scan("k.log", hits)])
    assert [type(e) for e in events] == [FailureEvent, CollectiveTimeoutEvent, FailureEvent]
    assert (events[1].seq, events[1].op) == (None, "ALLREDUCE")


def test_an_absurd_iteration_is_no_progress() -> None:
    last = LineRef(file="a.log", line=90, text=f" iteration     {BIG}/  500 | lm loss: 1.9 |", rank=0)
    stat = TemplateStat(
        template_id="t", template=" iteration <NUM>/ <NUM> | lm loss: <NUM> |", rank=0, count=50, first=last, last=last
    )
    assert build_events([_scan("a.log", [], [stat])]) == []


# PyTorch's notes under a CUDA error (bghira/SimpleTuner#1775, WangLibo1995/GeoSeg#20), behind torchrun's prefix
HINTS = [
    "[rank1]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below"
    " might be incorrect.",
    "[rank1]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
    "[rank1]: Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]


def test_whatever_rule_fires_on_a_hint_line_its_event_is_context() -> None:
    # an operator's rule on "CUDA" would fire on the notes; the error above them keeps its own role
    ecc = "[rank1]: RuntimeError: CUDA error: device-side assert triggered"  # WangLibo1995/GeoSeg#20
    hits = [_hit("t.log", 1, ecc, FailureClass.GPU_HARDWARE, rule="op.cuda", rank=1)]
    hits += [
        _hit("t.log", n, text, FailureClass.GPU_HARDWARE, rule=f"op.cuda{n}", rank=1) for n, text in enumerate(HINTS, 2)
    ]
    events = build_events([_scan("t.log", hits)])
    assert [(e.line, e.role, e.demoted) for e in events] == [
        (1, Role.ROOT_CAUSE, None),
        (2, Role.CONTEXT, "hint"),
        (3, Role.CONTEXT, "hint"),
        (4, Role.CONTEXT, "hint"),
    ]


def test_a_message_that_carries_a_hint_after_it_is_no_hint() -> None:
    # sgl-project/sglang#3460: NCCL's hint inside the error that names the failure
    nccl = "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    assert not is_hint(nccl)
    assert is_hint("7: For debugging consider passing CUDA_LAUNCH_BLOCKING=1")  # srun --label's prefix peeled


# lit-llama's step lines and the HCA's port error between them (Lightning-AI/lit-llama#380); the job then dies of
# a CUDA OOM (the line as in Lightning-AI/litgpt#303).
LIT = [
    "iter 83592: loss 1.5455, time: 4401.19ms, speed: - toks/s/device",
    "iter 83593: loss 2.6294, time: 6669.64ms, speed: - toks/s/device",
    "gpu-48:34050:34121 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error",
    "iter 83594: loss 1.9491, time: 6235.95ms, speed: 1771 toks/s/device",
    "iter 83595: loss 1.9491, time: 6235.95ms, speed: 1771 toks/s/device",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.06 GiB. GPU 0 has a total capacty of"
    " 23.70 GiB of which 1.27 GiB is free.",
]


def test_an_error_the_rank_kept_training_after_is_context_not_the_cause(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(LIT) + "\n")
    report = triage(log, workers=1)
    port = next(e for e in report.events if getattr(e, "rule_id", "") == "net.ib.async_event")
    assert (port.role, port.demoted) == (Role.CONTEXT, "survived")
    assert report.diagnosis.failure_class is FailureClass.GPU_OOM
    assert "training outlived a network error on gpu-48" in report.diagnosis.summary
    # the port error as the last thing the rank printed: nothing outlived it, it stands
    log.write_text("\n".join(LIT[:3]) + "\n")
    assert triage(log, workers=1).diagnosis.failure_class is FailureClass.NETWORK


def test_the_last_of_a_repeated_error_decides_whether_it_was_outlived(tmp_path: Path) -> None:
    # the port error again after the last step (NVIDIA/nccl#905: "the log is full of" them): not outlived
    log = tmp_path / "train.log"
    log.write_text("\n".join([*LIT[:5], LIT[2]]) + "\n")
    report = triage(log, workers=1)
    port = next(e for e in report.events if getattr(e, "rule_id", "") == "net.ib.async_event")
    assert (port.line, port.count, port.role) == (3, 2, Role.ROOT_CAUSE)

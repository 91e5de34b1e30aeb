"""build_events: hits grouped per (rule, node, rank, file), tagged by kind, and put in one time order."""

from __future__ import annotations

from datetime import datetime

from pydantic import TypeAdapter

from crashcart.agent.events import (
    CheckpointEvent,
    CollectiveTimeoutEvent,
    Event,
    FailureEvent,
    ProgressEvent,
    XidEvent,
    build_events,
)
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import Action, FailureClass, Role, Stage
from crashcart.parsers.models import FileScan, RuleHit, TemplateStat


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
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1",
            FailureClass.GPU_HARDWARE,
            rule="xid",
            captures={"xid": "79"},
        ),
        _hit(
            "k.log",
            2,
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE",
            FailureClass.COLLECTIVE_TIMEOUT,
            rule="wd",
            role=Role.SYMPTOM,
            captures={"seq": "12", "op": "ALLREDUCE"},
        ),
        _hit(
            "k.log",
            3,
            "loading checkpoint from /ckpt at iteration 100",
            FailureClass.STORAGE,
            rule="ck",
            role=Role.CONTEXT,
            stage=Stage.CHECKPOINT,
        ),
        _hit("k.log", 4, "cluster state healthy", FailureClass.STORAGE, rule="ctx", role=Role.CONTEXT),
    ]
    events = build_events([_scan("k.log", hits)])
    assert [type(e) for e in events] == [XidEvent, CollectiveTimeoutEvent, CheckpointEvent]
    assert events[0].xid == 79
    assert (events[1].seq, events[1].op) == (12, "ALLREDUCE")
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
    first = LineRef(file="a.log", line=1, text=" iteration      10/  500 | lm loss: 2.1 |", rank=0)
    last = LineRef(file="a.log", line=90, text=" iteration     1200/  500 | lm loss: 1.9 |", rank=0)
    stat = TemplateStat(
        template_id="t", template=" iteration <NUM>/ <NUM> | lm loss: <NUM> |", rank=0, count=50, first=first, last=last
    )
    other = TemplateStat(template_id="u", template="hello <NUM>", count=1, first=first, last=first)
    events = build_events([_scan("a.log", [], [stat, other])])
    assert len(events) == 1 and isinstance(events[0], ProgressEvent)
    assert (events[0].iteration, events[0].line, events[0].count) == (1200, 90, 50)


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
        "node02:4311:4400 [3] NCCL INFO comm 0x55 rank 19 nranks 32 - Init COMPLETE",
        rule="ctx.nccl_init",
        role=Role.CONTEXT,
        node="node02",
        rank=1,
        captures={"rank": "19"},
    )
    oom = _hit(
        "slurm-1.out",
        90,
        "[rank19]: torch.OutOfMemoryError: CUDA out of memory.",
        FailureClass.GPU_OOM,
        rule="oom",
        rank=19,
    )
    events = build_events([_scan("slurm-1.out", [init, oom])])
    assert [(e.rule_id, e.node, e.rank) for e in events] == [("oom", "node02", 19)]


def test_a_node_named_in_the_message_is_the_events_node() -> None:
    hit = _hit(
        "slurm-1.out",
        3,
        "srun: error: Node failure on node07",
        FailureClass.NODE_FAILURE,
        rule="nf",
        node="node00",
        captures={"node": "node07"},
    )
    (event,) = build_events([_scan("slurm-1.out", [hit])])
    assert (event.node, event.names_node) == ("node07", True)


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

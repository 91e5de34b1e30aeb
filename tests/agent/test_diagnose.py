"""The deterministic diagnosis: root cause over symptoms, first in time, locality, evidence, unknown."""

from __future__ import annotations

from datetime import datetime, timedelta

from crashcart.agent.diagnose import diagnose
from crashcart.agent.events import CollectiveTimeoutEvent, FailureEvent, ProgressEvent, XidEvent
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, Action, FailureClass, Role, Stage
from crashcart.parsers.models import FileScan, TemplateStat

T0 = datetime(2024, 11, 28, 7, 0, 0)


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
        text="Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE",
        op="ALLREDUCE",
        seq=7,
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
        text="NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen",
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
        _fail(FailureClass.CODE_BUG, 35, line=2, text="AttributeError: x"),
        _fail(FailureClass.GPU_OOM, 85, line=1, text="torch.OutOfMemoryError: CUDA out of memory.", rank=3),
        _fail(FailureClass.UNKNOWN, 10, role=Role.SYMPTOM, line=9, text="ChildFailedError"),
    ]
    d = diagnose(events, [_scan("a.log", None, [0, 1, 2, 3])])
    assert d.failure_class is FailureClass.GPU_OOM
    assert d.faulty_ranks == [3]
    assert d.evidence[0].text.startswith("torch.OutOfMemoryError")


def test_first_error_in_time_beats_the_connection_resets_it_caused() -> None:
    events = [
        _fail(FailureClass.HOST_OOM, 40, node="node03", file="node03.log", minutes=0, text="Killed"),
        _fail(
            FailureClass.NETWORK,
            50,
            node="node01",
            file="node01.log",
            minutes=2,
            text="NCCL WARN socketProgressOpt: Call to recv failed : Connection reset by peer",
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
    progress = ProgressEvent(file="a.log", line=1, text=" iteration 1200/ 5000 |", iteration=1200, rank=0)
    oom = _fail(FailureClass.GPU_OOM, 85, line=2, rank=0)
    d = diagnose([progress, oom], [_scan("a.log", None, [0])])
    assert d.stage is Stage.TRAINING and d.iteration == 1200
    save = _fail(
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
        [_fail(FailureClass.UNKNOWN, 10, role=Role.SYMPTOM, text="ChildFailedError")], [_scan("a.log", None, [None])]
    )
    assert d.failure_class is FailureClass.UNKNOWN
    assert d.evidence[0].text == "ChildFailedError"


def test_evidence_is_capped_and_deduplicated() -> None:
    events = [_fail(FailureClass.STORAGE, 75, rank=r, line=r + 1) for r in range(20)]
    events += [_fail(FailureClass.STORAGE, 75, rank=0, line=99)]
    d = diagnose(events, [_scan("a.log", None, list(range(40)))])
    assert 1 < len(d.evidence) <= 8
    keys = [(e.rule_id, e.node, e.rank) for e in d.evidence]
    assert len(keys) == len(set(keys))


def test_node_named_by_the_message_outranks_the_node_that_printed_it() -> None:
    accused = _fail(FailureClass.NODE_FAILURE, 88, node="node02", text="srun: error: Node failure on node02")
    accused = accused.model_copy(update={"names_node": True})
    printer = _fail(
        FailureClass.NODE_FAILURE,
        88,
        node="node00",
        line=2,
        text="*** JOB 4 ON node00 CANCELLED AT 2026-07-10T20:17:51 DUE TO NODE FAILURE ***",
    )
    d = diagnose([accused, printer], [_scan(f"node0{i}.log", f"node0{i}", [None]) for i in range(4)])
    assert d.faulty_nodes == ["node02"]


def test_weak_echoes_of_the_class_do_not_add_nodes() -> None:
    kernel = _fail(FailureClass.HOST_OOM, 85, node="node02", file="k.log", text="Out of memory: Killed process 4")
    launcher = _fail(FailureClass.HOST_OOM, 40, node="node00", file="s.out", text="failed (exitcode: -9)")
    d = diagnose([kernel, launcher], [_scan(f"node0{i}.log", f"node0{i}", [None]) for i in range(4)])
    assert d.faulty_nodes == ["node02"]


def test_job_wide_classes_name_no_culprit_rank() -> None:
    events = [
        _fail(FailureClass.LOSS_DIVERGENCE, 70, rank=7, text="lm loss: nan"),
        _fail(FailureClass.LOSS_DIVERGENCE, 70, rank=15, line=2, text="lm loss: nan"),
    ]
    d = diagnose(events, [_scan("a.log", None, list(range(16)))])
    assert (d.failure_class, d.faulty_nodes, d.faulty_ranks) == (FailureClass.LOSS_DIVERGENCE, [], [])

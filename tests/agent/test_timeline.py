"""agent/timeline.py: each printer's progress lines, the last one and its cadence, who kept going, who stopped first."""

from __future__ import annotations

from datetime import datetime

from crashcart.agent.timeline import Progress, Timeline, TimelineIndex, first_to_stop, timelines
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import Action, FailureClass, Role, Stage
from crashcart.parsers.models import FileScan, MetricPoint, RuleHit, TemplateStat

# lit-llama's pretraining loop prints one line per step (Lightning-AI/lit-llama#380)
LIT = [
    "iter 83592: loss 1.5455, time: 4401.19ms, speed: - toks/s/device",
    "iter 83593: loss 2.6294, time: 6669.64ms, speed: - toks/s/device",
    "iter 83594: loss 1.9491, time: 6235.95ms, speed: 1771 toks/s/device",
]
# Megatron-LM's training_log (megatron/training/training.py) in the timestamped form of NVIDIA/Megatron-LM#756's
# lines in knowledge/healthy/megatron.log; the numbers are this test's
MEGATRON = (
    " [2024-05-01 10:{mm}] iteration      {it}/  100000 | consumed samples:       522240 | elapsed time per"
    " iteration (ms): 2950.1 | learning rate: 2.999E-04 | global batch size:  1024 | lm loss: 2.345678E+00 |"
)
# slurmstepd's cancellation line (IGNF/myria3d#123): "STEP 6053" is no training step
STEPD = "slurmstepd: error: *** STEP 6053.0 ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***"


def _megatron(line: int, mm: str, it: int, file: str = "rank0.log", rank: int | None = 0) -> MetricPoint:
    text = MEGATRON.format(mm=mm, it=it)
    when = datetime(2024, 5, 1, 10, int(mm[:2]), int(mm[3:]))
    return MetricPoint(line=line, text=text, time=when, rank=rank, iteration=it, loss=2.345678)


def _scan(file: str, metrics: list[MetricPoint], templates: list[TemplateStat] = (), **kw: object) -> FileScan:
    return FileScan(file=file, lines=100, bytes=1000, hits=[], templates=list(templates), metrics=metrics, **kw)


def test_a_progress_template_gives_its_first_and_last_lines_as_points() -> None:
    first = LineRef(file="train.log", line=1, text=LIT[0])
    last = LineRef(file="train.log", line=40, text=LIT[2])
    stat = TemplateStat(
        template_id="t", template="iter <NUM>: loss <NUM>, time: <NUM>ms, speed: <*> toks/s/device", count=3,
        first=first, last=last,
    )  # fmt: skip
    (line,) = timelines([_scan("train.log", [], [stat])])
    assert (line.file, line.rank) == ("train.log", None)
    assert [(p.line, p.iteration) for p in line.points] == [(1, 83592), (40, 83594)]
    assert line.last.text == LIT[2] and line.cadence is None  # untimed: no cadence


def test_metric_points_per_rank_with_the_median_gap_as_cadence() -> None:
    points = [_megatron(n, mm, it) for n, mm, it in ((10, "03:10", 510), (20, "03:40", 520), (30, "04:10", 530))]
    points.append(_megatron(40, "05:40", 540))  # one slow interval does not move the median
    (line,) = timelines([_scan("rank0.log", points)])
    assert (line.rank, line.last.iteration, line.last.line) == (0, 540, 40)
    assert line.cadence == 30.0


def test_a_line_a_rule_matched_is_no_progress() -> None:
    stepd = MetricPoint(line=50, text=STEPD, rank=0, iteration=6053)  # what the metric pattern reads off it
    hit = RuleHit(
        rule_id="sched.scancel", failure_class=FailureClass.CANCELLED, action=Action.RETRY,
        role=Role.ROOT_CAUSE, priority=30, stage=Stage.SHUTDOWN, ref=LineRef(file="rank0.log", line=50, text=STEPD),
    )  # fmt: skip
    scan = _scan("rank0.log", [_megatron(10, "03:10", 510), stepd]).model_copy(update={"hits": [hit]})
    (line,) = timelines([scan])
    assert [p.iteration for p in line.points] == [510]


def _line(file: str, rank: int | None, *points: tuple[int, int, str | None], node: str | None = None) -> Timeline:
    made = tuple(
        Progress(n, datetime.fromisoformat(f"2024-05-01T10:{t}") if t else None, it, MEGATRON) for n, it, t in points
    )
    return Timeline(file, node, rank, made)


def test_kept_going_means_a_higher_iteration_later_and_one_stray_number_is_not_progress() -> None:
    line = _line("rank0.log", 0, (10, 510, None), (20, 520, None), (30, 530, None))
    assert line.kept_going(15, None)  # 520 and 530 after 510
    assert not line.kept_going(35, None)  # nothing after the last line
    assert line.kept_going(5, None)  # before the first: 510 then 520
    assert not _line("rank0.log", 0, (30, 530, None)).kept_going(5, None)  # one line after is no progress shown
    timed = _line("rank0.log", 0, (10, 510, "03:10"), (20, 520, "03:40"))
    assert timed.kept_going(None, datetime(2024, 5, 1, 10, 3, 20))  # another file's line, compared by time
    assert not timed.kept_going(None, None)


def test_owners_are_the_same_rank_in_its_file_else_the_same_node_and_rank_elsewhere() -> None:
    r0 = _line("node07.log", 0, (10, 510, "03:10"), node="node07")
    r1 = _line("node07.log", 1, (11, 510, "03:10"), node="node07")
    printer = _line("train.log", None, (5, 510, None))
    index = TimelineIndex([r0, r1, printer])
    assert index.owners("node07.log", "node07", 1) == ([r1], True)
    assert index.owners("node07.log", "node07", None) == ([r0, r1], True)  # a rank-less line: every printer of it
    assert index.owners("train.log", None, 5) == ([printer], True)  # the file's only printer stands for its ranks
    assert index.owners("kernel-node07.log", "node07", None) == ([r0, r1], False)  # the kernel log, by time
    assert index.owners("kernel-node08.log", "node08", None) == ([], False)


def test_the_printer_that_stopped_first_by_time_then_by_iteration() -> None:
    r0 = _line("rank0.log", 0, (10, 510, "03:10"), (20, 520, "03:40"), (30, 530, "04:10"), (40, 540, "04:40"))
    r1 = _line("rank1.log", 1, (10, 510, "03:10"), (20, 520, "03:40"))
    assert first_to_stop([r0, r1]) is r1  # a minute earlier, two cadences
    close = _line("rank1.log", 1, (10, 510, "03:10"), (20, 520, "03:40"), (30, 530, "04:10"))
    assert first_to_stop([r0, close]) is None  # one cadence apart: lockstep ranks, nobody stopped first
    untimed = [_line("a.log", 0, (10, 510, None), (20, 530, None)), _line("b.log", 1, (10, 510, None))]
    assert first_to_stop(untimed) is untimed[1]
    assert first_to_stop([r0]) is None

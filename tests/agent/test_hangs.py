"""agent/hangs.py: a hang from stack dumps (the rank whose stack differs) or from every rank's progress stalling."""

from __future__ import annotations

from datetime import datetime, timedelta

from crashcart.agent.events import CheckpointEvent
from crashcart.agent.hangs import STACK_RULE, STALL_RULE, describe, hang_dumps, hang_events, outliers
from crashcart.agent.timeline import timelines
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import FailureClass, Role
from crashcart.parsers.models import FileScan, Frame, MetricPoint, StackDump, TemplateStat

# py-spy dumps of a BLOOM-176B eval hang (bigscience-workshop/bigscience, train/tr11-176B-ml/chronicles.md,
# 2022-05-09): three ranks of a group wait in broadcast, the fourth sits in a DataLoader queue. Innermost last.
_TAIL = [
    Frame(file="pretrain_gpt.py", function="<module>"),
    Frame(file="torch/distributed/elastic/multiprocessing/errors/__init__.py", function="wrapper", package="torch"),
    Frame(file="pretrain_gpt.py", function="main"),
    Frame(file="megatron/training.py", function="pretrain"),
    Frame(file="megatron/training.py", function="train"),
    Frame(file="megatron/training.py", function="evaluate_and_print_results"),
    Frame(file="megatron/training.py", function="evaluate"),
    Frame(file="deepspeed/runtime/pipe/engine.py", function="eval_batch", package="deepspeed"),
    Frame(file="deepspeed/runtime/pipe/engine.py", function="_exec_schedule", package="deepspeed"),
    Frame(file="deepspeed/runtime/pipe/engine.py", function="_exec_load_micro_batch", package="deepspeed"),
    Frame(file="deepspeed/runtime/pipe/engine.py", function="_next_batch", package="deepspeed"),
]
IN_BROADCAST = [
    *_TAIL,
    Frame(file="pretrain_gpt.py", function="get_batch_pipe"),
    Frame(file="megatron/mpu/data.py", function="broadcast_data"),
    Frame(file="megatron/mpu/data.py", function="_build_key_size_numel_dictionaries"),
    Frame(file="torch/distributed/distributed_c10d.py", function="broadcast", package="torch"),
]
IN_DATALOADER = [
    *_TAIL,
    Frame(file="torch/utils/data/dataloader.py", function="__next__", package="torch"),
    Frame(file="torch/utils/data/dataloader.py", function="_next_data", package="torch"),
    Frame(file="torch/utils/data/dataloader.py", function="_get_data", package="torch"),
    Frame(file="torch/utils/data/dataloader.py", function="_try_get_data", package="torch"),
    Frame(file="queue.py", function="get", package="python"),
    Frame(file="threading.py", function="wait", package="python"),
]
HEADERS = {  # the dumps' thread lines, as py-spy printed them there
    688514: 'Thread 688514 (idle): "MainThread"',
    688515: 'Thread 688515 (active): "MainThread"',
    688516: 'Thread 688516 (active): "MainThread"',
    688517: 'Thread 688517 (active): "MainThread"',
}


def _dump(rank: int, pid: int, frames: list[Frame]) -> StackDump:
    ref = LineRef(file=f"trace-rank{rank}.out", line=3, text=HEADERS[pid], rank=rank)
    return StackDump(start=ref, thread=HEADERS[pid], frames=frames)


def _scan(file: str, stacks: list[StackDump] = (), metrics: list[MetricPoint] = (), last: LineRef | None = None):
    templates = []
    if last is not None:
        templates.append(TemplateStat(template_id="k", template=last.text, count=1, first=last, last=last))
    return FileScan(
        file=file, lines=10, bytes=100, hits=[], templates=templates, stacks=list(stacks), metrics=list(metrics)
    )


def test_the_rank_in_a_dataloader_queue_while_its_peers_wait_in_broadcast_is_the_outlier() -> None:
    dumps = [_dump(0, 688514, IN_DATALOADER)] + [_dump(r, 688514 + r, IN_BROADCAST) for r in (1, 2, 3)]
    scans = [_scan(f"trace-rank{d.start.rank}.out", [d]) for d in dumps]
    assert outliers(dumps) == [dumps[0]]
    (event,) = hang_events(scans, [], [])
    assert (event.rule_id, event.rank, event.failure_class, event.role) == (
        STACK_RULE, 0, FailureClass.COLLECTIVE_TIMEOUT, Role.SYMPTOM,
    )  # fmt: skip
    assert event.text == 'Thread 688514 (idle): "MainThread"'
    assert (
        describe(event, scans)
        == "rank 0's stack (in _try_get_data, torch/utils/data/dataloader.py) differs from its peers'"
    )


# Node 49 of the same hang: four ranks in all_reduce, four in a pipeline recv, both inside a collective.
_EVAL = _TAIL[:8]
IN_ALL_REDUCE = [
    *_EVAL,
    Frame(file="deepspeed/runtime/pipe/engine.py", function="_reduce_outputs", package="deepspeed"),
    Frame(file="torch/distributed/distributed_c10d.py", function="all_reduce", package="torch"),
]
IN_RECV = [
    *_EVAL,
    Frame(file="deepspeed/runtime/pipe/engine.py", function="_exec_schedule", package="deepspeed"),
    Frame(file="deepspeed/runtime/pipe/engine.py", function="_exec_recv_activations", package="deepspeed"),
    Frame(file="deepspeed/runtime/pipe/p2p.py", function="recv", package="deepspeed"),
    Frame(file="torch/distributed/distributed_c10d.py", function="recv", package="torch"),
]


def test_two_even_groups_in_collectives_name_no_outlier_but_still_show_a_hang() -> None:
    dumps = [_dump(r, 688514 + r, IN_ALL_REDUCE if r < 2 else IN_RECV) for r in range(4)]
    assert outliers(dumps) == []
    (event,) = hang_events([_scan("trace-rank0.out", dumps)], [], [])
    assert (event.rule_id, event.rank) == (STACK_RULE, None)
    assert describe(event, []) == "stack dumps of a hang, no rank apart from its peers"


# Megatron-LM's training_log lines (megatron/training/training.py), one every 30 s, then silence; the log goes on
# with DeepSpeed's launcher killing the workers two hours later (deepspeedai/DeepSpeed#1581).
MEGATRON = " [2021-11-21 {hms}] iteration      {it}/  100000 | consumed samples:       522240 | lm loss: 2.345678E+00 |"
KILLING = "[2021-11-21 08:32:07,148] [INFO] [launch.py:131:sigkill_handler] Killing subprocess 250621"
T0 = datetime(2021, 11, 21, 6, 0, 0)


def _progress(n: int) -> list[MetricPoint]:
    out = []
    for i in range(n):
        when = T0 + timedelta(seconds=30 * i)
        out.append(MetricPoint(line=i + 1, text=MEGATRON.format(hms=when.strftime("%H:%M:%S"), it=510 + 10 * i),
                               time=when, rank=0, iteration=510 + 10 * i))  # fmt: skip
    return out


def test_every_rank_stalled_for_many_cadences_while_the_log_went_on_is_a_hang() -> None:
    scan = _scan("rank0.log", metrics=_progress(10), last=LineRef(file="rank0.log", line=90, text=KILLING,
                                                                   time=datetime(2021, 11, 21, 8, 32, 7)))  # fmt: skip
    (event,) = hang_events([scan], timelines([scan]), [])
    assert (event.rule_id, event.line, event.rank) == (STALL_RULE, 10, None)  # one printer: nobody stopped first
    assert describe(event, [scan]) == "no progress for 147 min after this line while the log went on"


def test_no_hang_while_progress_goes_on_or_a_checkpoint_is_written_after_it() -> None:
    ends_soon = _scan("rank0.log", metrics=_progress(10), last=LineRef(file="rank0.log", line=12, text=KILLING,
                                                                       time=T0 + timedelta(minutes=6)))  # fmt: skip
    assert hang_events([ends_soon], timelines([ends_soon]), []) == []
    late = _scan("rank0.log", metrics=_progress(10), last=LineRef(file="rank0.log", line=90, text=KILLING,
                                                                  time=datetime(2021, 11, 21, 8, 32, 7)))  # fmt: skip
    # Megatron-LM's save line (save_checkpoint's 'saving checkpoint at iteration {:7d} to {}' in
    # megatron/training/checkpointing.py; the path is this test's), an hour after the last step: a long save, no hang
    save = CheckpointEvent(file="rank0.log", line=50, text=" saving checkpoint at iteration    1000 to /ckpt/gpt-13b",
                           time=T0 + timedelta(hours=1), op="save")  # fmt: skip
    assert hang_events([late], timelines([late]), [save]) == []


# threestudio-project/threestudio#369: a segfault after 4540 steps, and faulthandler's dump of the threads under it
SEGV = (
    "Epoch 0: |                                     | 4540/? [07:57<00:00,  9.51it/s]"
    "Fatal Python error: Segmentation fault"
)
NO_FRAME = "Thread 0x00007f57168aa700 (most recent call first):"
TQDM = "Thread 0x00007f5741fff700 (most recent call first):"
_TQDM_FRAMES = [  # innermost last, as the dump listed them innermost first
    Frame(file="threading.py", function="_bootstrap", package="python"),
    Frame(file="threading.py", function="_bootstrap_inner", package="python"),
    Frame(file="tqdm/_monitor.py", function="run", package="tqdm"),
    Frame(file="threading.py", function="wait", package="python"),
    Frame(file="threading.py", function="wait", package="python"),
]


def _crash_scan(fatal_line: int | None) -> FileScan:
    file = "train.log"
    dumps = [
        StackDump(start=LineRef(file=file, line=3, text=NO_FRAME), thread=NO_FRAME.rstrip(":"), frames=[]),
        StackDump(start=LineRef(file=file, line=6, text=TQDM), thread=TQDM.rstrip(":"), frames=_TQDM_FRAMES),
    ]
    fatal = LineRef(file=file, line=fatal_line or 1, text=SEGV)
    templates = [TemplateStat(template_id="f", template=SEGV, count=1, first=fatal, last=fatal)] if fatal_line else []
    return FileScan(file=file, lines=11, bytes=900, hits=[], templates=templates, stacks=dumps)


def test_the_threads_faulthandler_dumps_under_a_fatal_signal_are_a_crash_report_not_a_hang() -> None:
    crashed = _crash_scan(fatal_line=1)
    assert hang_dumps(crashed) == []
    assert hang_events([crashed], [], []) == []
    # the same threads with no fatal line above them (a dump on demand, faulthandler.register) are a hang's
    dumped = _crash_scan(fatal_line=None)
    assert len(hang_dumps(dumped)) == 2
    (event,) = hang_events([dumped], [], [])
    assert event.rule_id == STACK_RULE


def test_a_dump_well_below_a_fatal_line_is_not_part_of_its_crash_report() -> None:
    far = _crash_scan(fatal_line=1).model_copy(update={"lines": 400})
    later = StackDump(
        start=LineRef(file="train.log", line=300, text=TQDM), thread=TQDM.rstrip(":"), frames=_TQDM_FRAMES
    )
    far.stacks.append(later)
    assert hang_dumps(far) == [later]

"""agent/watch_stall.py: the stall threshold from the job's cadence, and which printer a stall names.

The progress lines are Megatron's iteration line as crashcart/evals/generator.py writes it (NVIDIA/Megatron-LM#756).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from crashcart.agent.watch_stall import MIN_STALL_S, STALL_CADENCES, StallWatch
from crashcart.knowledge.records import LineRef
from crashcart.parsers.templater import Templater

START = datetime(2026, 2, 14, 11, 25, 28)
TIMERS = "[default3]:    optimizer ......................................: (41.86, 41.92)"


def ref(file: str, k: int, every_s: float | None = 5.0) -> LineRef:
    """File's progress line of iteration k, stamped k * every_s after START (no stamp with every_s None)."""
    stamp = START + timedelta(seconds=k * every_s) if every_s is not None else None
    text = f"[default3]: [{stamp or START:%Y-%m-%d %H:%M:%S}] iteration {k:8d}/    4158 | consumed samples: {k * 1024}"
    return LineRef(file=file, line=4 * k, text=text, node=file.removesuffix(".log"), time=stamp)


def feed(watch: StallWatch, file: str, ks: range, now: float, every_s: float | None = 5.0, arrive_s: float = 0.0):
    for i, k in enumerate(ks):
        watch.progress(file, None, k, ref(file, k, every_s), now + i * arrive_s)


TEMPLATER = Templater()


def shape(text: str) -> int:
    """The templater's index of a line, as the watcher gives it (prefixes aside, numbers masked)."""
    return TEMPLATER.template_index(text.encode())


def test_the_threshold_is_ten_of_the_jobs_intervals_and_at_least_five_minutes() -> None:
    fast, slow = StallWatch(), StallWatch()
    feed(fast, "node00.log", range(1, 20), now=0.0, every_s=5.0)
    feed(slow, "node00.log", range(1, 20), now=0.0, every_s=60.0)
    assert fast.threshold() == MIN_STALL_S  # 10 x 5 s is under five minutes
    assert slow.threshold() == STALL_CADENCES * 60.0
    assert StallWatch(stall_after=42.0).threshold() == 42.0


def test_without_time_stamps_the_cadence_is_when_lines_arrived_and_a_backlog_teaches_nothing() -> None:
    watch = StallWatch()
    feed(watch, "node00.log", range(1, 50), now=0.0, every_s=None)  # a backlog read at once
    assert watch.threshold() == MIN_STALL_S
    feed(watch, "node00.log", range(50, 60), now=100.0, every_s=None, arrive_s=45.0)
    assert watch.threshold() == STALL_CADENCES * 45.0


def test_a_stall_is_reported_once_after_the_threshold_and_again_after_progress_resumes() -> None:
    watch = StallWatch(stall_after=30.0)
    feed(watch, "node00.log", range(1, 4), now=0.0)
    assert watch.check(29.0, shape) is None
    stall = watch.check(31.0, shape)
    assert stall is not None and (stall.stalled_s, stall.threshold_s) == (31.0, 30.0)
    assert watch.check(40.0, shape) is None
    watch.progress("node00.log", None, 3, ref("node00.log", 3), 41.0)  # the same iteration again: no progress
    assert watch.check(80.0, shape) is None
    watch.progress("node00.log", None, 4, ref("node00.log", 4), 81.0)
    assert watch.check(112.0, shape) is not None


def test_the_printer_behind_its_peers_is_named() -> None:
    watch = StallWatch(stall_after=10.0)
    feed(watch, "node00.log", range(1, 9), now=0.0)
    feed(watch, "node01.log", range(1, 6), now=0.0)  # stopped three iterations early
    feed(watch, "node02.log", range(1, 9), now=0.0)
    stall = watch.check(11.0, shape)
    assert stall is not None
    assert (stall.nodes, stall.iteration, stall.why) == (
        ["node01"],
        5,
        "stopped first, at iteration 5 (others reached 8)",
    )
    assert [e.text for e in stall.evidence] == [ref("node01.log", 5).text]


def test_when_all_stop_together_the_printer_whose_last_line_differs_is_named() -> None:
    watch = StallWatch(stall_after=10.0)
    for node in ("node00", "node01", "node02"):
        feed(watch, f"{node}.log", range(1, 9), now=0.0)
        watch.last_line(f"{node}.log", 40, TIMERS)
    watch.last_line("node02.log", 41, ref("node02.log", 8).text)  # ended on its iteration line, not on the timers
    stall = watch.check(11.0, shape)
    assert stall is not None
    assert (stall.nodes, stall.why) == (["node02"], "every rank stopped at iteration 8; its last line differs")


def test_when_nothing_tells_the_ranks_apart_the_first_is_named_with_its_last_line() -> None:
    watch = StallWatch(stall_after=10.0)
    for node in ("node00", "node01"):
        feed(watch, f"{node}.log", range(1, 9), now=0.0)
        watch.last_line(f"{node}.log", 40, TIMERS)
    stall = watch.check(11.0, shape)
    assert stall is not None
    assert (stall.nodes, stall.why) == (["node00"], "every rank stopped at iteration 8 at once; none differs")
    assert [(e.line, e.text) for e in stall.evidence] == [(32, ref("node00.log", 8).text), (40, TIMERS)]


def test_a_lower_iteration_is_a_restart_from_a_checkpoint_and_counts_as_progress() -> None:
    watch = StallWatch(stall_after=30.0)
    feed(watch, "node00.log", range(1, 41), now=0.0)
    assert watch.progress("node00.log", None, 40, ref("node00.log", 40), 20.0) is False
    assert watch.progress("node00.log", None, 21, ref("node00.log", 21), 25.0) is True
    assert watch.check(50.0, shape) is None  # 25 s since the restart's first line
    stall = watch.check(56.0, shape)
    assert stall is not None and stall.iteration == 21


def test_printers_are_bounded_and_the_stalest_goes_first(monkeypatch) -> None:
    from crashcart.agent import watch_stall

    monkeypatch.setattr(watch_stall, "MAX_PRINTERS", 2)
    watch = StallWatch(stall_after=10.0)
    feed(watch, "train.log.2", range(1, 5), now=0.0)  # rotated away long ago
    feed(watch, "train.log.1", range(5, 9), now=100.0)
    feed(watch, "train.log", range(9, 12), now=200.0)
    stall = watch.check(211.0, shape)
    assert stall is not None
    assert (stall.evidence[0].file, stall.why) == ("train.log.1", "stopped first, at iteration 8 (others reached 11)")

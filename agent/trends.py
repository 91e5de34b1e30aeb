"""Numeric trends: a loss spike that ends the run, an fp16 loss-scale collapse, a job torn down on a full host.

No single line says "the loss diverged" when it does so in numbers: Megatron prints `lm loss: 9.8E+01` where it
printed `2.1E+00` a few intervals before, and DeepSpeed halves its loss scale line after line until it reaches
single digits. Both are judged here over the scanner's MetricPoints (the last progress lines of each rank). An
isolated overflow at a large scale, or a grad-norm blip the loss shrugs off, is what healthy runs print. Megatron
says a NaN by leaving it out: its training_log prints a loss only when the interval's average is above zero, so
interval lines that printed `lm loss` and then, to the end of the log, go on without it lost their loss to a NaN
(Megatron-DeepSpeed's nan-iteration count can stay at 0 meanwhile).

Nor does a SIGKILLed worker say why it died: when the launcher tears the job down right after the host's last
memory report read nearly full (ZeRO offload filling host RAM), that reading is the likeliest cause. A high
reading in a job that was not torn down is no failure.

Nor do ranks that fell out of step say so unless a check catches it: with TORCH_DISTRIBUTED_DEBUG=DETAIL PyTorch's
ProcessGroupWrapper logs every collective a rank enters with its sequence number. Ranks of one group enter the same
collectives in the same order, one apart at most while one waits for the other; when the last numbers the ranks logged
are further apart, some rank ran collectives the others did not (a code path not every rank takes, as an MoE layer's
token routing can make), and the job hung or died on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from statistics import median

from crashcart.agent.events import FailureEvent
from crashcart.agent.teardown import TeardownStart, teardown_starts
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, FailureClass, Role
from crashcart.parsers.models import FileScan, MetricPoint, RuleHit

SPIKE_FACTOR = 3.0  # loss this many times its recent median...
GRAD_FACTOR = 5.0  # ... while the grad norm is this many times its own (when the run prints one)
LOSS_ONLY_FACTOR = 5.0  # without grad norms, the loss alone must jump this far
BASELINE_POINTS = 20  # the recent past a spike is measured against
MIN_BASELINE = 8  # fewer loss values than this make no baseline
TAIL_POINTS = 5  # a spike must sit among a rank's last loss values: the run stopped after it
STREAK_MIN = 3  # overflow-and-skip lines in a row...
SCALE_FLOOR = 10.0  # ... whose scale fell below this: the fp16 range is exhausted
DEEP_STREAK_MIN = 2  # fewer skips in a row suffice...
DEEP_FLOOR = 1.0  # ... below a scale of 1: halved 8 (fairseq) to 17 (DeepSpeed, apex) times from where it starts
VANISHED_MIN = 2  # Megatron interval lines in a row, to the end of the log, that no longer print the loss they did
PRIORITY = 50  # a trend is specific evidence, but a signature on the failing line knows more
HOST_PRESSURE = 80.0  # percent of host RAM in use at the last report before a teardown: the kill was likely OOM
PRESSURE_PRIORITY = 40  # a symptom: any root cause the log states outranks it
DESYNC_GAP = 2  # the ranks' last logged collective sequence numbers this far apart: they ran different collectives
DESYNC_PRIORITY = 45  # below any root cause a line names (an OOM or a NCCL error on the lagging rank outranks it)


def trend_events(scans: Sequence[FileScan]) -> list[FailureEvent]:
    """A loss_divergence event for each rank whose numbers show a terminal spike or a scale collapse, and a
    host_oom symptom for each file whose last host-memory report was nearly full when the job was torn down."""
    events: list[FailureEvent] = []
    for scan in scans:
        for points in _by_rank(scan.metrics):
            nonfinite = _nonfinite(points)
            vanished = None if nonfinite is not None else _vanished(points)  # one NaN, one event
            judged = ((_SPIKE, _spike(points)), (_COLLAPSE, _collapse(points)), (_NONFINITE, nonfinite))
            for rule_id, point in (*judged, (_VANISHED, vanished)):
                if point is not None:
                    events.append(_event(rule_id, point, scan.file))
    return events + _pressure_events(scans) + _desync_events(scans)


_SPIKE = "trend.loss_spike"
_COLLAPSE = "trend.loss_scale_collapse"
_NONFINITE = "trend.loss_nonfinite"
_VANISHED = "trend.loss_vanished"
_PRESSURE = "trend.host_memory_pressure"
_DESYNC = "trend.collective_desync"
USAGE_RULE = "mem.host.usage_report"  # memory.yaml: a host-memory report, its percentage captured
FINGERPRINT_RULE = "python.collective_fingerprint"  # python.yaml: a collective a rank entered, rank and number captured


def _by_rank(points: Iterable[MetricPoint]) -> list[list[MetricPoint]]:
    groups: dict[int | None, list[MetricPoint]] = {}
    for point in points:
        groups.setdefault(point.rank, []).append(point)
    return list(groups.values())


def _finite(value: float | None) -> bool:
    return value is not None and value == value and abs(value) != float("inf")


def _spike(points: list[MetricPoint]) -> MetricPoint | None:
    """The highest-loss line among the rank's last values, when it jumped far above the values before it."""
    with_loss = [p for p in points if _finite(p.loss)]
    if len(with_loss) < MIN_BASELINE + 1:
        return None
    first_of_tail = max(0, len(with_loss) - TAIL_POINTS)
    # the first of equal peaks, by position: list.index would compare pydantic models field by field
    at = max(range(first_of_tail, len(with_loss)), key=lambda i: (with_loss[i].loss or 0.0, -i))
    peak = with_loss[at]
    before = with_loss[max(0, at - BASELINE_POINTS) : at]
    if len(before) < MIN_BASELINE:
        return None
    base_loss = median(p.loss or 0.0 for p in before)
    if base_loss <= 0 or (peak.loss or 0.0) < SPIKE_FACTOR * base_loss:
        return None
    grads = [p.grad_norm for p in before if p.grad_norm is not None and _finite(p.grad_norm)]
    if not grads:
        return peak if (peak.loss or 0.0) >= LOSS_ONLY_FACTOR * base_loss else None
    exploded = not _finite(peak.grad_norm) or (peak.grad_norm or 0.0) >= GRAD_FACTOR * max(median(grads), 1e-12)
    return peak if exploded else None


def _nonfinite(points: list[MetricPoint]) -> MetricPoint | None:
    """The first of the NaN/Inf losses (or grad norms) a rank printed to its end: however its logger words it, a run
    whose last numbers are not numbers diverged. A NaN the run trained past (a skipped fp16 step) is not one."""
    valued = [p for p in points if p.loss is not None or p.grad_norm is not None]
    tail: list[MetricPoint] = []
    for point in reversed(valued):
        bad = [v for v in (point.loss, point.grad_norm) if v is not None and not _finite(v)]
        if not bad:
            break
        if point.skipped:  # an overflow the scaler skipped, not a loss the model reached
            return None
        tail.append(point)
    return tail[-1] if tail else None


def _megatron_interval(point: MetricPoint) -> bool:
    """A line of Megatron's training_log: an iteration with its loss scale and skipped-iteration count."""
    return point.iteration is not None and "loss scale:" in point.text and "skipped iterations:" in point.text


def _vanished(points: list[MetricPoint]) -> MetricPoint | None:
    """The first of the Megatron interval lines that, to the end of the rank's log, print no loss where the line
    before them printed a finite one (NVIDIA/Megatron-LM:megatron/training/training.py, training_log: `if avg > 0.0`).
    An interval whose steps were all skipped prints no loss either, and says so in its skipped count: that is no NaN."""
    lines = [p for p in points if _megatron_interval(p)]
    tail: list[MetricPoint] = []
    for point in reversed(lines):
        if point.loss is not None or point.skipped:
            break
        tail.append(point)
    if len(tail) < VANISHED_MIN or len(tail) == len(lines):
        return None
    before = lines[len(lines) - len(tail) - 1]
    return tail[-1] if _finite(before.loss) else None


def _collapse(points: list[MetricPoint]) -> MetricPoint | None:
    """The lowest-scale line of a streak of overflow skips that drove the loss scale into single digits."""
    streak: list[MetricPoint] = []
    worst: MetricPoint | None = None
    for point in points:
        if point.skipped and point.loss_scale is not None:
            streak.append(point)
            continue
        if point.iteration is not None and not point.skipped:  # a step that ran ends the streak
            worst = _worst(streak) or worst
            streak = []
    return _worst(streak) or worst


def _worst(streak: list[MetricPoint]) -> MetricPoint | None:
    """The streak's lowest-scale line, when the streak is long enough for how low its scale fell."""
    if len(streak) < DEEP_STREAK_MIN:
        return None
    low = min(streak, key=lambda p: p.loss_scale if p.loss_scale is not None else float("inf"))
    if low.loss_scale is None:
        return None
    floor = SCALE_FLOOR if len(streak) >= STREAK_MIN else DEEP_FLOOR
    return low if low.loss_scale < floor else None


def _pressure_events(scans: Sequence[FileScan]) -> list[FailureEvent]:
    """The last host-memory report of each file, when it read HOST_PRESSURE or more and a teardown followed it.

    The teardowns are looked for only once a report read that high: the look goes through every template of
    the job (25k on a 1,024-rank-file job), and most jobs report no such pressure."""
    high = []
    for scan in scans:
        reports = [hit for hit in scan.hits if hit.rule_id == USAGE_RULE and "percent" in hit.captures]
        if reports:
            last = max(reports, key=lambda hit: hit.ref.line)
            if _percent(last) >= HOST_PRESSURE:
                high.append(last)
    if not high:
        return []
    starts = teardown_starts(scans, [])
    return [_memory_event(last.ref) for last in high if any(_after(start, last.ref) for start in starts)]


def _desync_events(scans: Sequence[FileScan]) -> list[FailureEvent]:
    """A code_bug event on the last collective of the rank furthest behind and of the one furthest ahead, when their
    sequence numbers are DESYNC_GAP or more apart."""
    last: dict[str, tuple[int, RuleHit]] = {}
    for scan in scans:
        for hit in scan.hits:
            if hit.rule_id != FINGERPRINT_RULE or not hit.captures.get("seq", "").isdigit():
                continue
            rank, seq = hit.captures.get("rank", ""), int(hit.captures["seq"])
            if rank not in last or seq >= last[rank][0]:
                last[rank] = (seq, hit)
    if len(last) < 2:
        return []
    behind = min(last.values(), key=lambda item: item[0])
    ahead = max(last.values(), key=lambda item: item[0])
    if ahead[0] - behind[0] < DESYNC_GAP:
        return []
    return [_desync_event(hit.ref) for _, hit in (behind, ahead)]


def _percent(hit: RuleHit) -> float:
    try:
        return float(hit.captures["percent"])
    except ValueError:
        return 0.0


def _after(start: TeardownStart, ref: LineRef) -> bool:
    """The teardown began after the line: later in its file, or later in time from another file."""
    if start.file == ref.file:
        return start.line > ref.line
    return start.time is not None and ref.time is not None and start.time >= ref.time


def _event(rule_id: str, point: MetricPoint, file: str) -> FailureEvent:
    return FailureEvent(
        file=file,
        line=point.line,
        text=point.text,
        node=point.node,
        rank=point.rank,
        time=point.time,
        rule_id=rule_id,
        failure_class=FailureClass.LOSS_DIVERGENCE,
        action=DEFAULT_ACTION[FailureClass.LOSS_DIVERGENCE],
        role=Role.ROOT_CAUSE,
        priority=PRIORITY,
    )


def _memory_event(ref: LineRef) -> FailureEvent:
    return FailureEvent(
        **dict(ref),
        rule_id=_PRESSURE,
        failure_class=FailureClass.HOST_OOM,
        action=DEFAULT_ACTION[FailureClass.HOST_OOM],
        role=Role.SYMPTOM,
        priority=PRESSURE_PRIORITY,
    )


def _desync_event(ref: LineRef) -> FailureEvent:
    return FailureEvent(
        **dict(ref),
        rule_id=_DESYNC,
        failure_class=FailureClass.CODE_BUG,
        action=DEFAULT_ACTION[FailureClass.CODE_BUG],
        role=Role.ROOT_CAUSE,
        priority=DESYNC_PRIORITY,
    )

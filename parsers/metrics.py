"""The numbers of training-progress lines: iteration, loss, grad norm and loss scale, kept for the last lines.

A loss spike or an fp16 loss-scale collapse is a trend over many lines, which no single-line signature can see.
The scanner finds candidate lines with one Hyperscan pattern (PROGRESS_PATTERN) and hands each block's last
few to a ProgressTrail; only the lines the trail keeps (the last MAX_POINTS per rank) are parsed, once, when the
file ends. So the per-line cost is a Hyperscan match and a deque append, and the Python parsing is bounded per
file whatever its length.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable

from crashcart.knowledge.records import LineRef, trusted
from crashcart.parsers.attribution import rank_prefix
from crashcart.parsers.models import MetricPoint

MAX_POINTS = 128  # per rank and file: a spike against its 20-point baseline, the streaks, the last steps
MAX_PER_BLOCK = 512  # candidate lines looked at per 4 MiB block (the last ones: the tail is what matters)
MAX_LINE = 2000  # a progress line longer than this is read up to here

# Lines that report progress: an iteration/step counter with its number, a loss value, a loss scale or an
# overflow skip, as Megatron-LM, DeepSpeed, HF Trainer, Lightning, fairseq, apex and BigDL ("Loss is 1.26.") print them.
PROGRESS_PATTERN = (
    r"(?i)(?:\b(?:iteration|iter|global_step|step|steps)\b['\"]?[ \t]{0,8}[:=]?[ \t]{0,8}\d"
    r"|\bloss(?:[ _]scale)?\b['\"]?[ \t]{0,4}(?:[:=]|is\b)?[ \t]{0,4}(?:[-+]?\d|nan|inf)"
    r"|skipping step|\boverflow\b)"
)

# Searched in the lowercased line: Python's re is several times faster without IGNORECASE.
_NUM = r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?|[-+]?nan|[-+]?inf(?:inity)?)"
# Slurm's "STEP 6053.0" / "StepId=6053.0" names a job step, not a training step: a dotted number is not one.
_ITERATION = re.compile(
    r"\b(?:iteration|iter|global_step|step|num_updates)\b['\"]?\s{0,8}[:=]?\s{0,8}(\d+)(?![\d.]*\d)"
)
_LOSS = re.compile(r"\b(?:lm[ _]|train[ _]|training[ _])?loss\b(?![ _]scale)['\"]?\s{0,4}(?:[:=]|is\b)?\s{0,4}" + _NUM)
_GRAD_NORM = re.compile(r"\b(?:grad(?:ient)?[ _]norm|gnorm)\b['\"]?\s{0,4}[:=]?\s{0,4}" + _NUM)
_SCALE = re.compile(
    r"(?:attempted loss scale|loss scale reduced to|loss scale to|\bloss[ _]scale\b['\"]?)\s{0,4}[:=]?\s{0,4}" + _NUM
)
_SKIPPED_COUNT = re.compile(r"skipped iterations:\s*[1-9]")


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # "1.2.3" and the like: not a number after all
        return None


def _near(pattern: re.Pattern[str], low: str, word: str, reach: int) -> re.Match[str] | None:
    """pattern.search(low), started `reach` characters before the first `word`, which every match of the
    pattern holds within its first reach+len(word) characters: the same match, found without trying the
    pattern's leading alternation at every position of a long line (8 us to 1.4 us on a Megatron line)."""
    at = low.find(word)
    return pattern.search(low, max(0, at - reach)) if at >= 0 else None


def read_point(ref: LineRef) -> MetricPoint | None:
    """The numbers a progress line reports, or None when it reports none of them."""
    text = ref.text[:MAX_LINE]
    low = text.lower()  # a substring test is cheaper than a regex search that finds nothing
    iteration = _ITERATION.search(low) if "iter" in low or "step" in low or "num_updates" in low else None
    loss = _near(_LOSS, low, "loss", 9)
    grad = _near(_GRAD_NORM, low, "norm", 9)
    scale = _near(_SCALE, low, "scale", 15)
    skipped = (
        "skipping step" in low
        or ("overflow" in low and ("skip" in low or "ignoring grad" in low))  # DeepSpeed, apex; fairseq
        or "overflow detected, setting loss scale" in low  # fairseq's scaler: that update was not applied
        or ("skipped iter" in low and _SKIPPED_COUNT.search(low) is not None)  # Megatron's interval count
    )
    if not (iteration or loss or grad or scale or skipped):
        return None
    fields = {
        "line": ref.line,
        "text": ref.text,
        "time": ref.time,
        "node": ref.node,
        "rank": ref.rank,
        "iteration": int(iteration.group(1)) if iteration and len(iteration.group(1)) < 10 else None,
        "loss": _number(loss.group(1)) if loss else None,
        "grad_norm": _number(grad.group(1)) if grad else None,
        "loss_scale": _number(scale.group(1)) if scale else None,
        "skipped": skipped,
    }
    return trusted(MetricPoint, fields)  # numbers read here, from a line already a record


class ProgressTrail:
    """The last MAX_POINTS progress lines of each rank of one file, kept raw until the file ends."""

    def __init__(self) -> None:
        self._lines: dict[int | None, deque[tuple[int, bytes]]] = {}

    def add_block(self, block: bytes, base: int, starts: list[int]) -> None:
        """Keep the candidate lines starting at `starts` (sorted offsets) of a block whose first line is base+1."""
        starts = starts[-MAX_PER_BLOCK:]
        if not starts:
            return
        no = base + block.count(b"\n", 0, starts[0])
        pos = starts[0]
        for start in starts:
            no += block.count(b"\n", pos, start)
            pos = start
            end = block.find(b"\n", start)
            line = block[start : end if end >= 0 else len(block)][:MAX_LINE]
            rank = rank_prefix(line)
            held = self._lines.get(rank)
            if held is None:
                held = self._lines[rank] = deque(maxlen=MAX_POINTS)
            held.append((no + 1, line))

    def points(self, make_ref: Callable[[str, int], LineRef]) -> list[MetricPoint]:
        """The kept lines as metric points, in line order."""
        rows = sorted(row for held in self._lines.values() for row in held)
        points = []
        for no, line in rows:
            point = read_point(make_ref(line.decode("utf-8", "replace").rstrip("\r"), no))
            if point is not None:
                points.append(point)
        return points

"""The numbers of progress lines, read as they are printed: raw line beside the point it yields."""

from __future__ import annotations

import re

import pytest
from real_logs import real_log_lines

from crashcart.knowledge.records import LineRef
from crashcart.parsers.metrics import (
    _GRAD_NORM,
    _LOSS,
    _SCALE,
    MAX_POINTS,
    PROGRESS_PATTERN,
    ProgressTrail,
    _near,
    read_point,
)

# epfLLM/Megatron-LLM#11 (Megatron's training_log line)
MEGATRON = (
    " iteration      182/  250000 | consumed samples:       186368 | elapsed time per iteration (ms): 126995.3 |"
    " learning rate: 1.365E-05 | global batch size:  1024 | lm loss: 2.382640E+00 | loss scale: 1.0 |"
    " grad norm: 0.227 | number of skipped iterations:   0 | number of nan iterations:   0 |"
)
# ymcui/Chinese-LLaMA-Alpaca#534 (DeepSpeed's loss scaler)
DS_OVERFLOW = (
    "[2023-06-07 22:24:46,260] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step."
    " Attempted loss scale: 4, reducing to 2"
)
HF_LOSS = "{'loss': 2.0491, 'learning_rate': 0.0001961913563176343, 'epoch': 0.28}"  # same thread
# facebookresearch/fairseq#1895 (fairseq's trainer: the update that overflowed is not applied)
FAIRSEQ_OVERFLOW = (
    "2020-03-23 11:41:18 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 0.00048828125"
)
FAIRSEQ_OLD_OVERFLOW = "| WARNING: overflow detected, setting loss scale to: 0.25"  # facebookresearch/fairseq#512
# intel/ipex-llm#1486 (BigDL's DistriOptimizer: "Loss is $loss.")
BIGDL = (
    "2017-08-20 16:11:42 INFO  DistriOptimizer$:295 - [Epoch 64 738304/1281167][Iteration 45458][Wall Clock"
    " 197336.222587172s] Train 1792 in 4.494659207seconds. Throughput is 398.6954 records/second. Loss is 1.308916."
    " Current learning rate is 0.046282765356364115. Current weight decay is 1.0E-4. Current momentum is 0.9."
)
# unsloth/unsloth#5207 (HF Trainer's log dict)
HF_GRAD = "{'loss': 1.51,  'grad_norm': 11140.00}"
# bigscience-workshop/Megatron-DeepSpeed#396
GRAD_NAN = (
    " iteration     5426/  250000 | consumed samples:        43408 | consumed tokens:     88899584 | elapsed time per"
    " iteration (ms): 4247.9 | learning rate: 2.999E-04 | global batch size:     8 | loss scale: 1.0 | grad norm: nan |"
    " actual seqlen:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 |"
)


def ref(text: str, line: int = 1) -> LineRef:
    return LineRef(file="train.log", line=line, text=text)


# facebookresearch/fairseq#2338 (fairseq's train_inner progress)
FAIRSEQ = (
    "2020-07-17 07:11:02 | INFO | train_inner | epoch 001:   2800 / 160368 loss=9.255, ppl=611.12, wps=57.3,"
    " ups=0.04, wpb=1613, bsz=80, num_updates=2800, lr=2.8e-05, gnorm=3.23, train_wall=13, wall=1236"
)


@pytest.mark.parametrize(
    ("text", "iteration", "loss", "grad_norm", "scale", "skipped"),
    [
        (FAIRSEQ, 2800, 9.255, 3.23, None, False),
        (MEGATRON, 182, 2.38264, 0.227, 1.0, False),
        (DS_OVERFLOW, None, None, None, 4.0, True),
        (FAIRSEQ_OVERFLOW, None, None, None, 0.00048828125, True),
        (FAIRSEQ_OLD_OVERFLOW, None, None, None, 0.25, True),
        (HF_LOSS, None, 2.0491, None, None, False),
        (BIGDL, 45458, 1.308916, None, None, False),
        (HF_GRAD, None, 1.51, 11140.0, None, False),
    ],
)
def test_read_point(text: str, iteration: int | None, loss: float | None, grad_norm, scale, skipped: bool) -> None:
    point = read_point(ref(text))
    assert point is not None
    assert (point.iteration, point.loss, point.grad_norm, point.loss_scale, point.skipped) == (
        iteration,
        pytest.approx(loss) if loss is not None else None,
        grad_norm,
        scale,
        skipped,
    )
    assert point.text == text


def test_a_nan_grad_norm_is_kept_as_nan() -> None:
    point = read_point(ref(GRAD_NAN))
    assert point is not None and point.grad_norm is not None and point.grad_norm != point.grad_norm


def test_lines_without_progress_numbers_are_not_points() -> None:
    # torch/distributed/run.py prints this once at start (pytorch/pytorch#64926, dev case n2-config-rdzv-multi-nic-015)
    note = (
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being"
        " overloaded, please further tune the variable for optimal performance in your application as needed."
    )
    assert read_point(ref(note)) is None


def test_the_pattern_finds_progress_lines_and_not_lookalikes() -> None:
    pattern = re.compile(PROGRESS_PATTERN)
    for line in (MEGATRON, DS_OVERFLOW, HF_LOSS, HF_GRAD, BIGDL):
        assert pattern.search(line), line
    # DeepSpeed's timer lines carry "step" only inside a timer's name: deepspeedai/DeepSpeed#4132 (basic_step) and
    # EleutherAI/gpt-neox#965 (step_microstep)
    for timers in (
        "[2023-08-14 16:00:12,964] [INFO] [logging.py:96:log_dist] [Rank 0] rank=0 time (ms) | compute_norm: 2.99 |"
        " overflow_check: 8.91 | unscale_and_clip: 5.07 | basic_step: 19.65 | update_fp16: 4.56",
        "[2023-06-03 00:10:23,345] [INFO] [logging.py:96:log_dist] [Rank 0] rank=0 time (ms) | forward_microstep:"
        " 1330.05 | backward_microstep: 4766.88 | backward_inner_microstep: 4410.89 | backward_allreduce_microstep:"
        " 355.95 | step_microstep: 0.05",
    ):
        assert not pattern.search(timers), timers


def test_the_trail_keeps_the_last_lines_of_each_rank_with_their_numbers() -> None:
    rank0 = [f"[rank0]:{MEGATRON}".encode()] * (MAX_POINTS + 10)
    rank1 = [f"[rank1]:{MEGATRON}".encode()] * 3
    block = b"\n".join(rank0 + rank1) + b"\n"
    starts = [0]
    for i, byte in enumerate(block[:-1]):
        if byte == 10:
            starts.append(i + 1)
    trail = ProgressTrail()
    trail.add_block(block, 100, starts)
    points = trail.points(lambda text, no: LineRef(file="f", line=no, text=text, rank=int(text[5])))
    assert [p.rank for p in points].count(0) == MAX_POINTS
    assert [p.line for p in points if p.rank == 1] == [
        100 + MAX_POINTS + 11,
        100 + MAX_POINTS + 12,
        100 + MAX_POINTS + 13,
    ]
    assert points[0].line == 100 + 11  # the first 10 of rank 0 fell out


def test_a_slurm_job_step_is_not_a_training_step() -> None:
    # slurmstepd's cancel line (IGNF/myria3d#123)
    line = "slurmstepd: error: *** STEP 6053.0 ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***"
    point = read_point(ref(line))
    assert point is None or point.iteration is None


def test_fairseq_overflow_is_a_skip_with_its_new_scale() -> None:
    # fairseq/trainer.py's note, as a GPT-2 run printed it (facebookresearch/fairseq#515)
    line = (
        "2023-01-18 06:21:13 | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring gradient,"
        " setting loss scale to: 64.0"
    )
    point = read_point(ref(line))
    assert point is not None and (point.loss_scale, point.skipped) == (64.0, True)


def _real_lines() -> list[str]:
    """The real log lines at hand (tests/support/real_logs.py) that hold a word the value patterns start from."""
    return [line.lower() for line in real_log_lines() if any(w in line.lower() for w in ("loss", "norm", "scale"))]


@pytest.mark.parametrize(
    ("pattern", "word", "reach"), [(_LOSS, "loss", 9), (_GRAD_NORM, "norm", 9), (_SCALE, "scale", 15)]
)
def test_a_search_started_near_the_word_finds_what_a_whole_line_search_finds(pattern, word: str, reach: int) -> None:
    lines = [line for line in _real_lines() if word in line]
    assert len(lines) > 50
    for line in lines:
        near, whole = _near(pattern, line, word, reach), pattern.search(line)
        assert (near and near.span()) == (whole and whole.span()), line
    # a reach too short misses the prefixed forms: the check above can tell
    assert _near(_LOSS, "training_loss: 1.5", "loss", 8) is None and _LOSS.search("training_loss: 1.5")

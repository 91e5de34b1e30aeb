"""Loss trends judged over progress lines: a terminal spike, an fp16 scale collapse, and what healthy runs print."""

from __future__ import annotations

from pathlib import Path

from triage_lines import triage_lines

from crashcart.agent.trends import trend_events
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import FailureClass, Role
from crashcart.parsers.metrics import read_point
from crashcart.parsers.models import FileScan, MetricPoint

# The format of Megatron-LM's training_log (epfLLM/Megatron-LLM#11 shows it verbatim); numbers vary per line.
MEGATRON = (
    " iteration {it:>8}/  250000 | consumed samples:       186368 | elapsed time per iteration (ms): 126995.3 |"
    " learning rate: 1.365E-05 | global batch size:  1024 | lm loss: {loss:E} | loss scale: 1.0 |"
    " grad norm: {grad:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |"
)
# ymcui/Chinese-LLaMA-Alpaca#534: DeepSpeed halving the scale down to 2, then "already at minimum"
SCALER = "[INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
SCALER_183 = SCALER.replace("181", "183")
COLLAPSE = [
    "[2023-06-07 22:16:00,018] " + SCALER + "64, reducing to 32",
    "[2023-06-07 22:18:11,762] " + SCALER + "32, reducing to 16",
    "{'loss': 2.0491, 'learning_rate': 0.0001961913563176343, 'epoch': 0.28}",
    "[2023-06-07 22:20:23,340] " + SCALER + "16, reducing to 8",
    "[2023-06-07 22:22:34,914] " + SCALER + "8, reducing to 4",
    "[2023-06-07 22:24:46,260] " + SCALER + "4, reducing to 2",
]
# zai-org/CogVideo#233: overflows at scales of 2^32 and down while fp16 finds its range; the run recovered
RECOVERING = [
    "[2024-09-11 17:52:18,030] " + SCALER_183 + "4294967296, reducing to 2147483648",
    "[2024-09-11 17:52:32,563] " + SCALER_183 + "2147483648, reducing to 1073741824",
    "[2024-09-11 17:52:47,082] " + SCALER_183 + "1073741824, reducing to 536870912",
    "[2024-09-11 17:53:15,865] " + SCALER_183 + "536870912, reducing to 268435456",
]
# facebookresearch/fairseq#1895: two overflows at scales far below 1, then the run stops (minimum scale reached)
FAIRSEQ_DEEP = [
    "2020-03-23 11:39:44 | INFO | train_inner | epoch 003:      5 / 356 loss=9.44, nll_loss=8.44, ppl=347.28,"
    " wps=30690.8, ups=0.07, wpb=427295, bsz=14390.4, num_updates=700, lr=0.000175, gnorm=156.036, loss_scale=0,"
    " train_wall=1281, wall=9877",
    "2020-03-23 11:41:18 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 0.00048828125",
    "2020-03-23 11:48:04 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 0.000244140625",
]
# unsloth/unsloth#5207: the grad norm explodes on one step while the loss stays where it was
GRAD_BLIP = [
    "{'loss': 1.46,  'grad_norm':    14.98}",
    "{'loss': 1.28,  'grad_norm':     9.78}",
    "{'loss': 1.60,  'grad_norm':     7.64}",
    "{'loss': 1.14,  'grad_norm':    92.10}",
    "{'loss': 1.54,  'grad_norm':    29.00}",
    "{'loss': 1.61,  'grad_norm':     5.21}",
    "{'loss': 1.36,  'grad_norm':     7.83}",
    "{'loss': 1.36,  'grad_norm':     7.79}",
    "{'loss': 1.51,  'grad_norm': 11140.00}",
]


def scan_of(lines: list[str]) -> FileScan:
    points: list[MetricPoint] = []
    for no, text in enumerate(lines, 1):
        point = read_point(LineRef(file="train.log", line=no, text=text))
        if point is not None:
            points.append(point)
    return FileScan(file="train.log", lines=len(lines), bytes=0, hits=[], templates=[], metrics=points)


def megatron(losses: list[float], grads: list[float]) -> list[str]:
    return [
        MEGATRON.format(it=182 + i, loss=loss, grad=g) for i, (loss, g) in enumerate(zip(losses, grads, strict=True))
    ]


def test_a_loss_spike_with_exploding_grad_norm_at_the_end_of_the_run_is_loss_divergence() -> None:
    lines = megatron([2.4, 2.38, 2.41, 2.36, 2.39, 2.35, 2.37, 2.34, 2.36, 2.33, 9.8, 11.2], [0.2] * 10 + [4.5, 8.0])
    [event] = trend_events([scan_of(lines)])
    assert (event.failure_class, event.rule_id, event.line) == (FailureClass.LOSS_DIVERGENCE, "trend.loss_spike", 12)
    assert "lm loss: 1.120000E+01" in event.text


def test_a_spike_the_grad_norm_does_not_share_is_not_divergence() -> None:
    lines = megatron([2.4, 2.38, 2.41, 2.36, 2.39, 2.35, 2.37, 2.34, 2.36, 2.33, 7.5], [0.2] * 11)
    assert trend_events([scan_of(lines)]) == []


def test_a_grad_norm_blip_under_a_flat_loss_is_healthy() -> None:
    assert trend_events([scan_of(GRAD_BLIP)]) == []


def test_a_spike_the_run_trained_through_is_not_terminal() -> None:
    losses = [2.4, 2.38, 2.41, 2.36, 2.39, 2.35, 2.37, 2.34, 2.36, 9.8] + [2.3] * 8
    assert trend_events([scan_of(megatron(losses, [0.2] * 9 + [6.0] + [0.2] * 8))]) == []


def test_overflow_skips_that_drive_the_scale_into_single_digits_are_a_collapse() -> None:
    [event] = trend_events([scan_of(COLLAPSE)])
    assert event.rule_id == "trend.loss_scale_collapse"
    assert event.text.endswith("Attempted loss scale: 4, reducing to 2")  # the lowest attempted scale


def test_overflows_at_large_scales_are_healthy() -> None:
    assert trend_events([scan_of(RECOVERING)]) == []


def test_two_overflows_at_a_scale_below_one_are_a_collapse() -> None:
    [event] = trend_events([scan_of(FAIRSEQ_DEEP)])
    assert (event.rule_id, event.line) == ("trend.loss_scale_collapse", 3)


def test_two_overflows_at_a_large_scale_are_healthy() -> None:
    assert trend_events([scan_of(RECOVERING[:2])]) == []


# deepspeedai/DeepSpeed#4571: ZeRO offload on one 3090; DeepSpeed's last memory report, then its launcher kills
# the workers (the SIGKILLed subprocess exited first)
DS_FULL = (
    "[2024-01-22 16:50:44,316] [INFO] [utils.py:799:see_memory_usage] CPU Virtual Memory: used = 26.4 GB,"
    " percent = 84.6%"
)
DS_KILLING = "[2024-01-22 16:50:49,553] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 1080504"
# deepspeedai/DeepSpeed#849, in knowledge/healthy/deepspeed.log: the same report on a host with room to spare
DS_ROOMY = (
    "[2021-03-10 15:27:46,895] [INFO] [utils.py:564:see_memory_usage] CPU Virtual Memory:  used = 62.62 GB,"
    " percent = 49.8%"
)


def test_a_teardown_right_after_a_nearly_full_host_memory_report_is_host_oom(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, DS_FULL, DS_KILLING)
    assert report.diagnosis.failure_class is FailureClass.HOST_OOM
    [event] = [e for e in report.events if getattr(e, "rule_id", "") == "trend.host_memory_pressure"]
    assert (event.line, event.role) == (1, Role.SYMPTOM)
    assert "from the host memory readings" in report.diagnosis.summary


def test_a_nearly_full_report_with_no_teardown_after_it_is_no_failure(tmp_path: Path) -> None:
    assert triage_lines(tmp_path, DS_FULL).diagnosis.failure_class is FailureClass.UNKNOWN


def test_a_teardown_after_a_roomy_report_is_not_blamed_on_memory(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, DS_ROOMY, DS_KILLING)
    assert not [e for e in report.events if getattr(e, "rule_id", "") == "trend.host_memory_pressure"]


# bigscience-workshop/Megatron-DeepSpeed#396: the grad norm is nan on every iteration to the end of the log
GRAD_NAN = (
    " iteration {it:>8}/  250000 | consumed samples:        43408 | consumed tokens:     88899584 | elapsed time per"
    " iteration (ms): 4247.9 | learning rate: 2.999E-04 | global batch size:     8 | loss scale: 1.0 | grad norm: nan |"
    " actual seqlen:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 |"
)


def test_numbers_that_stay_nan_to_the_end_are_divergence_from_the_first_of_them() -> None:
    lines = megatron([2.4, 2.38, 2.41], [0.2] * 3) + [GRAD_NAN.format(it=5426 + i) for i in range(4)]
    [event] = trend_events([scan_of(lines)])
    assert (event.rule_id, event.line) == ("trend.loss_nonfinite", 4)


def test_a_nan_the_run_trained_past_is_no_divergence() -> None:
    lines = [GRAD_NAN.format(it=5426)] + megatron([2.4, 2.38, 2.41], [0.2] * 3)
    assert trend_events([scan_of(lines)]) == []


# NVIDIA/Megatron-LM:megatron/training/training.py, training_log: a loss is printed only `if avg > 0.0`, so an interval
# whose average is NaN prints the MEGATRON line without its `lm loss` field (the source's format)
LOSS_LEFT_OUT = MEGATRON.replace(" lm loss: {loss:E} |", "")


def test_megatron_lines_that_stop_printing_the_loss_to_the_end_are_divergence() -> None:
    lines = megatron([2.4, 2.38, 2.41], [0.2] * 3) + [LOSS_LEFT_OUT.format(it=185 + i, grad=0.2) for i in range(3)]
    [event] = trend_events([scan_of(lines)])
    assert (event.rule_id, event.line, event.failure_class) == ("trend.loss_vanished", 4, FailureClass.LOSS_DIVERGENCE)


def test_one_megatron_line_without_a_loss_or_a_run_that_never_printed_one_is_no_divergence() -> None:
    one = megatron([2.4, 2.38, 2.41], [0.2] * 3) + [LOSS_LEFT_OUT.format(it=185, grad=0.2)]
    never = [LOSS_LEFT_OUT.format(it=182 + i, grad=0.2) for i in range(4)]
    again = megatron([2.4], [0.2]) + [LOSS_LEFT_OUT.format(it=183 + i, grad=0.2) for i in range(2)]
    again += megatron([2.3], [0.2])
    assert trend_events([scan_of(one)]) == trend_events([scan_of(never)]) == trend_events([scan_of(again)]) == []


def test_megatron_intervals_whose_steps_were_all_skipped_print_no_loss_and_are_no_nan() -> None:
    # the same training_log format: an interval of fp16 overflow skips has no loss to average, and counts its skips
    skipped = LOSS_LEFT_OUT.replace("skipped iterations:   0", "skipped iterations:  10")
    skipped = skipped.replace("loss scale: 1.0", "loss scale: 65536.0")  # fp16 still finding its range
    lines = megatron([2.4, 2.38, 2.41], [0.2] * 3) + [skipped.format(it=185 + i, grad=0.2) for i in range(3)]
    assert trend_events([scan_of(lines)]) == []


# deepspeedai/DeepSpeed#4890: ProcessGroupWrapper's per-collective log (TORCH_DISTRIBUTED_DEBUG=DETAIL) after an MLP
# was replaced by a DeepSpeed MoE layer; the tensor options after OpType are cut here, the numbers are as seen
FINGERPRINT = (
    "[I ProcessGroupWrapper.cpp:562] [Rank {rank}] Running collective: CollectiveFingerPrint(SequenceNumber={seq},"
    " OpType=ALLREDUCE, TensorShape=[], TensorDtypes=Float"
)


def test_ranks_whose_last_collectives_are_far_apart_ran_different_code(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, FINGERPRINT.format(rank=0, seq=1277), FINGERPRINT.format(rank=1, seq=1275))
    assert report.diagnosis.failure_class is FailureClass.CODE_BUG
    assert {e.rule_id for e in report.diagnosis.evidence} == {"trend.collective_desync"}


def test_ranks_one_collective_apart_are_only_waiting_for_each_other(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, FINGERPRINT.format(rank=0, seq=1276), FINGERPRINT.format(rank=1, seq=1275))
    assert not [e for e in report.events if getattr(e, "rule_id", "") == "trend.collective_desync"]

"""parsers/_linekeys.c: the templater's cache key, one native pass that collapses what varies inside a line."""

from __future__ import annotations

import random

import pytest
from real_logs import real_log_paths

from crashcart.parsers._linekeys import keys, tally
from crashcart.parsers.attribution import rank_prefix
from crashcart.parsers.templater import TemplateCounts, Templater

# knowledge/healthy/generated_per_node.log (the generator's NCCL init line) and deepspeed.log (DeepSpeed's log_dist
# line as deepspeedai/DeepSpeed#2920 shows it)
NCCL_COMM = b"[default0]:node00:45433:45597 [0] NCCL INFO comm 0x55d454330 rank 0 nranks 4 cudaDev 0 busId 1b000"
DS_SCHEDULER = (
    b"[2023-03-03 02:20:30,033] [INFO] [logging.py:68:log_dist] [Rank 0] DeepSpeed LR Scheduler = "
    b"<megatron.learning_rates.AnnealingLR object at 0x7fdea6b68d50>"
)


@pytest.mark.parametrize(
    ("line", "key"),
    [
        # Megatron's iteration lines (epfLLM/Megatron-LLM#11 and NVIDIA/Megatron-LM's older form, both in
        # knowledge/healthy/megatron.log): every number one zero, the padding kept
        (
            b" iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration (ms):"
            b" 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 | loss scale:"
            b" 1.0 | grad norm: 0.231 | number of skipped iterations:   0 | number of nan iterations:   0 |",
            b" iteration      0/  0 | consumed samples:       0 | elapsed time per iteration (ms): 0.0 |"
            b" learning rate: 0.0-0 | global batch size:  0 | lm loss: 0.0+0 | loss scale: 0.0 |"
            b" grad norm: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |",
        ),
        (
            b" iteration        1/ 2753818 | consumed samples:            8 | elapsed time per iteration (ms): 5801.1 |"
            b" learning rate: 1.000E-07 | global batch size:     8 | loss scale: 16384.0 | number of skipped"
            b" iterations:   1 | number of nan iterations:   0 |",
            b" iteration        0/ 0 | consumed samples:            0 | elapsed time per iteration (ms): 0.0 |"
            b" learning rate: 0.0-0 | global batch size:     0 | loss scale: 0.0 | number of skipped"
            b" iterations:   0 | number of nan iterations:   0 |",
        ),
        # "node00": "de00" is one hex run with digits
        (NCCL_COMM, b"[default0]:no0:0:0 [0] NCCL INFO comm 0x0 rank 0 nranks 0 cudaDev 0 busId 0"),
        (
            DS_SCHEDULER,
            b"[0-0-0 0:0:0,0] [INFO] [logging.py:0:log_dist] [Rank 0] DeepSpeed LR Scheduler = "
            b"<megatron.learning_rates.AnnealingLR object at 0x0>",
        ),
        (b"uuid 550e8400-e29b-41d4-a716-446655440000", b"uuid 0-0-0-0-0"),
        (b"Added deface bad", b"Added deface bad"),  # hex letters without a digit are words
        # a dashed id's letters-only group goes with its neighbours; words joined by a dash stay
        (  # Loghub's OpenStack_2k.log: "bdcc" follows a collapsed group
            b"[instance: d96a117b-0193-4549-bdcc-63b917273d1d] Attempting claim: memory 2048 MB, disk 20 GB",
            b"[instance: 0-0-0-0-0] Attempting claim: memory 0 MB, disk 0 GB",
        ),
        (b"dfcc-1234-abcd", b"0-0-0"),  # a bare id token, not a log line: a letters-only group ahead of digits
        (b"bead-cafe-babe face-book", b"bead-cafe-babe face-book"),
        (b"\xe2\x9c\x93 done 12\xff", b"\xe2\x9c\x93 done 0\xff"),  # other bytes pass through untouched
        (b"", b""),
    ],
)
def test_runs_of_hex_that_hold_a_digit_become_one_zero(line: bytes, key: bytes) -> None:
    assert keys(line) == key


def test_lines_stay_one_for_one_and_carriage_returns_go() -> None:
    block = b"step 1\r\nstep 22\r\n\r\nstep 333\n"
    assert keys(block) == b"step 0\nstep 0\n\nstep 0\n"
    assert keys(bytearray(block)) == keys(memoryview(block)) == keys(block)


def test_a_non_buffer_is_refused() -> None:
    with pytest.raises(TypeError):
        keys("text")  # type: ignore[arg-type]


def test_numbers_of_any_length_share_one_drain_call() -> None:
    """The key the templater caches on: lines that differ only in their numbers' lengths cost Drain3 once."""
    templater, counts = Templater(), TemplateCounts()
    calls = []
    add = templater._drain.add_log_message
    templater._drain.add_log_message = lambda text: calls.append(text) or add(text)  # type: ignore[method-assign]
    block = b"".join(b"iteration %d loss %d.%d\n" % (10**n, 3**n, 7**n) for n in range(12))
    templater.count_block(block, 0, counts, ranked=False)
    assert len(calls) == 1 and sum(entry[0] for entry in counts.stats.values()) == 12


# Launcher prefixes (torchrun, DeepSpeed's [defaultN], OpenMPI --tag-output, horovodrun, srun --label) and lines
# whose leading numbers or brackets are no launcher's (a clock, a dated bracket, a dmesg stamp, a progress bar)
PREFIXED = [
    b"[rank6]: Traceback (most recent call last):",  # MCZhi/GameFormer#17 (dev case r-ma-data-npz-unpickling-046)
    # pytorch/pytorch#113128 (shared dev set, d-gpu-ecc-001)
    b"[default0]:frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) +"
    b" 0x118 (0x153667ba6f08 in /users/lgen/miniconda3/envs/4m/lib/python3.10/site-packages/torch/lib/libc10_cuda.so)",
    b"[1,290]<stderr>:!!!! kernel execution error.",  # deepspeedai/DeepSpeed#294 (shared dev set, d-cuda-kernel-002)
    b"[1]<stdout>:Iter #0: 120.0 img/sec per GPU",  # horovod/horovod#2484
    b"2: adev10",  # srun --label in Slurm's quick start guide (knowledge/healthy/slurm.log)
    b"21:44:47.081 - Not a JPEG file: starts with 0x89 0x50",  # tensorflow/tensorflow#9786 (r-data-tf-png-as-jpeg-035)
    # scitix/sichek#44 (dev case n-net-ib-retry12-podlog-009)
    b"[2026-01-04 21:33:04] test-ys-512-scaling-test-0104-1504-a7de2925-master-0:617:2799 [3]"
    b" transport/net_ib.cc:2360 NCCL WARN NET/IB: Got completion from peer 172.16.234.184<53393> with"
    b" status=12 opcode=1 len=5222 vendor err 129 (Send) localGid ::ffff:100.123.200.87"
    b" remoteGids::ffff:100.123.200.74 hca mlx5_26",
    # wilicc/gpu-burn#1 (dev case r-gpu-xid79-009)
    b"[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",
    # deepspeedai/DeepSpeed#294 (shared dev set, d-cuda-kernel-002)
    "Iteration:  31%|███▏      | 491/1559 [04:35<07:28,  2.38it/s][1,290]<stderr>:!!!! kernel execution"
    " error.".encode(),
]


@pytest.mark.parametrize("line", PREFIXED)
def test_a_tally_key_keeps_the_launcher_prefix_its_rank_is_read_from(line: bytes) -> None:
    """Same key, same rank: the verbatim part of a key holds all of what rank_prefix reads."""
    ((key, prefix, *_),) = tally(line, True, 2000)[1]
    assert (rank_prefix(key[:prefix]) if prefix else None) == rank_prefix(line)


def test_a_tally_counts_each_key_once_with_its_first_and_last_line() -> None:
    # pytorch/pytorch#113128's watchdog line shape, two ranks, then a blank and a CRLF line
    block = (
        b"[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] Watchdog\n"
        b"[rank13]:[E817 17:40:34.227531919 ProcessGroupNCCL.cpp:1515] Watchdog\n"
        b"\n"
        b"[rank12]:[E817 17:40:35.1 ProcessGroupNCCL.cpp:1515] Watchdog\r\n"
    )
    lines, rows = tally(block, True, 2000)
    assert lines == 4 and [(r[0], r[2], r[3], r[6]) for r in rows] == [
        (b"[rank12]:[0 0:0:0.0 ProcessGroupNCCL.cpp:0] Watchdog", 2, 0, 3),  # "E817" is hex too
        (b"[rank13]:[0 0:0:0.0 ProcessGroupNCCL.cpp:0] Watchdog", 1, 1, 1),
    ]
    (_, _, _, _, start, end, _, last_start, last_end) = rows[0]
    assert block[start:end].startswith(b"[rank12]:") and block[last_start:last_end].endswith(b"Watchdog\r")
    assert tally(block, False, 2000)[1][0][2] == 3  # not ranked: the prefixes collapse like the rest


def test_a_tally_keys_only_the_head_of_a_huge_line() -> None:
    lines, rows = tally(b"x" * 5000 + b"1\n" + b"x" * 5000 + b"2\n", False, 100)
    assert lines == 2 and len(rows) == 1 and rows[0][2] == 2


def reference_keys(block: bytes) -> bytes:
    """What keys() computes, written out one byte at a time: the definition the native pass is held to."""
    hexlike, out, i, n = set(b"0123456789abcdefABCDEF"), bytearray(), 0, len(block)

    def run_end(j: int) -> int:
        while j < n and block[j] in hexlike:
            j += 1
        return j

    while i < n:
        c = block[i]
        if c == 0x0D:
            i += 1
        elif c not in hexlike:
            out.append(c)
            i += 1
        else:
            end = run_end(i)
            run = block[i:end]
            digit = any(48 <= b <= 57 for b in run)
            after_collapsed = out[-2:] == b"0-"
            before_digits = (
                end < n and block[end] == 0x2D and any(48 <= b <= 57 for b in block[end + 1 : run_end(end + 1)])
            )
            out += b"0" if digit or (len(run) >= 4 and (after_collapsed or before_digits)) else run
            i = end
    return bytes(out)


def test_the_native_pass_keys_every_real_log_as_the_reference_does() -> None:
    blocks = [path.read_bytes() for path in real_log_paths()]
    assert sum(map(len, blocks)) > 5_000_000
    for block in blocks:
        assert keys(block) == reference_keys(block)
        assert keys(block.replace(b"\n", b"\r\n")) == reference_keys(block)  # and as a CRLF file


def test_the_native_pass_agrees_on_random_text_built_from_the_bytes_that_matter() -> None:
    pieces = [
        b"0",
        b"7",
        b"12",
        b"a",
        b"f",
        b"F",
        b"dead",
        b"cafe",
        b"beef1",
        b"g",
        b"x",
        b"-",
        b"--",
        b" ",
        b"\r",
        b"\n",
        b"_",
        b"0x",
        b"\xff",
        b"\xe9",
    ]
    rng = random.Random(11)
    for _ in range(30_000):
        text = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 24)))
        assert keys(text) == reference_keys(text), text

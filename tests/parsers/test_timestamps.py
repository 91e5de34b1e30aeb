"""Timestamps: raw lines side by side with the wall-clock time they carry, or None."""

from __future__ import annotations

from datetime import datetime

import pytest

from crashcart.parsers.timestamps import LEARN_BLOCKS, YearTracker, parse_timestamp

Y = 2024  # the year given for formats that leave it out

CASES = [
    # ISO 8601, with or without T, fraction and zone (zones are converted to UTC)
    ("2024-01-01T12:00:00.123Z training started", datetime(2024, 1, 1, 12, 0, 0, 123000)),
    ("2024-01-01 12:00:00,141 INFO training started", datetime(2024, 1, 1, 12, 0, 0, 141000)),
    ("2024-01-01T12:00:00+02:00 node17 kernel: x", datetime(2024, 1, 1, 10, 0, 0)),
    ("2024-01-01T00:30:00-0130 x", datetime(2024, 1, 1, 2, 0, 0)),
    ("2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory.", datetime(2024, 11, 20, 14, 37, 16)),
    ("2024-11-20 14:37:16 DEBUG:filelock:Attempting to acquire lock", datetime(2024, 11, 20, 14, 37, 16)),
    ("2024/03/05 06:07:08 go-style", datetime(2024, 3, 5, 6, 7, 8)),
    # Megatron / DeepSpeed brackets
    ("[2024-01-01 12:00:00] iteration 10/100", datetime(2024, 1, 1, 12, 0, 0)),
    (
        "[2023-08-07 18:35:18,432] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW!",
        datetime(2023, 8, 7, 18, 35, 18, 432000),
    ),
    (
        "[2024-04-11 16:02:33,141 train.py:52 INFO pre_tiny_65536] Construct dataset.",
        datetime(2024, 4, 11, 16, 2, 33, 141000),
    ),
    (
        "node17: [2024-01-01 12:00:00,123] [INFO] [launch.py:138:main] WORLD INFO DICT",
        datetime(2024, 1, 1, 12, 0, 0, 123000),
    ),
    # glog / c10, also behind torchrun prefixes; c10 leaves the month unpadded
    ("E1128 07:35:07.606841 12345 socket.cpp:123] connection reset", datetime(Y, 11, 28, 7, 35, 7, 606841)),
    ("I0807 18:35:18.123456 140123 file.py:12] hello", datetime(Y, 8, 7, 18, 35, 18, 123456)),
    (
        "[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective",
        datetime(Y, 12, 6, 18, 44, 12, 715298),
    ),
    (
        "[rank7]:[E419 10:42:28.858931807 ProcessGroupNCCL.cpp:616] [Rank 7] Watchdog caught collective",
        datetime(Y, 4, 19, 10, 42, 28, 858931),
    ),
    (
        "[default0]:[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 12]",
        datetime(Y, 8, 17, 17, 40, 34, 227531),
    ),
    # syslog, dmesg -T
    ("Nov 28 07:35:07 node17 kernel: NVRM: Xid (PCI:0000:3b:00): 79", datetime(Y, 11, 28, 7, 35, 7)),
    ("Nov  8 07:35:07 node17 kernel: NVRM: Xid", datetime(Y, 11, 8, 7, 35, 7)),
    ("[Tue Nov 28 07:35:07 2023] NVRM: Xid (PCI:0000:3b:00): 79", datetime(2023, 11, 28, 7, 35, 7)),
    # two-digit year, month/day, submitit, Hugging Face examples
    (
        "22-09-01 02:31:11.512 : <epoch:  0, iter:     400, lr:4.000e-04> G_loss: 7.544e-02",
        datetime(2022, 9, 1, 2, 31, 11, 512000),
    ),
    ("[02/25 05:00:27] ppdet.engine INFO: Epoch: [78] [110/578] learning_rate: 0.074239", datetime(Y, 2, 25, 5, 0, 27)),
    (
        "submitit WARNING (2022-08-12 02:06:11,453) - Caught signal SIGUSR2 on SERVER_NAME: this job is preempted.",
        datetime(2022, 8, 12, 2, 6, 11, 453000),
    ),
    ("08/07/2023 18:35:18 - INFO - __main__ - Training/evaluation parameters", datetime(2023, 8, 7, 18, 35, 18)),
    # negatives: uptime, time without date, garbage, invalid fields, prose
    ("[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234", None),
    ("[    5.123456] pci 0000:00:01.0: reg 0x10", None),
    ("[rank0]:[E ProcessGroupNCCL.cpp:754] [Rank 0] Watchdog caught collective operation timeout", None),
    ("12:00:00 INFO starting", None),
    ("Iteration:  31%|███▏      | 490/1559 [04:34<07:11,  2.48it/s][1,0]<stdout>:bing_bert_progress", None),
    ("2024-13-01 12:00:00 month thirteen", None),
    ("2024-02-30 12:00:00 no such day", None),
    ("2024-01-01 25:00:00 no such hour", None),
    ("[13/45 05:00:27] not a date", None),
    ("E1328 07:35:07.606841 bad month", None),
    ("Foo 28 07:35:07 node17 kernel: not a month", None),
    ("epoch: 3451 loss: nan", None),
    ("Traceback (most recent call last):", None),
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", None),
    ("", None),
    ("\x00\xff:::::[[[[", None),
    ("x" * 10000 + " 2024-01-01 12:00:00", None),  # only the head of the line is looked at
]


@pytest.mark.parametrize(("line", "expected"), CASES)
def test_parse_timestamp(line: str, expected: datetime | None) -> None:
    assert parse_timestamp(line, year=Y) == expected


def test_results_are_naive() -> None:
    stamp = parse_timestamp("2024-01-01T12:00:00.123Z x")
    assert stamp is not None and stamp.tzinfo is None


def test_missing_year_defaults_to_this_year() -> None:
    stamp = parse_timestamp("Nov 28 07:35:07 node17 kernel: x")
    assert stamp is not None and stamp.year == datetime.now().year


def test_feb_29_in_a_common_year_is_none() -> None:
    assert parse_timestamp("Feb 29 07:35:07 node17 kernel: x", year=2023) is None
    assert parse_timestamp("Feb 29 07:35:07 node17 kernel: x", year=2024) == datetime(2024, 2, 29, 7, 35, 7)


# Year-less stamps take the year of the file's dated lines. Each line as its thread shows it.
# slurmd's own log (NVIDIA/nccl#447)
SLURMD = "[2020-12-30T05:11:27.540] error: Domain socket directory /var/spool/slurmd: No such file or directory"
RAYLET = (  # glog, November (ray-project/ray#3326)
    "I1114 19:31:57.705936 2071556096 node_manager.cc:398] time since last heartbeat for client "
    "ca11a9f7b120b17fa9985448a5e0f6f6146173c6 97ms handler last fired 0"
)
ELASTIC = (  # glog, February (dhcode-cpp/X-R1#23)
    "E0217 16:43:29.165000 355419 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
    "local_rank: 1 (pid: 355716) of binary: /usr/bin/python3.11"
)
UPTIME = "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0"  # dmesg, seconds since boot (NVIDIA/NVSentinel#155)
# snakemake's ctime stamp after Slurm's OOM report (snakemake/snakemake-executor-plugin-slurm#371)
SNAKEMAKE = (
    b"slurmstepd: error: Detected 2 oom_kill events in StepId=JOBID.13. Some of the step tasks have been OOM Killed.\n"
    b"srun: error: NODE: task 0: Out Of Memory\n"
    b"[Wed Nov 12 11:41:01 2025]\n"
)


def test_a_year_less_stamp_takes_the_year_of_the_files_first_dated_line() -> None:
    years = YearTracker()
    assert years.parse(UPTIME) is None and years.year is None  # uptime is no wall clock and teaches nothing
    assert years.parse(SLURMD) == datetime(2020, 12, 30, 5, 11, 27, 540000)
    assert years.parse(RAYLET) == datetime(2020, 11, 14, 19, 31, 57, 705936)
    assert years.year == 2020


def test_a_month_that_falls_back_past_half_a_year_is_the_next_year() -> None:
    years = YearTracker(fallback=2020)
    assert years.parse(RAYLET) == datetime(2020, 11, 14, 19, 31, 57, 705936)
    assert years.parse(ELASTIC) == datetime(2021, 2, 17, 16, 43, 29, 165000)  # November, then February


def test_without_a_dated_line_the_fallback_year_then_this_year() -> None:
    assert YearTracker(fallback=2023).parse(ELASTIC) == datetime(2023, 2, 17, 16, 43, 29, 165000)
    stamp = YearTracker().parse(ELASTIC)
    assert stamp is not None and stamp.year == datetime.now().year


def test_learn_reads_the_year_off_a_block_before_any_line_is_stamped() -> None:
    years = YearTracker()
    years.learn(SNAKEMAKE)
    assert years.year == 2025
    assert years.parse(ELASTIC) == datetime(2025, 2, 17, 16, 43, 29, 165000)


def test_learn_takes_a_date_inside_a_message_and_the_first_year_stays() -> None:
    # slurmstepd's cancel banner (chrisknewman/tusas#149), then a later dated line of another year
    years = YearTracker()
    years.learn(b"slurmstepd: error: *** STEP 440575.0 ON nid001277 CANCELLED AT 2023-12-05T07:16:01 ***\n")
    years.learn(SNAKEMAKE)
    assert years.parse(SLURMD) == datetime(2020, 12, 30, 5, 11, 27, 540000)  # a dated line keeps its own year
    assert years.year == 2023


def test_learn_gives_up_after_a_few_blocks_without_a_year() -> None:
    years = YearTracker(fallback=2019)
    for _ in range(LEARN_BLOCKS):
        years.learn(RAYLET.encode() + b"\n")
    years.learn(SNAKEMAKE)  # not looked at: the year, where a file has one, comes early
    assert years.year is None
    assert years.parse(ELASTIC) == datetime(2019, 2, 17, 16, 43, 29, 165000)

"""Timestamps: raw lines side by side with the wall-clock time they carry, or None."""

from __future__ import annotations

from datetime import datetime

import pytest

from crashcart.parsers.timestamps import LEARN_BLOCKS, LEARN_BYTES, YearTracker, parse_timestamp

Y = 2024  # the year given for formats that leave it out

# Each line as its thread or file shows it, with the time it carries.
CASES = [
    # ISO 8601, with or without T, fraction and zone (zones are converted to UTC)
    # NVIDIA/nccl#1920 (dev case r-net-sockreset-004)
    (
        "2025-11-24T03:20:21.001125857Z [2025-11-24 11:20:21] gpu-server320 [5] misc/socket.cc:46"
        " NCCL WARN socketProgressOpt: Call to send to 10.44.137.149<52905> failed : Connection"
        " reset by peer",
        datetime(2025, 11, 24, 3, 20, 21, 1125),
    ),
    # ray-project/ray#29412 (dev case n-node-ray-raylet-terminated-002)
    (
        "2022-10-17 14:23:59,720 WARNING worker.py:1839 -- Raylet is terminated: ip=172.29.58.176,"
        " id=c28cee44b5cd67e730b3a9f729ca772f9bfd3f4b936ae1999d38cf36. Termination is unexpected."
        " Possible reasons include: (1) SIGKILL by the user or system",
        datetime(2022, 10, 17, 14, 23, 59, 720000),
    ),
    # systemd/systemd#29134
    (
        "2023-09-08T17:20:30+0200 tarta r710_fan_controller.sh[20911]: Highest drive temperature: 43 Celcius.",
        datetime(2023, 9, 8, 15, 20, 30),
    ),
    # QwenLM/Qwen3-Coder#174 (shared dev set, d-gpuoom-001)
    (
        "2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate"
        " 132.00 MiB. GPU 3 has a total capacity of 79.10 GiB of which 98.00 MiB is free. Process"
        " 387746 has 78.89 GiB memory in use. Of the allocated memory 70.12 GiB is allocated by"
        " PyTorch, and 765.81 MiB is reserved by PyTorch but unallocated. If reserved but"
        " unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
        " to avoid fragmentation.  See documentation for Memory Management "
        " (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        datetime(2024, 11, 20, 14, 37, 16),
    ),
    # QwenLM/Qwen3-Coder#174 (shared dev set, d-gpuoom-001)
    (
        "2024-11-20 14:37:16 DEBUG:filelock:Attempting to acquire lock 140341412642880 on"
        " /root/.triton/autotune/Fp16Matmul_2d_kernel.pickle.lock",
        datetime(2024, 11, 20, 14, 37, 16),
    ),
    # k3s-io/k3s#988
    (
        "2019/10/30 11:16:23 Starting FS watcher.",
        datetime(2019, 10, 30, 11, 16, 23),
    ),
    # Megatron / DeepSpeed / logging brackets
    # scitix/sichek#44 (dev case n-net-ib-retry12-podlog-009)
    (
        "[2026-01-04 21:33:04] test-ys-512-scaling-test-0104-1504-a7de2925-master-0:617:2799 [3]"
        " transport/net_ib.cc:2360 NCCL WARN NET/IB: Got completion from peer 172.16.234.184<53393>"
        " with status=12 opcode=1 len=5222 vendor err 129 (Send) localGid ::ffff:100.123.200.87"
        " remoteGids::ffff:100.123.200.74 hca mlx5_26",
        datetime(2026, 1, 4, 21, 33, 4),
    ),
    # knowledge/healthy/deepspeed.log
    (
        "[2023-04-28 06:51:29,903] [INFO] [loss_scaler.py:188:update_scale] [deepspeed] OVERFLOW!"
        " Rank 0 Skipping step. Attempted loss scale: 65536, but hysteresis is 2. Reducing"
        " hysteresis to 1",
        datetime(2023, 4, 28, 6, 51, 29, 903000),
    ),
    # TongkunGuan/CCD#13 (shared dev set, d-config-path-001)
    (
        "[2024-04-11 16:02:33,141 train.py:52 INFO pre_tiny_65536] Construct dataset.",
        datetime(2024, 4, 11, 16, 2, 33, 141000),
    ),
    # glog / c10, also behind torchrun prefixes; c10 leaves the month unpadded
    # knowledge/healthy/torchrun.log
    (
        "I0807 20:59:57.533000 139762139563840 torch/distributed/launcher/api.py:189] Starting"
        " elastic_operator with launch configs:",
        datetime(Y, 8, 7, 20, 59, 57, 533000),
    ),
    # open-edge-platform/geti_v2#1501
    (
        "I1117 10:38:08.220571       1 main.go:199] Starting FS watcher.",
        datetime(Y, 11, 17, 10, 38, 8, 220571),
    ),
    # hiyouga/LlamaFactory#6269 (shared dev set, d-timeout-002)
    (
        "[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught"
        " collective operation timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE,"
        " NumelIn=544997376, NumelOut=68124672, Timeout(ms)=600000) ran for 600061 milliseconds"
        " before timing out.",
        datetime(Y, 12, 6, 18, 44, 12, 715298),
    ),
    # knowledge/healthy/torchrun.log
    (
        "[rank0]:[W1111 11:55:57.148815586 Utils.hpp:112] Warning: Environment variable"
        " NCCL_ASYNC_ERROR_HANDLING is deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING instead"
        " (function operator())",
        datetime(Y, 11, 11, 11, 55, 57, 148815),
    ),
    # verl-project/verl#1158 (shared dev set, d-timeout-alltoall-003)
    (
        "[rank7]:[E419 10:42:28.858931807 ProcessGroupNCCL.cpp:616] [Rank 7] Watchdog caught"
        " collective operation timeout: WorkNCCL(SeqNum=4486, OpType=ALLTOALL, NumelIn=46684160,"
        " NumelOut=46684160, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.",
        datetime(Y, 4, 19, 10, 42, 28, 858931),
    ),
    # pytorch/pytorch#113128 (shared dev set, d-gpu-ecc-001)
    (
        "[default0]:[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg)"
        " Rank 12] Process group watchdog thread terminated with exception: CUDA error:"
        " uncorrectable ECC error encountered",
        datetime(Y, 8, 17, 17, 40, 34, 227531),
    ),
    # syslog, dmesg -T
    # leptonai/gpud#1209
    (
        "Feb 14 05:03:41 000-000-00000-1-gpu-1 kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link INIT",
        datetime(Y, 2, 14, 5, 3, 41),
    ),
    # Open-CAS/ocf#408 (dev case n-node-hard-lockup-chi412-025)
    (
        "Oct 11 05:39:13 chi412 kernel: NMI watchdog: Watchdog detected hard LOCKUP on cpu 79",
        datetime(Y, 10, 11, 5, 39, 13),
    ),
    # a space-padded day (NVIDIA/gpu-operator#1146)
    (
        "Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>',"
        " name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at"
        " physAddr 0x7fffa8860 partition 7, subpartition 1.",
        datetime(Y, 12, 2, 11, 38, 47),
    ),
    # knowledge/healthy/kernel.log
    (
        "[Tue Apr 21 16:02:26 2020] mce: Using 22 MCE banks",
        datetime(2020, 4, 21, 16, 2, 26),
    ),
    # two-digit year, month/day, submitit, Hugging Face examples
    # JingyunLiang/VRT#47 (shared dev set, d-cancel-sighup-001)
    (
        "22-09-01 02:31:11.512 : <epoch:  0, iter:     400, lr:4.000e-04> G_loss: 7.544e-02 ",
        datetime(2022, 9, 1, 2, 31, 11, 512000),
    ),
    # PaddlePaddle/PaddleDetection#7831 (shared dev set, d-storage-io-003)
    (
        "[02/25 05:00:27] ppdet.engine INFO: Epoch: [78] [110/578] learning_rate: 0.074239 loss_vfl:"
        " 0.706303 loss_bbox: 0.331251 loss_dfl: 0.353399 loss: 1.375721 eta: 1 day, 10:56:23"
        " batch_cost: 0.5464 data_cost: 0.0004 ips: 51.2463 images/s",
        datetime(Y, 2, 25, 5, 0, 27),
    ),
    # facebookincubator/submitit#1708 (shared dev set, d-cancel-requeue-002)
    (
        "submitit WARNING (2022-08-12 02:06:11,453) - Caught signal SIGUSR2 on SERVER_NAME: this job is preempted.",
        datetime(2022, 8, 12, 2, 6, 11, 453000),
    ),
    # knowledge/healthy/hf_trainer.log
    (
        "12/04/2019 05:56:10 - INFO - transformers.tokenization_utils -   loading file"
        " https://s3.amazonaws.com/models.huggingface.co/bert/bert-large-uncased-vocab.txt from"
        " cache at"
        " /root/.cache/torch/transformers/9b3c03a36e83b13d5ba95ac965c9f9074a99e14340c523ab405703179e7"
        "9fc46.542ce4285a40d23a559526243235df47c5f75c197f04f37d1a0c124c32c9a084",
        datetime(2019, 12, 4, 5, 56, 10),
    ),
    # negatives: uptime, time without date, prose
    # wilicc/gpu-burn#1 (dev case r-gpu-xid79-009)
    (
        "[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",
        None,
    ),
    # knowledge/healthy/kernel.log
    (
        "[    3.821837] pci 0000:00:06.0: [10de:17fd] type 00 class 0x030200",
        None,
    ),
    # NVIDIA/Megatron-LM#735 (shared dev set, d-timeout-001)
    (
        "[rank0]:[E ProcessGroupNCCL.cpp:754] [Rank 0] Watchdog caught collective operation timeout:"
        " WorkNCCL(SeqNum=305, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for"
        " 600528 milliseconds before timing out.",
        None,
    ),
    # tensorflow/tensorflow#9786 (dev case r-data-tf-png-as-jpeg-035)
    (
        "21:44:47.081 - Not a JPEG file: starts with 0x89 0x50",
        None,
    ),
    # deepspeedai/DeepSpeed#294 (shared dev set, d-cuda-kernel-002)
    (
        "Iteration:  31%|███▏      | 490/1559 [04:34<07:11, "
        " 2.48it/s][1,0]<stdout>:bing_bert_progress: step=3599, loss=1.77734375,"
        " lr=0.003918867386312817, sample_count=235864064, step_time=0.3878452777862549",
        None,
    ),
    # vpetren/gradnorm_tf#17 (shared dev set, d-loss-nan-002)
    (
        "epoch: 3451 loss: nan",
        None,
    ),
    # TongkunGuan/CCD#13 (shared dev set, d-config-path-001)
    (
        "Traceback (most recent call last):",
        None,
    ),
    # jade-hpc-gpu/jade-hpc-gpu.github.io#194 (shared dev set, d-gpu-ecc-003)
    (
        "RuntimeError: CUDA error: uncorrectable ECC error encountered",
        None,
    ),
]
# Format probes: stamps of forms no real line at hand shows (a +hh:mm or -hhmm zone, pdsh's host prefix),
# fields no clock can carry, and garbage. Bare stamps, not log lines.
PROBES = [
    ("2024-01-01T12:00:00+02:00", datetime(2024, 1, 1, 10, 0, 0)),
    ("2024-01-01T00:30:00-0130", datetime(2024, 1, 1, 2, 0, 0)),
    ("node17: [2024-01-01 12:00:00,123]", datetime(2024, 1, 1, 12, 0, 0, 123000)),
    ("12:00:00", None),
    ("2024-13-01 12:00:00", None),
    ("2024-02-30 12:00:00", None),
    ("2024-01-01 25:00:00", None),
    ("[13/45 05:00:27]", None),
    ("E1328 07:35:07.606841", None),
    ("Foo 28 07:35:07", None),
    ("", None),
    ("\x00\xff:::::[[[[", None),
    ("x" * 10000 + " 2024-01-01 12:00:00", None),  # only the head of the line is looked at
]


@pytest.mark.parametrize(("line", "expected"), CASES + PROBES)
def test_parse_timestamp(line: str, expected: datetime | None) -> None:
    assert parse_timestamp(line, year=Y) == expected


def test_results_are_naive() -> None:
    stamp = parse_timestamp(CASES[0][0])  # a Z-zoned line (NVIDIA/nccl#1920)
    assert stamp is not None and stamp.tzinfo is None


def test_missing_year_defaults_to_this_year() -> None:
    # a syslog line (leptonai/gpud#1209)
    stamp = parse_timestamp(
        "Feb 14 05:03:41 000-000-00000-1-gpu-1 kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link INIT"
    )
    assert stamp is not None and stamp.year == datetime.now().year


def test_feb_29_in_a_common_year_is_none() -> None:
    # a bare stamp: no real syslog line of a 29 February is at hand
    assert parse_timestamp("Feb 29 07:35:07", year=2023) is None
    assert parse_timestamp("Feb 29 07:35:07", year=2024) == datetime(2024, 2, 29, 7, 35, 7)


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
    line = RAYLET.encode() + b"\n"
    block = line * (LEARN_BYTES // len(line) + 1)
    for _ in range(LEARN_BLOCKS):
        years.learn(block)
    years.learn(SNAKEMAKE)  # not looked at: the year, where a file has one, comes early
    assert years.year is None

    assert years.parse(ELASTIC) == datetime(2019, 2, 17, 16, 43, 29, 165000)


def test_learn_looks_at_the_same_text_however_the_file_is_cut_into_blocks() -> None:
    years = YearTracker()
    for _ in range(LEARN_BLOCKS * 10):  # many small blocks are still the head of the file
        years.learn(RAYLET.encode() + b"\n")
    years.learn(SNAKEMAKE)
    assert years.year == 2025

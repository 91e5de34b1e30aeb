"""Node/rank attribution: raw file names and lines side by side with what must be read off them."""

from __future__ import annotations

import pytest

from crashcart.parsers.attribution import (
    RANK_PREFIX,
    Attribution,
    attribute_line,
    attribution_from_path,
    has_rank_prefixes,
    rank_prefix,
    strip_prefixes,
)

NONE = Attribution(None, None)

PATHS = [
    # the kind of log written before the host
    ("kernel-node07.log", Attribution("node07", None)),
    ("logs/dmesg_gpu017.txt", Attribution("gpu017", None)),
    ("kernel.log", Attribution(None, None)),
    ("r34n00.log", Attribution("r34n00", None)),
    ("c12n3.out", Attribution("c12n3", None)),
    ("sm80.log", Attribution(None, None)),
    ("logs/node-12.log", Attribution("node-12", None)),
    ("node17.out", Attribution("node17", None)),
    ("job/gpu-node-003/stdout.log", Attribution("gpu-node-003", None)),
    ("rank_3.out", Attribution(None, 3)),
    ("rank3.log", Attribution(None, 3)),
    ("train_rank-12.err", Attribution(None, 12)),
    ("worker-5.log", Attribution("worker-5", None)),  # a pod/host of its own, which may run many ranks
    ("pytorchjob-worker-2.log", Attribution("pytorchjob-worker-2", None)),
    ("slurm-1234.out", NONE),
    ("slurm-1234-3.out", Attribution(None, 3)),
    ("slurm-1234_3.out", Attribution(None, 3)),
    ("host-a100-07.log", Attribution("host-a100-07", None)),
    ("10.0.0.12.log", Attribution("10.0.0.12", None)),
    ("dgx-a100-017.log", Attribution("dgx-a100-017", None)),
    ("gpu017.log", Attribution("gpu017", None)),
    ("ip-10-0-0-1.log.gz", Attribution("ip-10-0-0-1", None)),
    ("node17.cluster.local.log", Attribution("node17", None)),
    ("job/node17/rank_3.out", Attribution("node17", 3)),
    ("logs/node17/slurm-99_4.out", Attribution("node17", 4)),
    ("C:\\runs\\node17\\stdout.log", Attribution("node17", None)),
    # generic names, and names that end in digits without being hosts
    ("train.log", NONE),
    ("stdout.txt", NONE),
    ("logs/run-2024/train.log", NONE),
    ("/tmp/exp-003/output.log", NONE),
    ("out/2024-01-01/train.log", NONE),
    ("resnet50.log", NONE),
    ("llama-2-70b.log", NONE),
    ("my-run-003.log", NONE),
    ("gpu0.log", NONE),  # per-device log more likely than a host
    ("local_rank3.log", NONE),  # a local rank is not the global one
    ("torchelastic/run_1/attempt_0/3/stdout.log", NONE),
    ("", NONE),
    # issue 10's audit: only stems that look like hosts become nodes
    ("output.txt", NONE),
    ("stderr-12345.log", NONE),
    ("log_rank3.txt", Attribution(None, 3)),
    ("slurm-4242.out", NONE),
    ("node07.log", Attribution("node07")),
    ("gpu-a100-012.out", Attribution("gpu-a100-012")),
    ("worker-3.log", Attribution("worker-3")),
    ("dgx-h100-17_kernel.log", Attribution("dgx-h100-17")),  # the kind of log after the host
    ("x1000c0s1b0n0.log", Attribution("x1000c0s1b0n0")),  # HPE Cray EX: cabinet, chassis, slot, board, node
    ("log.txt", NONE),
    ("error.log", NONE),
    ("issue.md", NONE),
    ("case-0001.log", NONE),
    ("r-gpu-xid-003.log", NONE),  # a one-letter first word: a case's name, not a host
    ("nid001277.log", Attribution("nid001277")),
    ("node07-rank3.log", Attribution("node07", 3)),  # host and rank in one stem: the rank is not the host's
    ("gpu-node-12_rank_5.log", Attribution("gpu-node-12", 5)),
    ("dgx-a100-03-local_rank1.log", Attribution("dgx-a100-03")),
    # a host word joined to the rest by `_` or `.`: `${SLURM_JOB_ID}.$(hostname).out`, `..._node-${NODE_RANK}_...`
    ("job.4242.node017.out", Attribution("node017")),
    ("training_log_node-3_rank-27.txt", Attribution("node-3", 27)),
    ("train_host12.log", Attribution("host12")),
    ("train_gpu0.log", NONE),  # a device, as above
    ("run_a100-07.log", NONE),  # dashed and mixed names count only as the whole name
    ("eval_step100.log", NONE),
]


@pytest.mark.parametrize(("path", "expected"), PATHS)
def test_attribution_from_path(path: str, expected: Attribution) -> None:
    assert attribution_from_path(path) == expected


LINES = [
    # torchrun under srun (one task per node): the label is the node's index, not a rank
    ("3: [default5]:NET/IB : Got completion from peer 10.64.0.4<41455> with status=12", None, None, 5),
    ("3: [default5]:[rank29]: torch.OutOfMemoryError: CUDA out of memory.", None, 29, 5),
    # torchrun prefixes; the stacked local `[defaultN]` gives way to the global `[rankN]`
    ("[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered", None, 3),
    ("[rank4]: OSError: [Errno 28] No space left on device", None, 4),
    ("[default3]:Traceback (most recent call last):", None, None, 3),  # a local rank alone is no global rank
    (
        "[default0]:[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) "
        "Rank 12] Process group watchdog thread terminated with exception",
        None,
        12,
        0,
    ),
    ("[default1]:[E817 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 9] watchdog", None, 9, 1),
    (
        "[rank1]:[E410 01:50:33.889423318 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) "
        "Rank 1] Process group watchdog thread terminated with exception",
        None,
        1,
    ),
    # `[Rank N]` inside PyTorch messages, with no launcher prefix
    ("[E ProcessGroupNCCL.cpp:754] [Rank 5] Watchdog caught collective operation timeout", None, 5),
    ("[PG ID 2 PG GUID 9 Rank 7] Exception (either an error or timeout) detected by watchdog", None, 7),
    ("[rank: 2] Seed set to 42", None, 2),
    # srun --label
    ("3: torch.OutOfMemoryError: CUDA out of memory.", None, 3),
    (" 7: Traceback (most recent call last):", None, 7),
    # OpenMPI --tag-output, also behind a progress bar that lost its \r
    ("[1,290]<stderr>:!!!! kernel execution error.", None, 290),
    ("Iteration:  31%|███▏      | 491/1559 [04:35<07:28,  2.38it/s][1,290]<stderr>:!!!! kernel e", None, 290),
    ("2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory.", None, 3),
    # NCCL: host before :pid:tid; the [N] is the local GPU index, never the rank
    ("node17:1234:5678 [3] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "node17", None),
    ("hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer", "hostname-test", None),
    ("TENCENT64:47611:53081 [7] include/alloc.h:103 NCCL WARN Cuda failure 2 'out of memory'", "TENCENT64", None),
    ("9aee1c01f3e7:6727:7168 [1] NCCL INFO [Service thread] Connection closed by localRank 2", "9aee1c01f3e7", None),
    (
        "dirkg-zeppelin:4005:4041 [0] init.cc:521 NCCL WARN Duplicate GPU detected : rank 0 and rank 1",
        "dirkg-zeppelin",
        None,
    ),
    ("[rank5]:gpu-a100-07:2211:2290 [5] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB", "gpu-a100-07", 5),
    # kernel / syslog host fields
    (
        "Nov 28 07:35:07 node17 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
        "node17",
        None,
    ),
    ("Nov  8 07:35:07 node17 kernel: [12345.678901] NVRM: Xid (PCI:0000:3b:00): 48", "node17", None),
    ("2024-01-01T12:00:00.123+00:00 node17 kernel: NVRM: Xid (PCI:0000:dc:00): 45", "node17", None),
    ("Jan 02 03:04:05 dgx-a100-017 sshd[2211]: Received disconnect", "dgx-a100-017", None),
    # Slurm
    ("srun: error: node17: task 3: Exited with exit code 1", "node17", 3),
    ("srun: error: DEL2212S020: task 0: Terminated", "DEL2212S020", 0),
    ("srun: error: SERVER_NAME: tasks 2-3: Exited with exit code 1", "SERVER_NAME", None),
    ("srun: error: Node failure on node42", "node42", None),
    (
        "slurmstepd: error: *** JOB 608 ON node17 CANCELLED AT 2022-08-12T02:06:12 DUE TO JOB REQUEUE ***",
        "node17",
        None,
    ),
    (
        "Preparing test set...:  46%|████▋     | 31/67 [29:02<35:12, 58.67s/it]slurmstepd: error: *** STEP "
        "6053.0 ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***",
        "DEL2212S020",
        None,
    ),
    # pdsh / DeepSpeed multi-node runner
    ("node17: [rank3]: RuntimeError: NCCL communicator was aborted", "node17", 3),
    ("worker-3: [2024-01-01 12:00:00,123] [INFO] [launch.py:138:main] WORLD INFO DICT", "worker-3", None),
    ("10.0.0.12: Traceback (most recent call last):", "10.0.0.12", None),
    # negatives: timestamps, log levels, tracebacks, config keys, kernel lines without a host
    ("12:00:00 [3] starting epoch", None, None),
    ("2024-01-01 12:00:00,141 INFO: training started", None, None),
    ("2024-01-01T12:00:00 INFO root: training started", None, None),
    ("E1128 07:35:07.606841 12345 socket.cpp:123] connection reset", None, None),
    ("INFO: Started server process", None, None),
    ("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2704351 closing signal SIGHUP", None, None),
    ("Traceback (most recent call last):", None, None),
    ('  File "train.py", line 577, in <module>', None, None),
    ("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:957, invalid usage, NCCL version 21.0.3", None, None),
    ("fp16: True", None, None),
    ("top1: 0.9312", None, None),
    ("step100: loss=2.31", None, None),
    ("Fp16Matmul: autotuned", None, None),
    ("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001", None, None),
    ("[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234", None, None),
    ("Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 40", None, None),
    ("[2023-08-07 18:35:18,432] [INFO] [loss_scaler.py:183:update_scale] OVERFLOW! Rank 0 Skipping step", None, None),
    ("epoch: 3451 loss: nan", None, None),
    ("", None, None),
]


@pytest.mark.parametrize("row", LINES)
def test_attribute_line(row: tuple[str, str | None, int | None] | tuple[str, str | None, int | None, int]) -> None:
    line, *expected = row
    assert attribute_line(line) == Attribution(*expected)


# NCCL's `host:pid:tid [dev] ` prefix (src/debug.cc) names its printer; [dev] is the local CUDA device, so the
# rank comes only from a launcher around it. Each line as its thread or README shows it.
NCCL_LINES = [
    # Open MPI --tag-output: job 1, rank 10, on device 2 (nccl-tests on EKS, an MPIJob README's expected output)
    (
        "[1,10]<stdout>:test-nccl-efa-worker-1:23:69 [2] NCCL INFO Connected NVLS tree",
        Attribution("test-nccl-efa-worker-1", 10),
    ),
    # MPICH/Intel MPI -prepend-rank: rank 2 on device 1 of node0; NCCL's own `2[1]` says the same (NVIDIA/nccl#1232)
    (
        "[2] node0:13572:13572 [1] NCCL INFO Channel 00 : 2[1] -> 0[0] via SHM/direct/direct",
        Attribution("node0", 2),
    ),
    # a bare [N] with no host behind it is NCCL's device, not a rank (NVIDIA/nccl#1612)
    ("[0] misc/socket.cc:71 NCCL WARN socketProgress: Connection closed by remote peer 10.10.1.3<36138>", NONE),
    # rank 7 on device 1: the [1] is never the rank (huggingface/accelerate#2246)
    (
        "qgpu2017:4305:4329 [1] NCCL INFO comm 0x52589c20 rank 7 nranks 8 cudaDev 1 nvmlDev 1 busId 4b000 "
        "commId 0x26b3ece72ee71028 - Init START",
        Attribution("qgpu2017", None),
    ),
    # behind a bracketed timestamp (scitix/sichek#44) and kubectl's --timestamps (vllm-project/vllm#9193)
    (
        "[2026-01-04 21:33:04] test-ys-512-scaling-test-0104-1504-a7de2925-master-0:617:2799 [3] "
        "transport/net_ib.cc:2360 NCCL WARN NET/IB: Got completion from peer 172.16.234.184<53393> with status=12 "
        "opcode=1 len=5222 vendor err 129 (Send) localGid ::ffff:100.123.200.87 remoteGids::ffff:100.123.200.74 "
        "hca mlx5_26",
        Attribution("test-ys-512-scaling-test-0104-1504-a7de2925-master-0", None),
    ),
    (
        "2024-10-23T19:30:56.633819710Z lax-ai-vllm-model-78d9c658c8-qlw8z:273:273 [3] NCCL INFO Bootstrap : "
        "Using eth0:10.130.6.121<0>",
        Attribution("lax-ai-vllm-model-78d9c658c8-qlw8z", None),
    ),
    # torchrun's local [default0] over the process that is global rank 12: neither 0 is a rank
    # (pytorch/pytorch#113128, the lines after its watchdog error)
    ("[default0]:Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", Attribution(None, None, 0)),
    # Ray's worker prefix names the worker's node by ip, nested or not; the head node's has none (ray-project/ray#40850,
    # foundation-model-stack/fastsafetensors#36, ray-project/ray#16979, skypilot-org/skypilot#825)
    (
        "(RayTrainWorker pid=162057, ip=192.168.0.70) master:162057:169037 [0] NCCL INFO misc/utils.cc:235 memory "
        "stack hunk malloc(65536)",
        Attribution("192.168.0.70", None),
    ),
    (
        "(EngineCore_DP0 pid=1088) (RayWorkerWrapper pid=285, ip=192.168.177.12) spark2:285:285 [0] NCCL INFO comm "
        "0x1095e9d0 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0",
        Attribution("192.168.177.12", None),
    ),
    (
        "(pid=21065) dev-duanjiangfei-ap0:21065:21065 [1] NCCL INFO Bootstrap : Using [0]eth0:10.148.18.24<0>",
        Attribution("dev-duanjiangfei-ap0", None),
    ),
    ("(node-1 pid=23066, ip=172.31.23.131) Local Rank: 0, Epoch: 0, Training ...", Attribution("172.31.23.131")),
    # `localhost` tells no node of a job from another (ray-project/ray#40850)
    ("(RayTrainWorker pid=83498) localhost:83498:84555 [0] NCCL INFO Channel 00/04 :    0   1   2   3   4", NONE),
]


@pytest.mark.parametrize(("line", "expected"), NCCL_LINES)
def test_nccl_prefix_names_the_printer_and_never_a_rank(line: str, expected: Attribution) -> None:
    assert attribute_line(line) == expected


MORE_LINES = [
    # horovodrun (gloo_run.py) tags lines with the global rank: `[0]<stderr>:` (horovod/horovod#2652, #2484)
    (
        "[0]<stderr>:[2021-02-08 09:24:59.555830: E /tmp/pip-install-7tlcippf/horovod_015e4deaf97a4b33908ab119077a4f9c"
        "/horovod/common/operations.cc:548] Horovod background loop uncaught exception: [/tmp/pip-install-7tlcippf/"
        "horovod_015e4deaf97a4b33908ab119077a4f9c/third_party/compatible_gloo/gloo/transport/tcp/pair.cc:566] Read "
        "error [10.0.1.246]:63386: Connection reset by peer",
        Attribution(None, 0),
    ),
    (
        "[1]<stdout>:[2020-12-07 17:25:00.517483: D /mnt/share/chongxiaoc/git/horovod/horovod/common/operations.cc:321]"
        " [1]: ExecuteOperation Failed",
        Attribution(None, 1),
    ),
    # journald's host field with a host that ends in a word (leptonai/gpud#1209)
    (
        "Feb 14 05:03:41 000-000-00000-1-gpu-1 kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link INIT",
        Attribution("000-000-00000-1-gpu-1"),
    ),
    # srun's task reports: a range is no single rank (chrisknewman/tusas#149, hafs-community/HAFS#101)
    ("srun: error: nid001277: tasks 1-3: Out Of Memory", Attribution("nid001277")),
    ("srun: error: Orion-18-69: task 289: Bus error", Attribution("Orion-18-69", 289)),
    # NCCL's prefix without pid and tid, behind a container runtime's and NCCL's own timestamps (NVIDIA/nccl#1920)
    (
        "2025-11-24T03:20:21.001125857Z [2025-11-24 11:20:21] gpu-server320 [5] misc/socket.cc:46 NCCL WARN "
        "socketProgressOpt: Call to send to 10.44.137.149<52905> failed : Connection reset by peer",
        Attribution("gpu-server320"),
    ),
    ("2025-11-24T03:20:21.001128133Z gpu-server320 [5] NCCL INFO misc/socket.cc:64 -> 6", Attribution("gpu-server320")),
    # UCX's [host:pid:thread:tid] prefix (openucx/ucx#6000)
    (
        "[compute001:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 "
        "vend 0x81 hw_synd 0/0)",
        Attribution("compute001"),
    ),
]


@pytest.mark.parametrize(("line", "expected"), MORE_LINES)
def test_more_launchers(line: str, expected: Attribution) -> None:
    assert attribute_line(line) == expected


PREFIXES = [
    (b"[rank3]: Traceback (most recent call last):", 3),
    (b"[rank12]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 12] Watchdog", 12),
    (b'[default3]:  File "train.py", line 1', None),  # torchrun's local rank: no global rank
    (b"3: [default5]:[rank29]: torch.OutOfMemoryError: CUDA out of memory.", 29),
    (b"3: [default5]:NET/IB : Got completion from peer 10.64.0.4<41455> with status=12", None),
    (b"[default0]:[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515]", 12),
    (b"[1,290]<stderr>:!!!! kernel execution error.", 290),
    (b"[1,0]<stdout>:bing_bert_progress: step=3599", 0),
    (b"[1]<stdout>:Iter #0: 120.0 img/sec per GPU", 1),  # horovodrun's global rank (horovod/horovod#2484)
    (b"3: torch.OutOfMemoryError: CUDA out of memory.", 3),
    (b"  12: loss 2.3", 12),
    (b"12:00:00 INFO starting", None),
    (b"2024-01-01 12:00:00,141 INFO", None),
    (b"node17:1234:5678 [3] NCCL INFO Bootstrap", None),
    (b"Iteration:  31%|| 491/1559 [04:35<07:28,  2.38it/s][1,290]<stderr>:x", None),
    (b"[Rank 5] Watchdog caught collective operation timeout", None),
    (b"[2024-01-01 12:00:00] INFO", None),
    (b"[12345.678901] NVRM: Xid", None),
    (b"", None),
]


@pytest.mark.parametrize(("line", "rank"), PREFIXES)
def test_rank_prefix(line: bytes, rank: int | None) -> None:
    assert rank_prefix(line) == rank


def test_rank_prefix_is_one_bytes_pattern() -> None:
    assert isinstance(RANK_PREFIX.pattern, bytes)


SAMPLES = [
    ([b"*****", b"Setting OMP_NUM_THREADS", b"[rank0]: hello", b"[rank1]: hello"], True),
    ([b"[default0]:starting"], True),
    ([b"[1,0]<stdout>:hello"], True),
    ([b"0: hello", b"1: hello"], True),
    ([b"0: hello", b"epoch 1"], False),  # one bare `N: ` may be chance
    ([b"Traceback (most recent call last):", b'  File "x.py", line 1'], False),
    ([], False),
]


@pytest.mark.parametrize(("sample", "expected"), SAMPLES)
def test_has_rank_prefixes(sample: list[bytes], expected: bool) -> None:
    assert has_rank_prefixes(sample) is expected


STRIPS = [
    ("[rank4]: OSError: [Errno 28] No space left on device", "OSError: [Errno 28] No space left on device"),
    ('[rank4]:   File "x.py", line 89, in f', '  File "x.py", line 89, in f'),
    (
        "[default0]:[rank12]:[E817 17:40:34.2 ProcessGroupNCCL.cpp:1515] x",
        "[E817 17:40:34.2 ProcessGroupNCCL.cpp:1515] x",
    ),
    ("[1,290]<stderr>:!!!! kernel execution error.", "!!!! kernel execution error."),
    ("3: Traceback (most recent call last):", "Traceback (most recent call last):"),
    ("node17: [rank3]: RuntimeError: boom", "RuntimeError: boom"),
    ("RuntimeError: boom", "RuntimeError: boom"),
    ("12:00:00 INFO x", "12:00:00 INFO x"),
    ("fp16: True", "fp16: True"),
    ("node17:1234:5678 [3] NCCL INFO x", "node17:1234:5678 [3] NCCL INFO x"),
]


@pytest.mark.parametrize(("line", "expected"), STRIPS)
def test_strip_prefixes(line: str, expected: str) -> None:
    assert strip_prefixes(line) == expected


def test_attribution_is_a_cheap_tuple() -> None:
    a = Attribution("node17", 3)
    assert a == ("node17", 3, None) and a.node == "node17" and a.rank == 3 and a.local is None


BIG = "9" * 5000  # over Python's 4,300-digit int() limit


@pytest.mark.parametrize(
    ("line", "node", "rank"),
    [
        # the srun line from the table above, its task id replaced by an absurd one
        (f"srun: error: node17: task {BIG}: Exited with exit code 1", "node17", None),
        (f"srun: error: node17: task {'1' * 21}: Exited with exit code 1", "node17", None),
        (f"[rank{BIG}]: RuntimeError: NCCL communicator was aborted", None, None),
    ],
)
def test_absurd_numbers_in_a_line_are_no_rank(line: str, node: str | None, rank: int | None) -> None:
    assert attribute_line(line) == Attribution(node, rank)


def test_an_absurd_number_in_a_file_name_is_no_rank() -> None:
    assert attribution_from_path(f"logs/slurm-1234-{'9' * 250}.out") == NONE

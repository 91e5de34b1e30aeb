"""parsers/masking.py: the variable parts of a log line replaced by placeholders before templating."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap

import pytest
from real_logs import real_log_lines

from crashcart.parsers.masking import mask

# Real lines as training jobs print them, each copied verbatim from the thread named above it (the dev cases' own
# files say where they were mined), side by side with what Drain3 gets to see.
REAL_LINES = [
    # NVIDIA/nccl#1814 (shared dev set, d-net-ib-001)
    (
        "hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer"
        " 172.36.143.59<44206> with status=12 opcode=129 len=65536 vendor err 129 (Recv) localGid"
        " ::ffff:29.87.88.182 remoteGids::ffff:29.87.4.221",
        "<HOST> [<NUM>] ib_plugin.c:<NUM> NCCL WARN NET/IB : Got completion from peer <IP> with"
        " status=<NUM> opcode=<NUM> len=<NUM> vendor err <NUM> (Recv) localGid ::ffff:<IP>"
        " remoteGids::ffff:<IP>",
    ),
    # NVIDIA/nccl#733 (dev case n-net-ib-err12-k8s-rdma-029)
    (
        "task-646--1-mhpnk:91:123 [0] transport/net_ib.cc:881 NCCL WARN NET/IB : Got completion from"
        " peer 172.17.127.143<49577> with error 12, opcode 1, len 0, vendor err 129",
        "<HOST> [<NUM>] transport/net_ib.cc:<NUM> NCCL WARN NET/IB : Got completion from peer <IP> with"
        " error <NUM>, opcode <NUM>, len <NUM>, vendor err <NUM>",
    ),
    # knowledge/healthy/nccl.log
    (
        "machine-2:41626:45224 [6] NCCL INFO Channel 01 : 14[b1000] -> 6[b1000] [receive] via NET/IB/0/GDRDMA",
        "<HOST> [<NUM>] NCCL INFO Channel <NUM> : <NUM>[b1000] -> <NUM>[b1000] [receive] via NET/IB/<NUM>/GDRDMA",
    ),
    # epfLLM/Megatron-LLM#11 (knowledge/healthy/megatron.log)
    (
        " iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration"
        " (ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 |"
        " loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 | number of nan"
        " iterations:   0 |",
        " iteration      <NUM>/  <NUM> | consumed samples:       <NUM> | elapsed time per iteration"
        " (ms): <NUM> | learning rate: <NUM> | global batch size:  <NUM> | lm loss: <NUM> | loss scale:"
        " <NUM> | grad norm: <NUM> | number of skipped iterations:   <NUM> | number of nan iterations:  "
        " <NUM> |",
    ),
    # NVIDIA/Megatron-LM#735 (shared dev set, d-timeout-001)
    (
        "[rank2]:[E ProcessGroupNCCL.cpp:754] [Rank 2] Watchdog caught collective operation timeout:"
        " WorkNCCL(SeqNum=305, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for"
        " 600381 milliseconds before timing out.",
        "[rank <RANK>]:[E ProcessGroupNCCL.cpp:<NUM>] [Rank <RANK>] Watchdog caught collective operation"
        " timeout: WorkNCCL(SeqNum=<NUM>, OpType=ALLREDUCE, NumelIn=<NUM>, NumelOut=<NUM>,"
        " Timeout(ms)=<NUM>) ran for <NUM> milliseconds before timing out.",
    ),
    # deepseek-ai/DeepSeek-MoE#47 (shared dev set, d-cuda-ulf-001)
    (
        "frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) +"
        " 0x118 (0x7ef4bb404918 in"
        " /home/amd00/anaconda3/envs/DeepSeek-MoE/lib/python3.10/site-packages/torch/lib/libc10_cuda.so)",
        "frame #<NUM>: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int,"
        " bool) + <HEX> (<HEX> in <PATH>)",
    ),
    # wilicc/gpu-burn#1 (dev case r-gpu-xid79-009)
    (
        "[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",
        "[<NUM>] NVRM: Xid (PCI:<NUM>:<NUM>:<NUM>): <NUM>, GPU has fallen off the bus.",
    ),
    # forums.developer.nvidia.com xid-62-xid-154 thread (dev case r-gpu-gsp-012)
    (
        "Mar 27 17:40:36 kernel: NVRM: Xid (PCI:0000:01:00): 45, pid=12542, name=VLLM::Worker, channel 0x00000002",
        "Mar <NUM> <NUM>:<NUM>:<NUM> kernel: NVRM: Xid (PCI:<NUM>:<NUM>:<NUM>): <NUM>, pid=<NUM>,"
        " name=VLLM::Worker, channel <HEX>",
    ),
    # xuyuzhuang11/OneBit#6
    (
        "[2024-06-26 04:16:12,291] [INFO] [logging.py:96:log_dist] [Rank 0] Saving model checkpoint:"
        " /ssd/name/code/OneBit/scripts/ckpt_Llama-2-7b-hf/checkpoint-5000/global_step5000/zero_pp_rank_0"
        "_mp_rank_00_model_states.pt",
        "[<NUM>-<NUM>-<NUM> <NUM>:<NUM>:<NUM>] [INFO] [logging.py:<NUM>:log_dist] [Rank <RANK>] Saving"
        " model checkpoint: <PATH>",
    ),
    # ROCm/rocm-blogs blogs/artificial-intelligence/megablocks/README.md
    (
        "successfully saved checkpoint at iteration    2000 to"
        " /megablocks/third_party/Stanford-Megatron-LM/checkpoints",
        "successfully saved checkpoint at iteration    <NUM> to <PATH>",
    ),
    # QwenLM/Qwen3-Coder#174 (shared dev set, d-gpuoom-001)
    (
        "2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate"
        " 132.00 MiB. GPU 3 has a total capacity of 79.10 GiB of which 98.00 MiB is free. Process 387746"
        " has 78.89 GiB memory in use. Of the allocated memory 70.12 GiB is allocated by PyTorch, and"
        " 765.81 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large"
        " try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See"
        " documentation for Memory Management "
        " (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        "<NUM>-<NUM>-<NUM> <NUM>:<NUM>:<NUM> [rank <RANK>]: torch.OutOfMemoryError: CUDA out of memory."
        " Tried to allocate <NUM> MiB. GPU <NUM> has a total capacity of <NUM> GiB of which <NUM> MiB is"
        " free. Process <NUM> has <NUM> GiB memory in use. Of the allocated memory <NUM> GiB is"
        " allocated by PyTorch, and <NUM> MiB is reserved by PyTorch but unallocated. If reserved but"
        " unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to"
        " avoid fragmentation.  See documentation for Memory Management "
        " (https:/<PATH>#environment-variables)",
    ),
    # deepspeedai/DeepSpeedExamples#592 (dev case r-cuda-illegal-013)
    (
        "  what():  CUDA error: an illegal memory access was encountered",
        "  what():  CUDA error: an illegal memory access was encountered",
    ),
    # pytorch/pytorch#107021 (dev case r-mb-net-c10d-rendezvous-timeout-torchrun-040)
    (
        "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to 192.0.0.1:1234",
        "[E socket.cpp:<NUM>] [c10d] The client socket has timed out after <NUM> while trying to connect to <IP>",
    ),
]


@pytest.mark.parametrize(("raw", "masked"), REAL_LINES, ids=[f"line{i}" for i in range(len(REAL_LINES))])
def test_real_log_lines(raw: str, masked: str) -> None:
    assert mask(raw) == masked


@pytest.mark.parametrize(
    ("raw", "masked"),
    [
        # IP addresses, with NCCL's <port> or a :port
        ("connect to 10.0.0.12:29500 failed", "connect to <IP> failed"),
        ("peer 192.168.1.1<45678> closed", "peer <IP> closed"),
        ("peer 192.168.1.1", "peer <IP>"),
        # hex: 0x-prefixed, or 8+ hex digits with at least one digit and one letter
        ("ptr 0xDEADbeef at 7f3a2b4c1d22", "ptr <HEX> at <HEX>"),
        ("commit 3f2a9c81e0 built", "commit <HEX> built"),
        ("deadbeef cafe1234", "deadbeef <HEX>"),
        ("12345678 abc", "<NUM> abc"),
        # paths: two components or more, Unix or Windows
        ("open /a/b failed", "open <PATH> failed"),
        ("open /a failed", "open /a failed"),
        ("C:\\Users\\me\\log.txt missing", "<PATH> missing"),
        ("saved to /ckpt/step_100/ ok", "saved to <PATH> ok"),
        # host names
        ("node-12 gpu-node-017 worker_3 nid001234", "<HOST> <HOST> <HOST> <HOST>"),
        ("compute-12-3 dgx-a100-042 ip-10-0-0-1 hostname12 cn0042", "<HOST> <HOST> <HOST> <HOST> <HOST>"),
        ("node1x is not a host", "node1x is not a host"),
        ("computecapability mismatch", "computecapability mismatch"),
        # ranks
        ("rank 3 rank=4 rank:5 rank7", "rank <RANK> rank <RANK> rank <RANK> rank <RANK>"),
        ("local_rank=2 local_rank: 1 Rank 9", "local_rank <RANK> local_rank <RANK> Rank <RANK>"),
        ("ranks 8", "ranks <NUM>"),
        # numbers, signs, separators, exponents, units
        ("x=-3 y=+4.5 z=1,234,567 w=1e-5", "x=<NUM> y=<NUM> z=<NUM> w=<NUM>"),
        ("5% 30ms 2s 12GiB 3MB 7KB 2.5GB", "<NUM> <NUM> <NUM> <NUM> <NUM> <NUM> <NUM>"),
        ("file.py:123 line 45", "file.py:<NUM> line <NUM>"),
        ("abc123 123abc sm_80 fp16", "abc123 123abc sm_80 fp16"),
        # nothing variable
        ("", ""),
        ("Traceback (most recent call last):", "Traceback (most recent call last):"),
    ],
)
def test_each_kind_of_mask(raw: str, masked: str) -> None:
    assert mask(raw) == masked


@pytest.mark.parametrize(
    ("a", "b", "masked"),
    [
        # host names, pids, devices and addresses: two runs' NCCL bootstrap lines (knowledge/healthy/nccl.log)
        (
            "678c7278cb2d:26023:26023 [0] NCCL INFO Bootstrap : Using eth0:172.17.2.7<0>",
            "VM-0-14-tencentos:162637:162637 [6] NCCL INFO Bootstrap : Using eth0:172.17.0.14<0>",
            "<HOST> [<NUM>] NCCL INFO Bootstrap : Using eth0:<IP>",
        ),
        # addresses and install paths: the same C++ frame from deepspeedai/DeepSpeedExamples#592 (dev case
        # r-cuda-illegal-013) and nv-tlabs/3dgrut#191 (dev case r-cuda-unknown-015)
        (
            "frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x118"
            " (0x7f1b1fdafb58 in /root/miniconda3/lib/python3.8/site-packages/torch/lib/libc10_cuda.so)",
            "frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x118"
            " (0x75b35c5b3128 in /home/edwu/miniconda3/envs/3dgrut/lib/python3.11/site-packages/torch/lib"
            "/libc10_cuda.so)",
            "frame #<NUM>: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + <HEX>"
            " (<HEX> in <PATH>)",
        ),
    ],
    ids=["nccl-bootstrap", "cpp-frame"],
)
def test_lines_differing_in_values_mask_alike(a: str, b: str, masked: str) -> None:
    assert a != b
    assert mask(a) == mask(b) == masked


def test_no_catastrophic_backtracking() -> None:
    # A host-like word followed by a long run of letters used to make the HOST mask backtrack
    # exponentially (2^n steps for n letters): one such line would hang the whole scan. The check
    # runs in a child process so a regression fails on the timeout instead of hanging the suite.
    script = textwrap.dedent(
        """
        from crashcart.parsers.masking import mask
        for word in ("host" + "a" * 200, "compute_capability_mismatch_between_devices_detected_on_this_worker",
                     "node" + "ab_" * 100 + "x", "worker-" + "abc-" * 100 + "!", "0x" + "f" * 5000 + "g",
                     "/a" * 3000 + "!", "1." * 3000 + "x", "ip" + "a" * 500 + "1"):
            mask(word + " tail")
        print("done")
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert run.stdout.strip() == "done", run.stderr


# The definition the native pass implements (parsers/_masking.c): these alternatives under Python's re.sub,
# in this order, each replaced by its label. Kept here as the reference the native pass is compared with.
REFERENCE = [
    ("NCCLHOST", r"^[\w.-]+:\d+:\d+(?= \[\d+\])", "<HOST>"),  # NCCL's host:pid:tid prefix
    ("IP", r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?:<\d+>|:\d+)?(?![\w.])", "<IP>"),
    ("HEX", r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b", "<HEX>"),
    ("PATH", r"(?<![\w.])(?:[A-Za-z]:)?(?:[/\\][\w.@+~-]+){2,}[/\\]?", "<PATH>"),
    (
        "HOST",
        r"(?i:\b(?:node|gpu|host|worker|compute|dgx|nid|cn|ip)[-_]?(?:[a-z]+[-_])*[a-z]*\d+(?:[-_]\d+)*\b)",
        "<HOST>",
    ),
    ("RANK", r"(?i:(?<=\brank)[ =:]?\d+|(?<=\blocal_rank)[ =:]+\d+)", " <RANK>"),
    ("NUM", r"(?<![\w<])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?:%|ms|s|GiB|MiB|GB|MB|KB)?(?![\w>])", "<NUM>"),
]
_REFERENCE = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern, _ in REFERENCE))
_LABELS = {name: label for name, _, label in REFERENCE}


def reference_mask(text: str) -> str:
    return _REFERENCE.sub(lambda m: _LABELS[m.lastgroup or "NUM"], text)


def test_the_native_pass_masks_every_real_line_as_the_reference_does() -> None:
    lines = real_log_lines()
    assert len(lines) > 20_000
    wrong = [(line, mask(line), reference_mask(line)) for line in lines if mask(line) != reference_mask(line)]
    assert wrong == []


# Edges where the regex backtracks, looks around, or reads Unicode's word and digit classes.
EDGES = [
    "1.2.3.4:80x 1.2.3.4<0>x 1.2.3.4<0> 1.2.3.4:5 1.2.3.4567 1234.5.6.7 a1.2.3.4 .1.2.3.4 1.2.3.4.",
    "0x1f 0x1fg 0xg 0x 10x1f deadbeef12 deadbeef dead_beef12 123456789a 12345678a_ x123456789ab",
    "/a /a/b /a/b/ C:/x/y c:\\dir\\f.txt a/b/c x./a/b //a/b /a//b ~/x/y.z",
    "node12-3x node12-3 node12_3x node-abc-12 node_-12 nodes12 host_a-b-c-1-2 gpu1 ip10 cn3_ compute1.x",
    "NODE12 İp3 ıp3 hoſt7 worKer2 wor\u212aer2 node\u0663 node12\u0663",
    "rank 3 rank=4 rank:5 rank6 Rank 7 RANK:8 myrank 9 local_rank 3 local_rank=4 local_rank: 5 local_rank5 x_rank 2",
    "1.5x 1.5 -3 +4 x-3 <5 5> 5ms 5mss 5s 5GiB 5GB, 5KBx 1e5 1e5x 1E-3 2.5e+10ms 1,000,000 1.2.3 12e 12ex",
    "\u0663\u0664 ٣.٥ \u00b2 12\u00b2 \u00e912 12\u00e9 café12 a\u200b12",
    "",
    " ",
    "x" * 3 + "1" * 70 + "-1" * 70 + "x",
    "node1" + "-1" * 70 + "_2" * 3 + "x node1" + "_1" * 70 + "x",  # groups given back past many others
    "1" + ".1" * 100 + "x 1" + ".1" * 100 + "e5x",
    "rank1 1 " * 3000,  # labels seven times wider than the characters they replace: the output outgrows the input
]


@pytest.mark.parametrize("text", EDGES)
def test_the_native_pass_masks_each_edge_as_the_reference_does(text: str) -> None:
    assert mask(text) == reference_mask(text)


def test_the_native_pass_agrees_on_random_lines_built_from_the_tokens_that_matter() -> None:
    tokens = [
        "1",
        "12",
        "123",
        "1234",
        ".",
        ",",
        ":",
        "<",
        ">",
        "-",
        "_",
        "+",
        "/",
        "\\",
        " ",
        "=",
        "e",
        "E",
        "x",
        "0x",
        "ms",
        "s",
        "GiB",
        "%",
        "a",
        "f",
        "g",
        "Z",
        "node",
        "gpu",
        "ip",
        "cn",
        "rank",
        "local_rank",
        "C:",
        "~",
        "@",
        "\u0663",
        "\u00e9",
        "\u212a",
        "ſ",
        "İ",
        "deadbeef",
    ]
    rng = random.Random(7)
    for _ in range(20_000):
        text = "".join(rng.choice(tokens) for _ in range(rng.randint(1, 14)))
        assert mask(text) == reference_mask(text), text

"""parsers/masking.py: the variable parts of a log line replaced by placeholders before templating."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from crashcart.parsers.masking import mask

# Real lines as training jobs print them, side by side with what Drain3 gets to see.
REAL_LINES = [
    (
        "node17:12345:12400 [0] transport/net_ib.cc:1387 NCCL WARN NET/IB : Got completion from peer "
        "10.1.2.3<53190> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
        "<HOST> [<NUM>] transport/net_ib.cc:<NUM> NCCL WARN NET/IB : Got completion from peer <IP> with "
        "status=<NUM> opcode=<NUM> len=<NUM> vendor err <NUM> (Recv)",
    ),
    (
        "gpu-node-017:2231:2298 [3] NCCL INFO Channel 00/0 : 3[3] -> 11[3] [send] via NET/IB/0",
        "<HOST> [<NUM>] NCCL INFO Channel <NUM>/<NUM> : <NUM>[<NUM>] -> <NUM>[<NUM>] [send] via NET/IB/<NUM>",
    ),
    (
        " iteration     1200/  500000 | consumed samples:       153600 | elapsed time per iteration (ms): 1234.5 |"
        " learning rate: 2.998E-04 | global batch size:   128 | lm loss: 2.345678E+00 | loss scale: 65536.0 |"
        " grad norm: 0.456 | number of skipped iterations:   0 | number of nan iterations:   0 |",
        " iteration     <NUM>/  <NUM> | consumed samples:       <NUM> | elapsed time per iteration (ms): <NUM> |"
        " learning rate: <NUM> | global batch size:   <NUM> | lm loss: <NUM> | loss scale: <NUM> |"
        " grad norm: <NUM> | number of skipped iterations:   <NUM> | number of nan iterations:   <NUM> |",
    ),
    (
        "[E ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=18, "
        "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600034 milliseconds "
        "before timing out.",
        "[E ProcessGroupNCCL.cpp:<NUM>] [Rank <RANK>] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=<NUM>, OpType=ALLREDUCE, NumelIn=<NUM>, NumelOut=<NUM>, Timeout(ms)=<NUM>) ran for "
        "<NUM> milliseconds before timing out.",
    ),
    (
        "frame #3: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x3c2 "
        "(0x7f3a2b4c1d22 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10_cuda.so)",
        "frame #<NUM>: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + <HEX> "
        "(<HEX> in <PATH>)",
    ),
    (
        "Mar 14 03:22:17 dgx-a100-042 kernel: [123456.789012] NVRM: Xid (PCI:0000:3b:00): 79, pid=2231, "
        "name=python, GPU has fallen off the bus.",
        "Mar <NUM> <NUM>:<NUM>:<NUM> <HOST> kernel: [<NUM>] NVRM: Xid (PCI:<NUM>:3b:<NUM>): <NUM>, pid=<NUM>, "
        "name=python, GPU has fallen off the bus.",
    ),
    (
        "[2024-03-14 03:20:01,123] [INFO] [logging.py:96:log_dist] [Rank 0] Saving checkpoint to "
        "/checkpoints/llama-70b/global_step1200/mp_rank_00_model_states.pt",
        "[<NUM>-<NUM>-<NUM> <NUM>:<NUM>:<NUM>] [INFO] [logging.py:<NUM>:log_dist] [Rank <RANK>] Saving checkpoint to "
        "<PATH>",
    ),
    (
        "successfully saved checkpoint at iteration    1200 to /lustre/ckpt/run7",
        "successfully saved checkpoint at iteration    <NUM> to <PATH>",
    ),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of "
        "79.10 GiB of which 1.06 GiB is free.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate <NUM> GiB. GPU <NUM> has a total capacity of "
        "<NUM> GiB of which <NUM> GiB is free.",
    ),
    (
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ),
    (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [compute-node-12.cluster]:29500 "
        "(errno: 110 - Connection timed out).",
        "[W socket.cpp:<NUM>] [c10d] The client socket has failed to connect to [<HOST>.cluster]:<NUM> "
        "(errno: <NUM> - Connection timed out).",
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


def test_lines_differing_in_values_mask_alike() -> None:
    a = "node03:881:900 [1] NCCL WARN peer 10.0.0.1<1234> iteration 7 loss 2.5 at /data/shard_1/x.bin"
    b = "gpu-node-117:12:13 [7] NCCL WARN peer 172.16.254.9<80> iteration 70000 loss 11.25 at /data/shard_99/y.bin"
    assert mask(a) == mask(b) == "<HOST> [<NUM>] NCCL WARN peer <IP> iteration <NUM> loss <NUM> at <PATH>"


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


def _real_log_lines() -> list[str]:
    """Every distinct line of the real logs at hand: the mined corpus (both halves, only read), the shared dev
    set, the Loghub samples and the healthy corpus."""
    root = Path(__file__).resolve().parents[2]
    logs = [
        *(root / "evals" / "corpus").glob("*/cases/*.log"),
        *(root.parent / "shared" / "evalsets").glob("*/*/*"),
        *(root.parent / "shared" / "data").rglob("*.log"),
        *(root / "knowledge" / "healthy").glob("*.log"),
    ]
    lines: set[str] = set()
    for log in logs:
        if log.is_file():
            lines.update(log.read_text(encoding="utf-8", errors="replace").splitlines())
    return sorted(lines)


def test_the_native_pass_masks_every_real_line_as_the_reference_does() -> None:
    lines = _real_log_lines()
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

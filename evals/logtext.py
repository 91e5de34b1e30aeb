"""The steady-state text of a synthetic training job: iteration lines, checkpoints, benign noise.

This is the hot path of the generator (gigabytes of it), so each iteration is one `%` format of a
prebuilt multi-line template, values come from small precomputed pools instead of a random draw per
field, and rare lines (warnings, NCCL INFO, checkpoints) are scheduled per block of iterations.
The end of the job (the fault, its symptoms, the teardown) lives in evals/logends.py.
Every line template here names beside it a public log that shows a real line of that shape.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterator
from functools import lru_cache
from typing import Literal

from crashcart.evals.scenarios import Scenario
from crashcart.knowledge.records import Frozen

BLOCK = 256  # iterations rendered at a time; sporadic events are drawn per block, so output is seed-stable
SAVE_PAUSE_S = 38.0  # wall time a checkpoint save adds
GLOBAL_BATCH = 1024
CKPT_DIR = "/lustre/ckpt/gpt-175b"
PCI = ["1b:00", "43:00", "52:00", "61:00", "9d:00", "c3:00", "d1:00", "df:00"]
NIC = ["0c:00", "2a:00", "41:00", "58:00", "86:00", "a5:00", "bd:00", "e1:00"]
# Megatron's (min, max) timer block after each iteration line, as a run with the default timing level prints
# it: forward-backward and optimizer only (saforem2/personal_site docs/posts/AuroraGPT/spike-skipper/index.md,
# a Megatron-DeepSpeed run on Aurora: `    forward-backward ...............................: (8384.83, 8385.57)`)
TIMERS = [
    ("forward-backward", 0.955),
    ("optimizer", 0.0081),
]


class JobPlan(Frozen):
    """Everything a worker needs to render any file of the job (derived once from the JobSpec)."""

    hosts: list[str]
    gpus_per_node: int
    layout: Literal["per_node", "per_rank", "slurm"]
    torchrun_prefix: bool
    kernel_log: bool
    seed: int
    jobid: int
    start: float  # epoch seconds (UTC) when the job started
    train_start: float
    iter_s: float
    n_iters: int  # iterations logged before the fault (or before a healthy run ends)
    train_iters: int  # the planned run length (`iteration N/ train_iters`)
    save_interval: int
    eval_interval: int
    fault_node: int | None
    fault_local: int
    scenario: Scenario

    @property
    def world(self) -> int:
        return len(self.hosts) * self.gpus_per_node

    def iter_time(self, k: int) -> float:
        """Wall time when iteration k (1-based) is logged; every node's clock agrees."""
        return self.train_start + k * self.iter_s + ((k - 1) // self.save_interval) * SAVE_PAUSE_S


class FilePlan(Frozen):
    """One output file and the streams (rank stdout, torchrun agent, syslog, Slurm) written into it."""

    name: str
    ranks: list[int] = []
    agents: list[int] = []  # node indices
    kernels: list[int] = []  # node indices whose whole syslog is this file
    dmesg: list[int] = []  # node indices whose fault-time kernel lines are appended here (no kernel log)
    sched: bool = False


# ----------------------------------------------------------------------------------------------------
# Stream identity: prefixes, pids, addresses, time stamps.


def label(ntasks: int, task: int) -> str:
    """srun --label's prefix: the task id padded to the width of the largest one."""
    return f"{task:>{len(str(ntasks - 1))}}: "


def rank_prefix(plan: JobPlan, rank: int) -> str:
    node, local = divmod(rank, plan.gpus_per_node)
    if plan.layout == "per_rank":
        return ""
    if plan.layout == "per_node":
        return f"[default{local}]:" if plan.torchrun_prefix else ""
    if plan.torchrun_prefix:  # one srun task per node runs torchrun
        return label(len(plan.hosts), node) + f"[default{local}]:"
    return label(plan.world, rank)  # one srun task per GPU


def agent_prefix(plan: JobPlan, node: int) -> str:
    return "" if plan.layout == "per_node" else label(len(plan.hosts), node)


def is_logger(plan: JobPlan, rank: int) -> bool:
    """Each node's last local rank prints the iteration lines (Megatron's print_rank_last, per node)."""
    return rank % plan.gpus_per_node == plan.gpus_per_node - 1


def pid(plan: JobPlan, rank: int) -> int:
    node, local = divmod(rank, plan.gpus_per_node)
    return 20000 + (plan.seed * 7919 + node * 104729) % 30000 + 11 * local


def agent_pid(plan: JobPlan, node: int) -> int:
    return pid(plan, node * plan.gpus_per_node) - 173


def ip(node: int) -> str:
    return f"10.64.{node // 250}.{node % 250 + 2}"


def glog(t: float) -> str:
    """glog/c10 stamp without the level letter: `1128 07:35:07.606841`."""
    return time.strftime("%m%d %H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1e6):06d}"


def c10_stamp(t: float) -> str:
    """c10's log stamp after the level letter: month without its leading zero, nanoseconds, as PyTorch 2.4+ prints
    `[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616]` (XPixelGroup/BasicSR#737)."""
    tm = time.gmtime(t)
    return f"{tm.tm_mon}{tm.tm_mday:02d} " + time.strftime("%H:%M:%S", tm) + f".{int((t % 1) * 1e9):09d}"


def date(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def syslog_prefix(plan: JobPlan, node: int, t: float, tag: str = "kernel") -> str:
    stamp = time.strftime("%b %d %H:%M:%S", time.gmtime(t))
    if tag != "kernel":
        return f"{stamp} {plan.hosts[node]} {tag}: "
    up = t - plan.start + 86400 * 3 + 1234.5 * (node + 1)
    return f"{stamp} {plan.hosts[node]} kernel: [%5d.%06d] " % (int(up), int((up % 1) * 1e6))


def ctx(plan: JobPlan, t: float, rank: int | None = None, node: int | None = None) -> dict[str, object]:
    """Values for a scenario template printed by `rank` (or by `node`'s agent) at time t."""
    gpn = plan.gpus_per_node
    if rank is None:
        rank = (node or 0) * gpn + plan.fault_local
    node, local = divmod(rank, gpn)
    fault = plan.fault_node if plan.fault_node is not None else node
    peer = (node + 1) % len(plan.hosts)
    k = plan.n_iters + 1
    seq = k * 12 + 5
    timeout_ms = int(plan.scenario.symptom_delay_s * 1000) if plan.scenario.symptom_delay_s >= 60 else 600000
    p = pid(plan, rank)
    return {
        "rank": rank,
        "local_rank": local,
        "node": plan.hosts[node],
        "iteration": k,
        "ts": c10_stamp(t),
        "date": date(t),
        "iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)),
        "pid": p,
        "tid": p + 164,
        "agent_pid": agent_pid(plan, node),
        "world_size": plan.world,
        "jobid": plan.jobid,
        "fault_node": plan.hosts[fault],
        "first_node": plan.hosts[0],
        "peer_ip": ip(peer),
        "ip": ip(node),
        "port": 40000 + (rank * 97) % 20000,
        "pci": PCI[local % 8],
        "busid": PCI[local % 8][:2] + "000",
        "nic": NIC[local % 8],
        "hca": local,
        "seq": seq,
        "seq_prev": seq - 1,
        "numel": 101187584,
        "timeout_ms": timeout_ms,
        "elapsed_ms": timeout_ms + 7 + (rank * 37) % 90,
        "consumed": k * GLOBAL_BATCH,
        "train_iters": plan.train_iters,
        "ckpt_dir": CKPT_DIR,
        "task": node,
    }


def emit(prefix: str, lines: list[str]) -> str:
    return "".join(prefix + line + "\n" for line in lines)


# ----------------------------------------------------------------------------------------------------
# The iteration unit: Megatron's iteration line and its timers, one template per prefix.

# Megatron-LM's training_log line with --log-throughput and --log-num-zeros-in-grad, bf16 (loss scale 1.0):
#  [2024-03-30 20:02:40] iteration       10/  500000 | consumed samples:         1280 | elapsed time per iteration
#  (ms): 9496.4 | throughput per GPU (TFLOP/s/GPU): 137.5 | learning rate: 2.000E-06 | global batch size:   128 |
#  lm loss: 2.092005E-01 | loss scale: 1.0 | grad norm: 51.010 | num zeros: 0.0 | number of skipped iterations:
#  0 | number of nan iterations:   0 |   (NVIDIA/Megatron-LM#756; the 6-digit learning rate as in its later lines)
_ITER = (
    " [%s] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %s |"
    " throughput per GPU (TFLOP/s/GPU): %s | learning rate: %s | global batch size: %5d | lm loss: %s |"
    " loss scale: 1.0 | grad norm: %s | num zeros: 0.0 | number of skipped iterations:   0 |"
    " number of nan iterations:   0 |"
)


@lru_cache(maxsize=4096)
def unit_template(prefix: str) -> str:
    lines = [_ITER, "(min, max) time across ranks (ms):"]  # megatron/core/timers.py: (name + ' ').ljust(48, '.')
    lines += ["    " + (name + " ").ljust(48, ".") + ": %s" for name, _ in TIMERS]
    return emit(prefix, lines)


class Pools(Frozen):
    """Pre-formatted values, cycled with co-prime lengths so the combinations do not repeat soon."""

    ms: list[tuple[str, str]]
    grad: list[str]
    noise: list[float]
    timers: list[tuple[str, ...]]


@lru_cache(maxsize=8)
def pools(seed: int, iter_s: float) -> Pools:
    rng = random.Random(f"pools:{seed}")
    ms_vals = [iter_s * 1000 * (1 + abs(rng.gauss(0, 0.012))) for _ in range(1009)]
    timers = []
    for _ in range(2003):
        row = []
        for _name, frac in TIMERS:
            lo = iter_s * 1000 * frac * (1 + rng.gauss(0, 0.01))
            row.append(f"({lo:.2f}, {lo * (1 + abs(rng.gauss(0, 0.004))):.2f})")
        timers.append(tuple(row))
    return Pools(
        ms=[(f"{v:.1f}", f"{402.0 * iter_s * 1000 / v:.1f}") for v in ms_vals],
        grad=[f"{abs(rng.gauss(0.9, 0.15)):.3f}" for _ in range(1013)],
        noise=[rng.gauss(0, 0.035) for _ in range(1019)],
        timers=timers,
    )


def iter_values(plan: JobPlan, a: int, b: int) -> list[tuple[object, ...]]:
    """The printed values of iterations a+1..b (the same on every node: they are global)."""
    p = pools(plan.seed, plan.iter_s)
    ms, grad, noise, timers = p.ms, p.grad, p.noise, p.timers
    warm, total = 2000, max(plan.train_iters, 2001)
    out: list[tuple[object, ...]] = []
    for k in range(a + 1, b + 1):
        lr = 3e-4 * k / warm if k < warm else 3e-5 + 1.35e-4 * (1 + math.cos(math.pi * (k - warm) / (total - warm)))
        loss = 1.9 + 8.9 * (1 + k / 40.0) ** -0.45 + noise[k % 1019]
        m = ms[k % 1009]
        out.append(
            (
                date(plan.iter_time(k)),
                k,
                plan.train_iters,
                k * GLOBAL_BATCH,
                m[0],
                m[1],
                f"{lr:.6E}",
                GLOBAL_BATCH,
                f"{loss:.6E}",
                grad[k % 1013],
            )
            + timers[k % 2003]
        )
    return out


# ----------------------------------------------------------------------------------------------------
# Rare lines: benign warnings and NCCL chatter per rank, checkpoints and validation per logger, syslog.

_WARNINGS = [
    # torch 2.4's checkpoint.py:1399 deprecation warning and the source line Python prints under it
    # (kohya-ss/sd-scripts#1649, meta-pytorch/torchtune#1730)
    [
        "/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:1399: FutureWarning: "
        "`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.",
        "  with device_autocast_ctx, torch.cpu.amp.autocast(**cpu_autocast_kwargs), recompute_context:"
        "  # type: ignore[attr-defined]",
    ],
    # Megatron-core 0.8's layers.py:609 warning, printed by every rank of a tensor-parallel run
    # (hwang2006/large-scale-lm-tutorials docs/06_tensor_parallelism.md, a pretrain_gpt.py log)
    [
        "/workspace/megatron-lm/megatron/core/tensor_parallel/layers.py:609: UserWarning: async_grad_allreduce is"
        " deprecated, not in use anymore and will be fully removed with 0.10.0. Please use allreduce_dgrad instead.",
        "  warnings.warn(",
    ],
    # ProcessGroupNCCL's point-to-point warning behind torchrun's rank prefix, with the stray "0" its
    # TORCH_WARN_ONCE printed (NVIDIA/nccl#1176; the "0" is explained in pytorch/pytorch#114168)
    [
        "[rank{rank}]:[W ProcessGroupNCCL.cpp:2302] Warning: 0TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for"
        " point-to-point collectives. (function operator())"
    ],
    # a new communicator (a sub-group) coming up late: NCCL 2.19+ INFO lines (NVIDIA/nccl#1267 for the plugin
    # line, NVIDIA/nccl#1814 for `comm 0x... rank 36 nranks 64 cudaDev 4 nvmlDev 4 busId 9b000 commId 0x... - Init
    # COMPLETE`)
    [
        "{node}:{pid}:{tid} [{local_rank}] NCCL INFO Using non-device net plugin version 0",
        "{node}:{pid}:{tid} [{local_rank}] NCCL INFO comm 0x55d{pid}0 rank {rank} nranks {world_size} cudaDev"
        " {local_rank} nvmlDev {local_rank} busId {busid} commId 0x7e1c{seq}a - Init COMPLETE",
    ],
    # Megatron's report_memory, unrounded as it prints (NVIDIA/nccl#743: `[Rank 0] (after 20 iterations) memory
    # (MB) | allocated: 6245.033203125 | max allocated: 6245.0361328125 | reserved: 6554.0 | max reserved: 6554.0`)
    [
        "[Rank {rank}] (after {iteration} iterations) memory (MB) | allocated: 21784.5302734375 | max allocated:"
        " 58112.0712890625 | reserved: 63488.0 | max reserved: 63488.0"
    ],
    # TransformerEngine's check_set_window_size warning for causal masks (NVIDIA/TransformerEngine#1064)
    [
        "/usr/local/lib/python3.10/dist-packages/transformer_engine/pytorch/attention.py:3051: UserWarning:"
        " window_size should be (-1, 0) or (>=0, 0) for attn_mask_type=causal",
        "  warnings.warn(",
    ],
]
# Benign syslog lines of a node (tag, message): systemd and logind sessions (mempodippy/vlany#28:
# `systemd[1]: Started Session c2 of user root.`, `systemd-logind[856]: New session c3 of user root.`,
# `systemd[1]: Started User Manager for UID 0.`) and the mlx5 driver's PCIe power and cable events
# (geerlingguy/arm-nas#16: `mlx5_core 0004:01:00.0: mlx5_pcie_event:294:(pid 542): PCIe slot advertised sufficient
# power (75W).`, `mlx5_core 0004:01:00.0: Port module event: module 0, Cable plugged`)
_SYSLOG_NOISE = [
    ("systemd[1]", "Started Session {seq} of user root."),
    ("kernel", "mlx5_core 0000:{nic}.0: mlx5_pcie_event:294:(pid {pid}): PCIe slot advertised sufficient power (75W)."),
    ("systemd-logind[{pid}]", "New session {seq} of user root."),
    ("kernel", "mlx5_core 0000:{nic}.0: Port module event: module {hca}, Cable plugged"),
    ("systemd[1]", "Started User Manager for UID 0."),
]
RANK_EVENT_RATE = 1 / 450  # benign rank events per iteration
SYSLOG_EVENT_RATE = 1 / 420


def _draws(rng: random.Random, n: int, rate: float) -> list[int]:
    count = int(n * rate + rng.random())
    return sorted(rng.randrange(n) for _ in range(count))


def rank_events(plan: JobPlan, rank: int, a: int, into: dict[int, list[str]]) -> None:
    """Benign warnings and NCCL chatter of one rank in the block starting at iteration a."""
    rng = random.Random(f"{plan.seed}:r{rank}:{a}")
    prefix = rank_prefix(plan, rank)
    for k in _draws(rng, BLOCK, RANK_EVENT_RATE):
        lines = rng.choice(_WARNINGS)
        c = ctx(plan, plan.iter_time(a + k + 1) + rng.random(), rank=rank)
        c["iteration"] = a + k + 1
        into.setdefault(k, []).append(emit(prefix, [ln.format_map(c) for ln in lines]))


def logger_events(plan: JobPlan, rank: int, a: int, b: int, into: dict[int, list[str]]) -> None:
    """Checkpoint saves and validation results the logging rank prints at their intervals."""
    prefix = rank_prefix(plan, rank)
    first = (a // plan.save_interval + 1) * plan.save_interval
    for k in range(first, b + 1, plan.save_interval):
        into.setdefault(k - a - 1, []).append(emit(prefix, checkpoint_lines(k, 12000 + (k * 37) % 9000)))
    first = (a // plan.eval_interval + 1) * plan.eval_interval
    for k in range(first, b + 1, plan.eval_interval):
        loss = 1.9 + 8.9 * (1 + k / 40.0) ** -0.45 + 0.02
        into.setdefault(k - a - 1, []).append(emit(prefix, validation_lines(k, loss)))


def checkpoint_lines(k: int, save_ms: float | None) -> list[str]:
    """A checkpoint save as Megatron prints it: `saving checkpoint at iteration      50 to
    checkpoints/gpt2_345m_dist_mp in torch_dist format` (hwang2006/large-scale-lm-tutorials
    docs/06_tensor_parallelism.md), `  successfully saved checkpoint from iteration      50 to ... [ t 1/1, p 1/1 ]`
    and the save-checkpoint timer (NVIDIA/dgxc-benchmarking llama3.1/README.md; the timer line also in
    NVIDIA/Megatron-LM#1763). The save after training has no timer (save_ms None), as in the tutorial's log."""
    lines = [
        f"saving checkpoint at iteration {k:7d} to {CKPT_DIR} in torch_dist format",
        f"  successfully saved checkpoint from iteration {k:7d} to {CKPT_DIR} [ t 1/8, p 1/4 ]",
    ]
    if save_ms is not None:
        lines += [
            "(min, max) time across ranks (ms):",
            "    " + "save-checkpoint ".ljust(48, ".") + f": ({save_ms:.2f}, {save_ms + 3.17:.2f})",
        ]
    return lines


def validation_lines(k: int, loss: float, final: bool = False) -> list[str]:
    """Megatron's validation block between dashes: ` validation loss at iteration 100 | lm loss value: 8.687662E+00 |
    lm loss PPL: 5.929304E+03 | ` during training, `... at iteration 200 on validation set | ...` after it
    (hwang2006/large-scale-lm-tutorials docs/06_tensor_parallelism.md, both in one log)."""
    where = " on validation set" if final else ""
    text = (
        f" validation loss at iteration {k}{where} | lm loss value: {loss:.6E} | lm loss PPL: {math.exp(loss):.6E} | "
    )
    return ["-" * (len(text) + 1), text, "-" * (len(text) + 1)]


def syslog_events(plan: JobPlan, node: int, a: int, into: dict[int, list[str]]) -> None:
    rng = random.Random(f"{plan.seed}:k{node}:{a}")
    for k in _draws(rng, BLOCK, SYSLOG_EVENT_RATE):
        tag, text = rng.choice(_SYSLOG_NOISE)
        t = plan.iter_time(a + k + 1) + rng.random() * plan.iter_s
        c = ctx(plan, t, node=node)
        into.setdefault(k, []).append(syslog_prefix(plan, node, t, tag.format_map(c)) + text.format_map(c) + "\n")


def body_chunks(plan: JobPlan, fp: FilePlan, a: int, b: int) -> Iterator[str]:
    """The text of file fp for iterations a+1..b (a on a BLOCK boundary), streams interleaved iteration by
    iteration, in chunks of a few MB whatever the number of streams."""
    loggers = [r for r in fp.ranks if is_logger(plan, r)]
    extra: dict[int, list[str]] = {}
    for r in fp.ranks:
        rank_events(plan, r, a, extra)
    for r in loggers:
        logger_events(plan, r, a, b, extra)
    for n in fp.kernels:
        syslog_events(plan, n, a, extra)
    templates = [unit_template(rank_prefix(plan, r)) for r in loggers]
    vals = iter_values(plan, a, b) if loggers else [()] * (b - a)
    if len(templates) == 1 and not extra:  # the common per-node case: one comprehension
        yield "".join([templates[0] % v for v in vals])
        return
    out: list[str] = []
    for k, v in enumerate(vals):
        for tmpl in templates:
            out.append(tmpl % v)
        more = extra.get(k)
        if more:
            out.extend(more)
        if len(out) >= 4096:
            yield "".join(out)
            out = []
    if out:
        yield "".join(out)

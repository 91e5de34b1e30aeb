"""Failure scenarios for the synthetic job generator: which lines a fault prints, where and when.

A scenario is data: line templates with `{placeholders}` that the generator fills per rank and node
(`{rank}`, `{local_rank}`, `{node}`, `{iteration}`, `{ts}` ...; see PLACEHOLDERS). The lines are
modelled on what real jobs print (PyTorch's ProcessGroupNCCL watchdog, NCCL WARN lines, the NVIDIA
driver's XID messages, the kernel OOM killer, Megatron's tracebacks, srun/slurmstepd errors), so a
triage that works on these has a fair chance on real logs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import field_validator

from crashcart.knowledge.records import Strict
from crashcart.knowledge.taxonomy import FailureClass

# Every placeholder a template may use, with a sample value (templates are checked against it at load).
PLACEHOLDERS: dict[str, object] = {
    "rank": 59, "local_rank": 3, "node": "node07", "iteration": 1201, "ts": "1128 07:35:07.606841",
    "date": "2025-11-28 07:35:07", "iso": "2025-11-28T07:35:07", "pid": 41235, "tid": 41399,
    "agent_pid": 41102, "world_size": 128, "jobid": 4411923, "fault_node": "node07", "first_node": "node00",
    "peer_ip": "10.64.0.9", "ip": "10.64.0.8", "port": 44206, "pci": "61:00", "busid": "61000", "nic": "0c:00",
    "hca": 3,
    "seq": 14413, "seq_prev": 14412, "numel": 101187584, "timeout_ms": 600000, "elapsed_ms": 600042,
    "consumed": 1229824, "train_iters": 500000, "ckpt_dir": "/lustre/ckpt/gpt-175b", "task": 7,
}

_TORCH = "/usr/local/lib/python3.10/dist-packages/torch"
_MEG = "/workspace/megatron-lm"

# Python traceback through Megatron's training loop, as torchrun prints a worker's stderr.
_TRAIN_TRACE = [
    "[rank{rank}]: Traceback (most recent call last):",
    f'[rank{{rank}}]:   File "{_MEG}/pretrain_gpt.py", line 288, in <module>',
    "[rank{rank}]:     pretrain(",
    f'[rank{{rank}}]:   File "{_MEG}/megatron/training/training.py", line 386, in pretrain',
    "[rank{rank}]:     iteration, num_floating_point_operations_so_far = train(",
    f'[rank{{rank}}]:   File "{_MEG}/megatron/training/training.py", line 1422, in train',
    "[rank{rank}]:     train_step(forward_step_func,",
    f'[rank{{rank}}]:   File "{_MEG}/megatron/training/training.py", line 754, in train_step',
    "[rank{rank}]:     losses_reduced = forward_backward_func(",
    f'[rank{{rank}}]:   File "{_MEG}/megatron/core/pipeline_parallel/schedules.py", line 1612, in '
    "forward_backward_pipelining_without_interleaving",
]

# The C++ frames PyTorch prints under a CUDA/NCCL error raised in the watchdog thread.
_WATCHDOG_FRAMES = [
    "Exception raised from c10_cuda_check_implementation at /opt/pytorch/pytorch/c10/cuda/CUDAException.cpp:43"
    " (most recent call first):",
    f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x99 (0x7f0e1c8b5e89 in {_TORCH}/lib/libc10.so)",
    "frame #1: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x3c2 "
    f"(0x7f0e1c9c71b2 in {_TORCH}/lib/libc10_cuda.so)",
    "frame #2: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x56 "
    f"(0x7f0dc7e1a6f6 in {_TORCH}/lib/libtorch_cuda.so)",
    f"frame #3: c10d::ProcessGroupNCCL::watchdogHandler() + 0x1da (0x7f0dc7e26e4a in {_TORCH}/lib/libtorch_cuda.so)",
    f"frame #4: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f0dc7e28b3d in {_TORCH}/lib/libtorch_cuda.so)",
    "frame #5: <unknown function> + 0xdc253 (0x7f0e1c0b0253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
    "frame #6: <unknown function> + 0x94ac3 (0x7f0e1de94ac3 in /lib/x86_64-linux-gnu/libc.so.6)",
    "",
    "terminate called after throwing an instance of 'c10::DistBackendError'",
]

_WATCHDOG = "[rank{rank}]:[E{ts} ProcessGroupNCCL.cpp:1515] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
_WORK = (
    "WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={timeout_ms})"
    " ran for {elapsed_ms} milliseconds before timing out."
)

# What every healthy rank prints when a peer stops answering: the symptom, never the root cause.
TIMEOUT_SYMPTOMS = [
    "[rank{rank}]:[E{ts} ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective operation timeout: "
    + _WORK,
    "[rank{rank}]:[E{ts} ProcessGroupNCCL.cpp:1664] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Exception (either"
    " an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq}, last completed"
    " NCCL work: {seq_prev}.",
    "[rank{rank}]:[E{ts} ProcessGroupNCCL.cpp:621] [Rank {rank}] Some NCCL operations have failed or timed out."
    " Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete"
    " data.",
    "[rank{rank}]:[E{ts} ProcessGroupNCCL.cpp:627] [Rank {rank}] To avoid data inconsistency, we are taking the"
    " entire process down.",
    _WATCHDOG + "Process group watchdog thread terminated with exception: [Rank {rank}] Watchdog caught"
    " collective operation timeout: " + _WORK,
    "Exception raised from checkTimeout at /opt/pytorch/pytorch/torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:609 (most recent call first):",
    *_WATCHDOG_FRAMES[1:],
]


def _cuda_error(message: str) -> list[str]:
    return [
        _WATCHDOG + f"Process group watchdog thread terminated with exception: CUDA error: {message}",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below"
        " might be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "",
        *_WATCHDOG_FRAMES,
        f"  what():  [PG ID 0 PG GUID 0(default_pg) Rank {{rank}}] Process group watchdog thread terminated with"
        f" exception: CUDA error: {message}",
    ]


_IB_ERR = (
    "NET/IB : Got completion from peer {peer_ip}<{port}> with status=12 opcode=0 len=0 vendor err 129 (Send)"
    " localGid ::ffff:{ip} remoteGids::ffff:{peer_ip} hca mlx5_{hca}"
)


class Scenario(Strict):
    """One way a job dies: the lines each party prints, and how the job ends.

    root_lines go to the faulty rank (every node's logging rank when scope is "job"); kernel_lines to the
    faulty node's kernel log (syslog prefix added); agent_lines to its torchrun agent; symptom_lines to every
    rank of every other node (of every node when scope is "job") symptom_delay_s later; scheduler_lines to
    the Slurm job output scheduler_delay_s after the fault (None: at the very end).
    """

    name: str
    failure_class: FailureClass | None
    description: str = ""
    root_lines: list[str] = []
    kernel_lines: list[str] = []
    agent_lines: list[str] = []
    symptom_lines: list[str] = []
    scheduler_lines: list[str] = []
    exitcode: int = 1  # the faulty rank's exit status in the launcher's report (-9: SIGKILL, -6: SIGABRT)
    symptom_delay_s: float = 600.0
    scheduler_delay_s: float | None = None
    scope: Literal["node", "job"] = "node"
    node_dies: bool = False  # the faulty node prints nothing after the fault; the others are killed
    verbatim: bool = False  # root lines are written without launcher prefixes (text taken from a real log)
    evidence: list[str] = []  # substrings of the lines that prove the class (labels.jsonl's `evidence`)

    @field_validator("root_lines", "kernel_lines", "agent_lines", "symptom_lines", "scheduler_lines")
    @classmethod
    def _known_placeholders(cls, lines: list[str]) -> list[str]:
        for line in lines:
            try:
                line.format_map(PLACEHOLDERS)
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(f"template {line!r} uses an unknown placeholder or bad braces ({exc});"
                                 f" known: {', '.join(PLACEHOLDERS)}; write literal braces as {{{{ }}}}") from exc
        return lines


def _scenarios() -> dict[str, Scenario]:
    xid = "NVRM: Xid (PCI:0000:{pci}): "
    items = [
        Scenario(
            name="xid79",
            evidence=["GPU has fallen off the bus"],
            failure_class=FailureClass.GPU_HARDWARE,
            description="a GPU falls off the bus (XID 79); its rank dies with CUDA errors, the rest time out",
            kernel_lines=[
                xid + "79, pid={pid}, name=python, GPU has fallen off the bus.",
                "NVRM: GPU 0000:{pci}.0: GPU has fallen off the bus.",
                "NVRM: A GPU crash dump has been created. If possible, please run",
                "NVRM: nvidia-bug-report.sh as root to collect this data before",
                "NVRM: the NVIDIA kernel module is unloaded.",
            ],
            root_lines=[
                "{node}:{pid}:{tid} [{local_rank}] enqueue.cc:1556 NCCL WARN Cuda failure 'unknown error'",
                "{node}:{pid}:{tid} [{local_rank}] NCCL INFO group.cc:231 -> 1",
                *_cuda_error("unknown error"),
            ],
            symptom_lines=TIMEOUT_SYMPTOMS, exitcode=-6,
        ),
        Scenario(
            name="ecc",
            evidence=["An uncorrectable double bit error (DBE)", "uncorrectable ECC error encountered"],
            failure_class=FailureClass.GPU_HARDWARE,
            description="an uncorrectable (double bit) ECC error in GPU memory (XID 48, then a row remap)",
            kernel_lines=[
                xid + "48, pid={pid}, name=python, An uncorrectable double bit error (DBE) has been detected on"
                " GPU in the framebuffer at partition 6, subpartition 0.",
                xid + "63, pid={pid}, name=python, Row Remapper: New row (0x00000000000a3f2c) was marked for"
                " remapping, reset gpu to activate.",
            ],
            root_lines=_cuda_error("uncorrectable ECC error encountered"),
            symptom_lines=TIMEOUT_SYMPTOMS, exitcode=-6,
        ),
        Scenario(
            name="ib_link",
            evidence=["NCCL WARN NET/IB : Got completion from peer"],
            failure_class=FailureClass.NETWORK,
            description="an InfiniBand link goes down: NCCL sees IB completions with status=12 (retry exceeded)",
            kernel_lines=["mlx5_core 0000:{nic}.0 mlx5_{hca}: Port: 1 Link DOWN"],
            root_lines=[
                "{node}:{pid}:{tid} [{local_rank}] transport/net_ib.cc:1696 NCCL WARN " + _IB_ERR,
                "{node}:{pid}:{tid} [{local_rank}] NCCL INFO transport/net.cc:1298 -> 6",
                "{node}:{pid}:{tid} [{local_rank}] NCCL INFO proxy.cc:694 -> 6",
                "{node}:{pid}:{tid} [{local_rank}] NCCL INFO proxy.cc:874 -> 6 [Progress Thread]",
                _WATCHDOG + "Process group watchdog thread terminated with exception: NCCL error: remote process"
                " exited or there was a network error, NCCL version 2.21.5",
                "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting"
                " prematurely.",
                "Last error:",
                _IB_ERR,
                *_WATCHDOG_FRAMES[1:],
            ],
            symptom_lines=TIMEOUT_SYMPTOMS, exitcode=-6,
        ),
        Scenario(
            name="gpu_oom",
            evidence=["torch.OutOfMemoryError: CUDA out of memory"],
            failure_class=FailureClass.GPU_OOM,
            description="one pipeline stage runs out of GPU memory in the backward pass",
            root_lines=[
                *_TRAIN_TRACE,
                "[rank{rank}]:     input_tensor_grad = backward_step(",
                f'[rank{{rank}}]:   File "{_MEG}/megatron/core/pipeline_parallel/schedules.py", line 366, in'
                " backward_step",
                "[rank{rank}]:     torch.autograd.backward(output_tensor[0], grad_tensors=output_tensor_grad[0])",
                f'[rank{{rank}}]:   File "{_TORCH}/autograd/graph.py", line 825, in _engine_run_backward',
                "[rank{rank}]:     return Variable._execution_engine.run_backward(  # Calls into the C++ engine",
                "[rank{rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU"
                " {local_rank} has a total capacity of 79.11 GiB of which 2.06 GiB is free. Process {pid} has"
                " 77.04 GiB memory in use. Of the allocated memory 71.52 GiB is allocated by PyTorch, and 3.98"
                " GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try"
                " setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See"
                " documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html"
                "#environment-variables)",
            ],
            symptom_lines=TIMEOUT_SYMPTOMS,
        ),
        Scenario(
            name="host_oom",
            evidence=["Out of memory: Killed process", "oom_kill event"],
            failure_class=FailureClass.HOST_OOM,
            description="the kernel OOM killer kills a worker (host memory); torchrun reports exitcode -9",
            kernel_lines=[
                "python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0,"
                " oom_score_adj=0",
                "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,"
                "task_memcg=/slurm/uid_1000/job_{jobid}/step_0/task_0,task=python,pid={pid},uid=1000",
                "Out of memory: Killed process {pid} (python) total-vm:1163473212kB, anon-rss:1035264988kB,"
                " file-rss:104776kB, shmem-rss:65536kB, UID:1000 pgtables:2046912kB oom_score_adj:0",
            ],
            scheduler_lines=[
                "slurmstepd: error: Detected 1 oom_kill event in StepId={jobid}.0. Some of the step tasks have"
                " been OOM Killed.",
            ],
            symptom_lines=TIMEOUT_SYMPTOMS, exitcode=-9, scheduler_delay_s=2.0,
        ),
        Scenario(
            name="nan_loss",
            evidence=["lm loss: nan", "Unexpected result nan"],
            failure_class=FailureClass.LOSS_DIVERGENCE, scope="job",
            description="the loss becomes NaN and Megatron's NaN check stops the run",
            root_lines=[
                " [{date}] iteration {iteration:8d}/{train_iters:8d} | consumed samples: {consumed:12d} |"
                " elapsed time per iteration (ms): 4391.7 | throughput per GPU (TFLOP/s/GPU): 402.6 | learning"
                " rate: 2.871930E-04 | global batch size:  1024 | lm loss: nan | loss scale: 1.0 | grad norm:"
                " nan | number of skipped iterations:   0 | number of nan iterations:   1 |",
                *_TRAIN_TRACE,
                "[rank{rank}]:     config.finalize_model_grads_func(",
                f'[rank{{rank}}]:   File "{_MEG}/megatron/core/distributed/finalize_model_grads.py", line 279,'
                " in finalize_model_grads",
                "[rank{rank}]:     model_chunk.finish_grad_sync()",
                "[rank{rank}]: RuntimeError: Rank {rank}, node {node}, device {local_rank}, iteration"
                " {iteration}: Unexpected result nan (message='found NaN in local grad norm for bucket #0 in"
                " backward pass before data-parallel communication collective')",
            ],
        ),
        Scenario(
            name="storage",
            evidence=["OSError: [Errno 28] No space left on device"],
            failure_class=FailureClass.STORAGE,
            description="a checkpoint save fails: the file system is full (ENOSPC)",
            root_lines=[
                "saving checkpoint at iteration {iteration:7d} to {ckpt_dir} in torch_dist format",
                *_TRAIN_TRACE[:5],
                f'[rank{{rank}}]:   File "{_MEG}/megatron/training/training.py", line 1503, in train',
                "[rank{rank}]:     save_checkpoint_and_time(iteration, model, optimizer,",
                f'[rank{{rank}}]:   File "{_MEG}/megatron/training/checkpointing.py", line 450, in save_checkpoint',
                "[rank{rank}]:     async_save_request = dist_checkpointing.save(state_dict, checkpoint_name,",
                f'[rank{{rank}}]:   File "{_MEG}/megatron/core/dist_checkpointing/strategies/filesystem_async.py",'
                " line 313, in write_preloaded_data",
                "[rank{rank}]:     stream.write(data)",
                "[rank{rank}]: OSError: [Errno 28] No space left on device",
            ],
            symptom_lines=TIMEOUT_SYMPTOMS,
        ),
        Scenario(
            name="node_fail",
            evidence=["srun: error: Node failure on", "DUE TO NODE FAILURE"],
            failure_class=FailureClass.NODE_FAILURE, node_dies=True,
            description="a node dies (power, kernel panic): its log just stops and Slurm cancels the job",
            scheduler_lines=[
                "srun: error: Node failure on {node}",
                "slurmstepd: error: *** JOB {jobid} ON {first_node} CANCELLED AT {iso} DUE TO NODE FAILURE,"
                " SEE SLURMCTLD LOG FOR DETAILS ***",
                "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
            ],
            symptom_delay_s=95.0, scheduler_delay_s=92.0,
        ),
        Scenario(
            name="code_bug",
            evidence=["AttributeError: 'NoneType' object has no attribute"],
            failure_class=FailureClass.CODE_BUG,
            description="a code path only the last pipeline stage takes dereferences None",
            root_lines=[
                *_TRAIN_TRACE,
                "[rank{rank}]:     output_tensor, num_tokens = forward_step(",
                f'[rank{{rank}}]:   File "{_MEG}/pretrain_gpt.py", line 209, in loss_func',
                "[rank{rank}]:     num_tokens = loss_mask.sum().clone().detach().to(torch.int)",
                "[rank{rank}]: AttributeError: 'NoneType' object has no attribute 'sum'",
            ],
            symptom_lines=TIMEOUT_SYMPTOMS,
        ),
        Scenario(
            name="timeout_only",
            evidence=["Watchdog caught collective operation timeout"],
            failure_class=FailureClass.COLLECTIVE_TIMEOUT, scope="job", exitcode=-6,
            description="every rank times out in the same all-reduce and nothing says why",
            symptom_lines=TIMEOUT_SYMPTOMS,
        ),
        Scenario(name="none", failure_class=None, scope="job", description="a healthy run that finishes"),
    ]
    return {s.name: s for s in items}


SCENARIOS: dict[str, Scenario] = _scenarios()


def scenario_from_case(
    path: Path, failure_class: FailureClass | str | None, evidence: list[str] | None = None
) -> Scenario:
    """A scenario whose root lines are a real case's log text, written verbatim on the faulty rank."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    lines = [ln.replace("{", "{{").replace("}", "}}") for ln in text.splitlines()]
    cls = FailureClass(failure_class) if failure_class is not None else None
    return Scenario(
        name=f"case:{Path(path).stem}", failure_class=cls, description=f"real log text from {Path(path).name}",
        root_lines=lines, symptom_lines=TIMEOUT_SYMPTOMS, verbatim=True, evidence=evidence or [],
    )

"""The failure classes and actions of shared/spec/taxonomy.md: the contract every diagnosis uses."""

from __future__ import annotations

from enum import Enum


class FailureClass(str, Enum):
    """One root cause per diagnosis; `unknown` when the evidence is too thin."""

    GPU_HARDWARE = "gpu_hardware"
    NETWORK = "network"
    COLLECTIVE_TIMEOUT = "collective_timeout"
    CUDA_ERROR = "cuda_error"
    NODE_FAILURE = "node_failure"
    GPU_OOM = "gpu_oom"
    HOST_OOM = "host_oom"
    STORAGE = "storage"
    LOSS_DIVERGENCE = "loss_divergence"
    CODE_BUG = "code_bug"
    CONFIG_ERROR = "config_error"
    ENVIRONMENT = "environment"
    DATA_ERROR = "data_error"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"


class Action(str, Enum):
    """What an operator or a retry policy should do next."""

    RETRY = "retry"
    DRAIN_NODE_AND_RETRY = "drain_node_and_retry"
    ROLLBACK_AND_RETRY = "rollback_and_retry"
    FIX_JOB = "fix_job"
    ESCALATE_INFRA = "escalate_infra"


DEFAULT_ACTION: dict[FailureClass, Action] = {
    FailureClass.GPU_HARDWARE: Action.DRAIN_NODE_AND_RETRY,
    FailureClass.NETWORK: Action.DRAIN_NODE_AND_RETRY,
    FailureClass.COLLECTIVE_TIMEOUT: Action.RETRY,
    FailureClass.CUDA_ERROR: Action.RETRY,
    FailureClass.NODE_FAILURE: Action.DRAIN_NODE_AND_RETRY,
    FailureClass.GPU_OOM: Action.FIX_JOB,
    FailureClass.HOST_OOM: Action.FIX_JOB,
    FailureClass.STORAGE: Action.ESCALATE_INFRA,
    FailureClass.LOSS_DIVERGENCE: Action.ROLLBACK_AND_RETRY,
    FailureClass.CODE_BUG: Action.FIX_JOB,
    FailureClass.CONFIG_ERROR: Action.FIX_JOB,
    FailureClass.ENVIRONMENT: Action.FIX_JOB,
    FailureClass.DATA_ERROR: Action.FIX_JOB,
    FailureClass.CANCELLED: Action.RETRY,
    FailureClass.UNKNOWN: Action.ESCALATE_INFRA,
}

HARDWARE_CLASSES = frozenset({FailureClass.GPU_HARDWARE, FailureClass.NETWORK, FailureClass.NODE_FAILURE})
# Failures of the machine rather than the job: the batch summary's infrastructure share and `--fail-on infra`.
# collective_timeout and cuda_error are left out: with no deeper cause in the logs they cannot be pinned on the
# machine, so the infrastructure share is a lower bound.
INFRA_CLASSES = HARDWARE_CLASSES | {FailureClass.STORAGE}


DESCRIPTIONS: dict[FailureClass, str] = {
    FailureClass.GPU_HARDWARE: "a GPU or its memory/links failing (hardware XID, uncorrectable ECC, off the bus)",
    FailureClass.NETWORK: "the inter-node fabric (InfiniBand, RoCE, EFA, sockets) failing inside NCCL/Gloo",
    FailureClass.COLLECTIVE_TIMEOUT: "a collective hangs or times out and no deeper root cause is visible",
    FailureClass.CUDA_ERROR: "a CUDA runtime fault with no hardware evidence and no clear code bug",
    FailureClass.NODE_FAILURE: "a host or its agent disappears (Slurm NODE_FAIL, kernel panic, lost heartbeat)",
    FailureClass.GPU_OOM: "GPU memory exhausted",
    FailureClass.HOST_OOM: "host (CPU) memory exhausted: OOM killer, SIGKILL with memory evidence, shared memory",
    FailureClass.STORAGE: "filesystem, object store or checkpoint I/O failing (ENOSPC, quota, stale handle, EIO)",
    FailureClass.LOSS_DIVERGENCE: "training became numerically invalid (NaN/Inf loss, loss scale collapse)",
    FailureClass.CODE_BUG: "a bug in the training or model code (Python exceptions, shape mismatch, device assert)",
    FailureClass.CONFIG_ERROR: "a wrong argument, path, permission or parallelism setting",
    FailureClass.ENVIRONMENT: "the software stack does not fit the machine (driver/library/version mismatch)",
    FailureClass.DATA_ERROR: "the training data itself is corrupt, truncated, malformed or empty",
    FailureClass.CANCELLED: "the job was stopped on purpose (scancel, time limit, preemption)",
    FailureClass.UNKNOWN: "not enough evidence to say",
}


class Role(str, Enum):
    """How a matching line bears on the diagnosis."""

    ROOT_CAUSE = "root_cause"  # names the failure by itself (an XID 79, CUDA OOM, ENOSPC)
    SYMPTOM = "symptom"  # follows from some other failure (collective timeout, ChildFailedError)
    CONTEXT = "context"  # not a failure; tells the stage or the job's state (checkpoint saved)


class Stage(str, Enum):
    """Where in the job's life a line belongs."""

    INIT = "init"
    TRAINING = "training"
    CHECKPOINT = "checkpoint"
    EVALUATION = "evaluation"
    SHUTDOWN = "shutdown"

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

HARDWARE_CLASSES = frozenset(
    {FailureClass.GPU_HARDWARE, FailureClass.NETWORK, FailureClass.NODE_FAILURE}
)

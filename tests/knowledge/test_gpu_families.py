"""GPU hardware families of knowledge/signatures/gpu.yaml read in a whole log: what each decides beside the lines
the same failure prints around it (the launcher's teardown, the driver's own chatter).

Every line is one a real program printed, with the thread it was seen in.
"""

from __future__ import annotations

from pathlib import Path

from triage_lines import triage_lines

from crashcart.knowledge.taxonomy import Action, FailureClass


def test_rocms_gpu_hang_report_outranks_the_abort_torchrun_reports(tmp_path: Path) -> None:
    # ROCm/legacy-rocm-build#5259: PyTorch on gfx942 hangs after hours; the runtime aborts, torchrun tears down
    report = triage_lines(
        tmp_path,
        "Loss/train_mean_inlier_rep_error: 4.7540 (4.7279) | Grad/pos_proj: 1.0838 (1.5358) | Grad/point_encoder: "
        "0.0000 (0.0000)",
        "HW Exception by GPU node-4 (Agent handle: 0x1ebc04e0) reason :GPU Hang",
        "HW Exception by GPU node-4 (Agent handle: 0x2df30600) reason :GPU Hang",
        "W0902 15:10:48.626000 819010 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 819027 "
        "closing signal SIGTERM",
        "E0902 15:10:49.013000 819010 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -6) "
        "local_rank: 0 (pid: 819025) of binary: <masked_by_issue_reporter>/bin/python",
    )
    assert report.diagnosis.failure_class is FailureClass.GPU_HARDWARE
    assert report.diagnosis.action is Action.RETRY
    assert report.diagnosis.evidence[0].rule_id == "gpu.amd_ring_timeout"


# ublue-os/bazzite#4449: the driver's kernel log around a GSP that stopped answering
BOOTUP_EVENT = (
    "     Mar 21 21:42:01 kernel: NVRM: GPU0 _kgspProcessRpcEvent: Attempted to process RPC event from GPU0: 0x101a "
    "(PFM_REQ_HNDLR_STATE_SYNC_CALLBACK) during bootup without API lock"
)
HEARTBEAT = "     Mar 21 21:42:01 kernel: NVRM: GPU0 _kgspRpcRecvPoll: GSP RM heartbeat timed out"


def test_a_gsp_whose_heartbeat_timed_out_is_hardware_without_an_xid(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, BOOTUP_EVENT, HEARTBEAT)
    assert report.diagnosis.failure_class is FailureClass.GPU_HARDWARE
    assert report.diagnosis.evidence[0].rule_id == "gpu.gsp_heartbeat_timeout"
    # the event the driver drops during bootup is no hang by itself
    assert triage_lines(tmp_path, BOOTUP_EVENT).diagnosis.failure_class is not FailureClass.GPU_HARDWARE


def test_nccl_finding_no_p2p_between_nvlinked_gpus_is_the_hardware_but_between_pcie_gpus_is_not(tmp_path: Path) -> None:
    # libnccl.so 2.32.3's strings next to graph/paths.cc (the nvidia-nccl-cu12 wheel): the source's format
    nvlinked = triage_lines(
        tmp_path,
        "gpu-node-07:1234:1290 [3] NCCL WARN P2P is disabled between NVLINK connected GPUs 1 and 3. This should not be "
        "the case given their connectivity, and is probably due to a hardware issue. If you still want to proceed, you "
        "can set NCCL_IGNORE_DISABLED_P2P=1.",
    )
    assert nvlinked.diagnosis.failure_class is FailureClass.GPU_HARDWARE
    assert nvlinked.diagnosis.evidence[0].rule_id == "gpu.nvlink.p2p_disabled"
    pcie = triage_lines(
        tmp_path,
        "gpu-node-07:1234:1290 [3] NCCL WARN P2P is disabled between connected GPUs 1 and 3. You can repress this "
        "message with NCCL_IGNORE_DISABLED_P2P=1.",
    )
    assert pcie.diagnosis.failure_class is not FailureClass.GPU_HARDWARE


def test_pynvml_raising_gpu_is_lost_is_the_lost_gpu_but_not_supported_is_not(tmp_path: Path) -> None:
    # nvidia-ml-py's pynvml.py names its exceptions from the NVML codes: the source's format
    lost = triage_lines(tmp_path, "pynvml.NVMLError_GpuIsLost: GPU is lost")
    assert lost.diagnosis.failure_class is FailureClass.GPU_HARDWARE
    assert lost.diagnosis.evidence[0].rule_id == "gpu.lost_device"
    unsupported = triage_lines(tmp_path, "pynvml.NVMLError_NotSupported: Not Supported")
    assert unsupported.diagnosis.failure_class is not FailureClass.GPU_HARDWARE

"""CUDA (and ROCm) runtime fault families of knowledge/signatures/cuda.yaml read in a whole log, beside the notes
the framework prints under every such error.

Every line is one a real program printed, with the thread it was seen in.
"""

from __future__ import annotations

from pathlib import Path

from triage_lines import triage_lines

from crashcart.knowledge.taxonomy import Action, FailureClass


def test_a_kernel_that_asks_more_than_the_gpu_has_is_a_cuda_fault_a_retry_does_not_fix(tmp_path: Path) -> None:
    # kijai/ComfyUI-HunyuanVideoWrapper#281: the error and the three notes PyTorch prints under every CUDA error
    report = triage_lines(
        tmp_path,
        "  return F.conv3d(",
        "RuntimeError: CUDA error: too many resources requested for launch",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
        "be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    )
    assert report.diagnosis.failure_class is FailureClass.CUDA_ERROR
    assert report.diagnosis.action is Action.FIX_JOB
    assert report.diagnosis.evidence[0].rule_id == "cuda.launch_out_of_resources"


def test_rocms_hardware_exception_callback_is_a_cuda_fault(tmp_path: Path) -> None:
    # iree-org/iree#17872: the HSA runtime's queue callback on an MI210, then the abort
    report = triage_lines(
        tmp_path,
        ":0:rocdevice.cpp            :2893: 90021033577 us: [pid:192145 tid:0x76fa7d3ff640] Callback: Queue "
        "0x76f676200000 aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware "
        "exception. code: 0x1016",
    )
    assert report.diagnosis.failure_class is FailureClass.CUDA_ERROR
    assert report.diagnosis.evidence[0].rule_id == "cuda.unspecified_launch_failure"


def test_tensorflows_gpu_sync_failure_alone_is_a_cuda_fault(tmp_path: Path) -> None:
    # tensorflow/tensorflow#45901: the exception TensorFlow raises once the stream it waits on failed
    report = triage_lines(tmp_path, "tensorflow.python.framework.errors_impl.InternalError: GPU sync failed")
    assert report.diagnosis.failure_class is FailureClass.CUDA_ERROR
    assert report.diagnosis.evidence[0].rule_id == "cuda.tf_gpu_sync_failed"


def test_an_mps_client_the_server_terminated_is_a_cuda_error_but_mps_out_of_clients_is_not(tmp_path: Path) -> None:
    # libcudart.so.12's texts (the nvidia-cuda-runtime-cu12 wheel) in PyTorch's 'CUDA error: %s'
    lost = triage_lines(tmp_path, "RuntimeError: CUDA error: the MPS client has been terminated by the server")
    assert lost.diagnosis.failure_class is FailureClass.CUDA_ERROR
    assert lost.diagnosis.evidence[0].rule_id == "cuda.mps_client_lost"
    full = triage_lines(
        tmp_path,
        "RuntimeError: CUDA error: the hardware resources required to create MPS client have been exhausted",
    )
    assert not any(getattr(e, "rule_id", "") == "cuda.mps_client_lost" for e in full.events)


def test_cuda_gdbs_misaligned_address_exception_is_a_cuda_fault(tmp_path: Path) -> None:
    # Dao-AILab/flash-attention#470: the flash-attn kernel under cuda-gdb on an A10
    report = triage_lines(tmp_path, "CUDA_EXCEPTION_6, Warp Misaligned Address.")
    assert report.diagnosis.failure_class is FailureClass.CUDA_ERROR
    assert report.diagnosis.evidence[0].rule_id == "cuda.misaligned_address"

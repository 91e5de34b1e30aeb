"""GPU and host memory families of knowledge/signatures/memory.yaml, through the whole triage.

Each case is raw lines real programs print (the thread or source file in the comment) with the class they must
come out as, beside what competes with them there: another rule on the same line (a Windows DLL message, a GPU
OOM pattern naming the CPU), a scheduler's cancel banner, a weaker warning.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.api import triage
from crashcart.knowledge.taxonomy import FailureClass

GPU = FailureClass.GPU_OOM
HOST = FailureClass.HOST_OOM

CASES = [
    (  # lllyasviel/Fooocus#1139: Apple's MPS backend at its high-watermark
        "mps_backend_oom",
        [
            "RuntimeError: MPS backend out of memory (MPS allocated: 8.89 GB, other allocations: 172.98 MB, max"
            " allowed: 9.07 GB). Tried to allocate 6.25 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0"
            " to disable upper limit for memory allocations (may cause system failure).",
            "Total time: 129.38 seconds",
        ],
        GPU,
    ),
    (  # NVlabs/BundleSDF#58: the cuDNN convolution finds no algorithm whose workspace fits, under a traceback
        "cudnn_no_algorithm_in_traceback",
        [
            "Traceback (most recent call last):",
            '  File "run_custom.py", line 211, in <module>',
            "    run_one_video(video_dir=args.video_dir, out_folder=args.out_folder, use_segmenter=args.use_segmenter,"
            " use_gui=args.use_gui)",
            "RuntimeError: Unable to find a valid cuDNN algorithm to run convolution",
        ],
        GPU,
    ),
    (  # intel/intel-extension-for-pytorch#629: IPEX's XPU allocator, in the old CUDA wording
        "xpu_oom_ipex",
        [
            "RuntimeError: XPU out of memory. Tried to allocate 1.71 GiB (GPU 0; 15.56 GiB total capacity; 0 bytes"
            " already allocated; 0 bytes reserved in total by PyTorch)",
        ],
        GPU,
    ),
    (  # cupy/cupy#2537: CuPy 7 under Chainer's trainer, which logs the message before the traceback
        "cupy_under_chainer",
        [
            "Exception in main training loop: Out of memory allocating 25,600,000 bytes (allocated so far:"
            " 3,635,267,072 bytes).",
            "Traceback (most recent call last):",
            '  File "/home/hassan/miniconda3/envs/potrait_matting/lib/python3.5/site-packages/chainer/training/'
            'trainer.py", line 343, in run',
            "    update()",
        ],
        GPU,
    ),
    (  # PaddlePaddle/PaddleDetection#3094: Paddle 2.0's BadAlloc message
        "paddle_gpu_oom",
        [
            "Out of memory error on GPU 0. Cannot allocate 40.500244MB memory on GPU 0, available memory is only"
            " 23.350001MB.",
        ],
        GPU,
    ),
    (  # apache/mxnet#17126: MXNet's pooled storage manager
        "mxnet_cudamalloc",
        [
            "mxnet.base.MXNetError: [18:53:03] src/storage/./pooled_storage_manager.h:157: cudaMalloc failed: out of"
            " memory",
            "Stack trace:",
        ],
        GPU,
    ),
    (  # gensyn-ai/rl-swarm#118: vLLM found no room for its KV cache; torch's teardown warning follows
        "vllm_no_kv_cache",
        [
            "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when"
            " initializing the engine.",
            "[rank0]:[W409 11:42:27.776885251 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been"
            " destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call"
            " destroy_process_group to ensure that any pending NCCL operations have finished in this process.",
        ],
        GPU,
    ),
    (  # huggingface/accelerate:src/accelerate/utils/memory.py: every halved batch size ran out of memory
        "accelerate_no_batch_size",
        ["RuntimeError: No executable batch size found, reached zero."],
        GPU,
    ),
    (  # Kyubyong/transformer#77: TensorFlow 1.x's wording of a GPU OOM
        "tf1_ran_out_of_gpu_memory",
        [
            "tensorflow.python.framework.errors_impl.ResourceExhaustedError: Ran out of GPU memory when allocating"
            " 1294336000 bytes for ",
        ],
        GPU,
    ),
    (  # kingoflolz/mesh-transformer-jax#66: JAX's BFC allocator, logged and then raised as a bare RuntimeError
        "jax_failed_to_allocate_request",
        [
            "2021-07-21 16:15:16.513776: E external/org_tensorflow/tensorflow/compiler/xla/pjrt/"
            "pjrt_stream_executor_client.cc:1981] Execution of replica 0 failed: Resource exhausted: Failed to"
            " allocate request for 32.00MiB (33554432B) on device ordinal 0",
            "Traceback (most recent call last):",
            '  File "resharding_example.py", line 47, in <module>',
            "    network = CausalTransformer(params)",
            "RuntimeError: Resource exhausted: Failed to allocate request for 32.00MiB (33554432B) on device ordinal 0",
        ],
        GPU,
    ),
    (  # tensorflow/tensorflow#45238: the same OOM words, but the device is the CPU: host memory
        "tf_oom_on_the_cpu_device",
        [
            "2020-11-28 09:40:14.792808: W tensorflow/core/framework/op_kernel.cc:1763] OP_REQUIRES failed at"
            " image_resizer_state.h:142 : Resource exhausted: OOM when allocating tensor with shape[1,416,416,3] and"
            " type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu",
        ],
        HOST,
    ),
    (  # systemd/systemd#23606: systemd-oomd kills the cgroup, systemd reports how many processes died
        "systemd_oomd_kill",
        [
            "Dec 18 19:34:56 user-desktop systemd-oomd[840]: Killed /user.slice/user-1001.slice/user@1001.service/"
            "app.slice/app-org.gnome.Terminal.slice/vte-spawn-dbb4a75e-031f-480d-924b-5de5af7579d2.scope due to"
            " memory pressure for /user.slice/user-1001.slice/user@1001.service being 51.07% > 50.00% for > 20s with"
            " reclaim activity",
            "Dec 18 19:34:56 user-desktop systemd[1837]: vte-spawn-dbb4a75e-031f-480d-924b-5de5af7579d2.scope:"
            " systemd-oomd killed 12 process(es) in this unit.",
        ],
        HOST,
    ),
    (  # kubernetes/kubernetes#100487: the kubelet's event for a pod's cgroup OOM
        "kubelet_cgroup_oom_event",
        [
            "  Warning  CgroupOOM  28s                kubelet            Cgroup OOM encountered, victim process:"
            " stress, pid: 470521"
        ],
        HOST,
    ),
    (  # cszn/KAIR#127: Windows' commit limit; env.windows_dll_load matches the same line's DLL suffix
        "windows_paging_file_too_small",
        [
            "OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading"
            ' "D:\\Anaconda\\envs\\swin-train\\lib\\site-packages\\torch\\lib\\shm.dll" or one of its dependencies.',
        ],
        HOST,
    ),
    (  # bcbio/bcbio-nextgen#2393: jobacct_gather kills the job, slurmstepd's cancel banner follows
        "slurm_exceeded_memory_limit_being_killed",
        [
            "slurmstepd-dback-c11-n01: error: Job 848444 exceeded memory limit (33715636 > 32757760), being killed",
            "slurmstepd-dback-c11-n01: error: Exceeded job memory limit",
            "slurmstepd-dback-c11-n01: error: *** JOB 848444 ON dback-c11-n01 CANCELLED AT 2018-05-04T17:06:42 ***",
        ],
        HOST,
    ),
    (  # ray-project/ray#32730: Ray 2.3's detail of the worker its memory monitor killed
        "ray_memory_threshold_detail",
        [
            "Memory on the node (IP: 172.31.237.1, ID: 2c0ca846c8a9b1630ce2a4aae5ce82dd974531325a67acab1801dbf1)"
            " where the task (task ID: 76b2551f16836f9d58427a0096d8ccf5ba077e2703000000, name=pi4_sample,"
            " pid=664672, memory used=0.05GB) was running was 219.41GB / 230.40GB (0.952289), which exceeds the"
            " memory usage threshold of 0.95. Ray killed this worker (ID:"
            " ba84684289453ec054c6d0aa4293b77bdf7d3f3e0c77b2724ee41479) because it was the most recently scheduled"
            " task; to see more information about memory usage on this node, use `ray logs raylet.out -ip"
            " 172.31.237.1`.",
        ],
        HOST,
    ),
    (  # salesforce/TransmogrifAI#339: a Spark executor out of heap in data preparation
        "spark_java_heap",
        [
            "19/06/25 15:55:58 ERROR Executor: Exception in task 5.0 in stage 8.0 (TID 154)",
            "java.lang.OutOfMemoryError: Java heap space",
        ],
        HOST,
    ),
    (  # pytorch/pytorch:aten/src/ATen/native/cudnn/MHA.cpp: torch 2.14's cuDNN attention (libtorch_cuda.so's format)
        "cudnn_oom_outside_allocator",
        [
            "CUDA ran out of memory outside PyTorch's allocator. If this workload uses many dynamic shapes, cuDNN may"
            " need additional device memory to JIT-compile shape-specialized kernels. Consider calling"
            " torch.cuda.memory.set_per_process_memory_fraction(fraction) early in the process to leave memory"
            " available for cuDNN.",
        ],
        GPU,
    ),
    (  # apache/arrow:python/pyarrow/error.pxi: what pyarrow 26.0.1 raised for pa.allocate_buffer(2**62)
        "pyarrow_memory_error",
        [
            "Traceback (most recent call last):",
            '  File "pyarrow/io.pxi", line 1680, in pyarrow.lib.allocate_buffer',
            '  File "pyarrow/error.pxi", line 155, in pyarrow.lib.pyarrow_internal_check_status',
            '  File "pyarrow/error.pxi", line 92, in pyarrow.lib.check_status',
            "pyarrow.lib.ArrowMemoryError: malloc of size 4611686018427387904 failed",
        ],
        HOST,
    ),
    (  # python-pillow/Pillow:src/PIL/ImageFile.py: _get_oserror's format for the codec status 'out of memory'
        "pillow_decoder_out_of_memory",
        ["OSError: out of memory when reading image file"],
        HOST,
    ),
    (  # huggingface/accelerate:src/accelerate/utils/memory.py: the Gaudi (HPU) OOM string it reads as out of memory
        "hpu_devmem_allocation_failed",
        ["RuntimeError: FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed"],
        GPU,
    ),
    (  # NVIDIA/nccl:src/include/alloc.h: libnccl.so.2's 'Failed to CUDA host alloc %ld bytes' behind its WARN prefix
        "nccl_host_alloc_failed",
        ["gpu-node07:2231:2290 [3] NCCL WARN Failed to CUDA host alloc 4194304 bytes"],
        HOST,
    ),
    (  # SchedMD/slurm 22.05 (Debian's libslurmfull.so): '%ps exceeded memory limit (%lu > %lu), being killed'
        "slurm_2205_step_exceeded_memory_limit",
        ["slurmstepd: error: StepId=4821.0 exceeded memory limit (8598234 > 8388608), being killed"],
        HOST,
    ),
    (  # ROCm/tensorflow-upstream#82: TensorFlow on ROCm finds the device memory taken (HIP status 1002)
        "tf_rocm_device_alloc_failed",
        [
            "2019-01-08 19:06:10.822532: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1189] Created TensorFlow"
            " device (/job:localhost/replica:0/task:0/device:GPU:0 with 7524 MB memory) -> physical GPU (device: 0,"
            " name: Vega 10 XL/XT [Radeon RX Vega 56/64], pci bus id: 0000:03:00.0)",
            "2019-01-08 19:06:11.303639: E tensorflow/stream_executor/rocm/rocm_driver.cc:601] failed to allocate 7.35G"
            " (7889485824 bytes) from device: hipError_t(1002)",
        ],
        GPU,
    ),
    (  # vllm-project/vllm#13882: vLLM's memory profile leaves a negative KV-cache reserve before the engine raises
        "vllm_negative_kv_cache_reserve",
        [
            "INFO 02-26 09:54:05 worker.py:267] the current vLLM instance can use total_gpu_memory (8.00GiB) x"
            " gpu_memory_utilization (0.70) = 5.60GiB",
            "INFO 02-26 09:54:05 worker.py:267] model weights take 5.20GiB; non_torch_memory takes 0.03GiB; PyTorch"
            " activation peak memory takes 1.42GiB; the rest of the memory reserved for KV Cache is -1.05GiB.",
            "INFO 02-26 09:54:05 executor_base.py:111] # cuda blocks: 0, # CPU blocks: 4681",
            "[rank0]: Traceback (most recent call last):",
            '[rank0]:   File "<frozen runpy>", line 198, in _run_module_as_main',
        ],
        GPU,
    ),
    (  # vllm-project/vllm:vllm/v1/core/kv_cache_utils.py: check_enough_kv_cache_memory's format
        "vllm_v1_max_len_kv_cache",
        [
            "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is"
            " needed, which is larger than the available KV cache memory (9.74 GiB). Try increasing"
            " `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
        ],
        GPU,
    ),
    (  # ray-project/ray#47461: a Ray Train worker gone on SIGKILL; the hint's 'SIGSEGV' is no segfault of the job
        "ray_worker_sigkilled",
        [
            "(raylet) A worker died or was killed while executing a task by an unexpected system error. To"
            " troubleshoot the problem, check the logs for the dead worker. RayTask ID:"
            " ffffffffffffffff3fe85624f7ebc8f28d076a0702000000 Worker ID:"
            " fead2dfe78eeee17dd8922f0569f798cf51660782f4222a9acfc8fbe Node ID:"
            " 201f2cc4bc593d830338a3ed774649489389d8695222912df0994e79 Worker IP address: 10.0.7.57 Worker port: 10046"
            " Worker PID: 89513 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a"
            " connection error code 2. End of file. There are some potential root causes. (1) The process is killed"
            " by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is"
            " crashed unexpectedly due to SIGSEGV or other unexpected errors.",
            "(TorchTrainer pid=89392) Worker 0 has failed.",
        ],
        HOST,
    ),
    (  # huaweicloud/dls-example#26: old torch's shared-memory allocator, naming no errno, in a DataLoader worker
        "shm_write_failed_thallocator",
        ["RuntimeError: unable to write to file </torch_76_3625483894> at /pytorch/aten/src/TH/THAllocator.c:383"],
        HOST,
    ),
    (  # xingchensong/TouchNet#100: Ascend's torch_npu allocator in the CUDA allocator's old wording
        "npu_oom",
        [
            "RuntimeError: NPU out of memory. Tried to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity; 49.47 GiB"
            " already allocated; 49.47 GiB current active; 1.32 GiB free; 57.55 GiB reserved in total by PyTorch) If"
            " reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.",
        ],
        GPU,
    ),
    (  # microsoft/onnxruntime#9939: onnxruntime-gpu's CUDA arena cannot extend
        "ort_cuda_arena",
        [
            "`[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running FusedMatMul"
            " node. Name:'MatMul_92_FusedMatMulAndScale' Status Message:"
            " /onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:331 void*"
            " onnxruntime::BFCArena::AllocateRawInternal(size_t, bool) Failed to allocate memory for requested buffer"
            " of size 8388608000`",
        ],
        GPU,
    ),
    (  # DayBreak-u/chineseocr_lite#355: the node ORT's CPU-only NCHWc transformer renamed, so the CPU arena
        "ort_cpu_arena_nchwc",
        [
            "2021-07-08 01:27:55.7944269 [E:onnxruntime:, sequential_executor.cc:339"
            " onnxruntime::SequentialExecutor::Execute] Non-zero status code returned while running Conv node."
            " Name:'347_nchwc' Status Message: D:\\a\\_work\\1\\s\\onnxruntime\\core\\framework\\bfc_arena.cc:330"
            " onnxruntime::BFCArena::AllocateRawInternal Failed to allocate memory for requested buffer of size"
            " 285081600",
        ],
        HOST,
    ),
    (  # InternLandMark/LandMark#65: the shell's 'Killed' on the line of tqdm's bar, which never ends its line
        "killed_after_tqdm_bar",
        [
            "Training with a single process on 1 GPUs.",
            " 33%|█████▋      | 348/1063 [01:08<02:57,  4.03it/s]Killed",
        ],
        HOST,
    ),
    (  # NVIDIA/DIGITS#1362: DIGITS reports the training task's return code, SIGKILL's -9, above Caffe's last lines
        "job_wrapper_error_code_minus_9",
        [
            "ERROR: error code -9",
            "Iteration 0, Testing net (#0)",
            "Test net output #0: loss_bbox = 18.4677 (* 2 = 36.9353 loss)",
            "Test net output #2: mAP = 0",
        ],
        HOST,
    ),
]


@pytest.mark.parametrize(("name", "lines", "expected"), CASES, ids=[c[0] for c in CASES])
def test_family_decides_the_class(tmp_path: Path, name: str, lines: list[str], expected: FailureClass) -> None:
    log = tmp_path / f"{name}.log"
    log.write_text("\n".join(lines) + "\n")
    assert triage(log, workers=1).diagnosis.failure_class is expected


def test_a_healthy_vllm_memory_profile_is_no_oom(tmp_path: Path) -> None:
    """vLLM logs its memory profile on every start; a positive KV-cache reserve is the normal case."""
    log = tmp_path / "vllm_profile.log"
    log.write_text(
        "INFO 02-26 09:54:05 worker.py:267] model weights take 5.20GiB; non_torch_memory takes 0.03GiB; PyTorch"
        " activation peak memory takes 1.42GiB; the rest of the memory reserved for KV Cache is 11.05GiB.\n"
    )
    assert triage(log, workers=1).diagnosis.failure_class is not GPU


def test_slurms_at_some_point_note_yields_to_a_specific_cause(tmp_path: Path) -> None:
    """Jobs that succeed print it too (chaos/slurm#54), so a GPU OOM in the same log decides."""
    log = tmp_path / "cuda_oom_with_slurm_note.log"
    log.write_text(
        "RuntimeError: CUDA error:out of memory\n"  # bluer555/CR-GAN#8
        "slurmstepd: Exceeded step memory limit at some point.\n"  # chaos/slurm#54
    )
    diagnosis = triage(log, workers=1).diagnosis
    assert diagnosis.failure_class is GPU
    assert diagnosis.evidence[0].rule_id == "mem.gpu.cuda_oom"

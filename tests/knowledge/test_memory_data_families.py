"""Message families of memory.yaml, storage.yaml, numerics.yaml and data.yaml, through the whole triage.

Each case is the raw lines a real job printed (the thread in the comment), with the class they must come out as:
the rule beside the lines it competes with there (a traceback's verdict, a launcher's teardown, another family's
words).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.api import triage
from crashcart.knowledge.taxonomy import FailureClass

CASES = [
    (  # real-stanford/flingbot#11: Ray's memory monitor; "OutOfMemoryError" alone would read as the GPU's
        "ray_task_killed",
        [
            "Traceback (most recent call last):",
            '  File "run_sim.py", line 152, in <module>',
            "    remaining_observations=remaining_observations)",
            '  File "/home/zcs/work/train-my-fling/flingbot/utils.py", line 416, in step_env',
            "    for obs, env_id in ray.get(step_retval):",
            '  File "/home/zcs/miniconda3/envs/flingbot/lib/python3.6/site-packages/ray/_private/client_mode_hook.py",'
            " line 105, in wrapper",
            "    return func(*args, **kwargs)",
            '  File "/home/zcs/miniconda3/envs/flingbot/lib/python3.6/site-packages/ray/_private/worker.py", line'
            " 2523, in get",
            "    raise value",
            "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
        ],
        FailureClass.HOST_OOM,
    ),
    (  # WM-PO/WMPO#3: the raylet's own count of the workers it killed
        "raylet_oom_count",
        [
            "(raylet) [2025-12-07 09:57:19,206 E 393463 393463] (raylet) node_manager.cc:3277: 2 Workers (tasks /"
            " actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at ",
        ],
        FailureClass.HOST_OOM,
    ),
    (  # pytorch/xla#3470: the TPU could not reserve HBM for the program
        "tpu_hbm_reserve",
        [
            "2022-04-04 00:27:49.642414: E tensorflow/compiler/xla/xla_client/xla_util.cc:88]   OP_REQUIRES failed"
            " at tpu_execute_op.cc:266 : RESOURCE_EXHAUSTED: Attempting to reserve 6.48G at the bottom of memory."
            " That was not possible. There are 6.78G free, 0B reserved, and 3.33G reservable.",
        ],
        FailureClass.GPU_OOM,
    ),
    (  # crownpku/Somiao-Pinyin#10: bash under zh_CN reports the SIGKILL in Chinese
        "killed_zh_cn",
        [
            "  0%|                                        | 0/16733 [00:00<?, ?b/s]2019-11-05 15:38:21.301871: I"
            " tensorflow/stream_executor/dso_loader.cc:152] successfully opened CUDA library libcublas.so.10.0"
            " locally",
            "已杀死",
        ],
        FailureClass.HOST_OOM,
    ),
    (  # intel/ipex-llm#1486: BigDL's optimizer prints the JVM's Infinity
        "bigdl_loss_infinity",
        [
            "2017-08-20 16:11:42 INFO  DistriOptimizer$:295 - [Epoch 64 738304/1281167][Iteration 45458][Wall Clock"
            " 197336.222587172s] Train 1792 in 4.494659207seconds. Throughput is 398.6954 records/second. Loss is"
            " 1.308916. Current learning rate is 0.046282765356364115. Current weight decay is 1.0E-4. Current"
            " momentum is 0.9.",
            "2017-08-20 16:11:46 INFO  DistriOptimizer$:295 - [Epoch 64 740096/1281167][Iteration 45459][Wall Clock"
            " 197340.717246379s] Train 1792 in 4.006890034seconds. Throughput is 447.22968 records/second. Loss is"
            " Infinity. Current learning rate is 0.046281366472703075. Current weight decay is 1.0E-4. Current"
            " momentum is 0.9.",
        ],
        FailureClass.LOSS_DIVERGENCE,
    ),
    (  # mlcommons/training_results_v4.0#8: NeMo logs the codec's message instead of raising it
        "decode_error_logged_by_a_loader",
        [
            "Sanity Checking DataLoader 0:   0%|          | 0/2 [00:00<?, ?it/s][NeMo E 2024-10-06 02:26:42"
            " text_memmap_dataset:207] Error while fetching sample from memmap: 'utf-8' codec can't decode byte"
            " 0x93 in position 0: invalid start byte",
        ],
        FailureClass.DATA_ERROR,
    ),
    (  # qiufengqijun/mini_qwen#2: parquet shards whose columns differ, as the datasets builder logs it
        "cast_error_logged_by_the_builder",
        [
            "Generating train split: 173687 examples [00:04, 39483.40 examples/s]Failed to read file"
            " '/root/autodl-tmp/mini_qwen/data/pt/accommodation_catering_hotel/chinese/high/rank_00000.parquet'"
            " with error <class 'datasets.table.CastError'>: Couldn't cast",
            "text: string",
            "alnum_ratio: double",
        ],
        FailureClass.DATA_ERROR,
    ),
    (  # deepcs233/Visual-CoT#29: the same error in a notebook, where only IPython's header names it
        "cast_error_in_a_notebook",
        [
            "---------------------------------------------------------------------------",
            "CastError                                 Traceback (most recent call last)",
            "File ~/fm-efs/znliu/miniconda3/lib/python3.13/site-packages/datasets/builder.py:1871, in"
            " ArrowBasedBuilder._prepare_split_single(self, gen_kwargs, fpath, file_format, max_shard_size, job_id)",
            "   1870 try:",
            "-> 1871     writer.write_table(table)",
            "   1872 except CastError as cast_error:",
        ],
        FailureClass.DATA_ERROR,
    ),
    (  # EricFillion/happy-transformer#248: a label of -1 in the CSV, the message hard-wrapped
        "label_outside_the_classes",
        [
            "return torch._C._nn.cross_entropy_loss(input, target, weight, _Reduction.get_enum(reduction),"
            " ignore_index) IndexError: ",
            "Target -1 is out of bounds.",
        ],
        FailureClass.DATA_ERROR,
    ),
    (  # safetensors/safetensors#842: saving to a FUSE mount, Rust's io::Error hard-wrapped
        "enotsup_on_save",
        [
            "safetensors._safetensors_rust.SafetensorError:",
            "Error while serializing: I/O error:",
            "Operation not supported (os error 95)",
        ],
        FailureClass.STORAGE,
    ),
    (  # pytorch/pytorch#58155: c10d's store socket says ENOTCONN after the NVLink fault; no mount broke
        "enotconn_of_a_socket_is_not_storage",
        [
            "terminate called after throwing an instance of 'std::system_error'",
            "  what():  Transport endpoint is not connected",
            "terminate called after throwing an instance of 'c10::Error'",
            "  what():  CUDA error: uncorrectable NVLink error detected during the execution",
        ],
        FailureClass.GPU_HARDWARE,
    ),
    (  # googlecolab/colabtools#5641: the Drive mount went away under the training job
        "enotconn_of_a_mount_is_storage",
        ["OSError: [Errno 107] Transport endpoint is not connected"],
        FailureClass.STORAGE,
    ),
]


@pytest.mark.parametrize(("name", "lines", "expected"), CASES, ids=[c[0] for c in CASES])
def test_family_decides_the_class(tmp_path: Path, name: str, lines: list[str], expected: FailureClass) -> None:
    log = tmp_path / f"{name}.log"
    log.write_text("\n".join(lines) + "\n")
    assert triage(log, workers=1).diagnosis.failure_class is expected


def test_an_oom_in_a_tpu_cores_vector_memory_is_not_the_models(tmp_path: Path) -> None:
    # pytorch/xla#9524: a Pallas kernel's blocks overflow VMEM; the model fits in HBM
    log = tmp_path / "vmem.log"
    log.write_text(
        "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory"
        " in memory space vmem. Used 32.42M of 16.00M vmem. Exceeded vmem capacity by 16.42M\n"
    )
    assert triage(log, workers=1).diagnosis.failure_class is not FailureClass.GPU_OOM

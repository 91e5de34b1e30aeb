"""Code-bug message families in the signatures, read whole through triage (knowledge/signatures/python.yaml):
the frameworks' own words for code that uses them wrongly, beyond PyTorch's.

Every line is one a real program prints: a thread where it was seen, or the source file that prints it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from triage_lines import triage_lines

from crashcart.knowledge.taxonomy import FailureClass


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        # jax-ml/jax:jax/_src/errors.py: a traced value where Python needs a concrete one
        (
            "jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].",
            "python.jax_tracer",
        ),
        (
            "jax.errors.ConcretizationTypeError: Abstract tracer value encountered where concrete value is expected:"
            " traced array with shape int32[]",
            "python.jax_tracer",
        ),
        # jax-ml/jax:jax/_src/lax/lax.py, broadcasting_shape_rule: JAX's shape mismatch
        ("TypeError: add got incompatible shapes for broadcasting: (3,), (4,).", "python.tensor_shape_mismatch"),
        # PyTorch's words, the format pieces `strings` reads from the torch 2.14 wheel's libtorch_cpu.so
        # (pytorch/pytorch:torch/lib/libtorch_cpu.so) and torch/autograd/__init__.py, values filled in
        ("RuntimeError: grad can be implicitly created only for scalar outputs", "python.autograd_misuse"),
        (
            "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 1, 224, 224] to have 3"
            " channels, but got 1 channels instead",
            "python.tensor_shape_mismatch",
        ),
        (
            "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
            "python.tensor_device_dtype_mismatch",
        ),
        # Dao-AILab/flash-attention:csrc/flash_attn/flash_api.cpp, its TORCH_CHECKs on q/k/v (flash-attn 2.8.3's sdist)
        ("RuntimeError: FlashAttention only support fp16 and bf16 data type", "python.tensor_device_dtype_mismatch"),
        (
            "RuntimeError: FlashAttention forward only supports head dimension at most 256",
            "python.tensor_shape_mismatch",
        ),
        # DDP's reducer when a parameter's grad hook fires twice in one iteration (reentrant gradient checkpointing
        # under DDP): wudongming97/TopoMLP#25, and the parameter line of FlagOpen/FlagEmbedding#1155
        (
            "Expected to mark a variable ready only once. This error is caused by one of the following reasons: 1) Use"
            " of a module parameter outside the `forward` function. Please make sure model parameters are not shared"
            " across multiple concurrent forward-backward passes. or try to use _set_static_graph() as a workaround if"
            " this module graph does not change during training loop.2) Reused parameters in multiple reentrant"
            " backward passes.",
            "python.autograd_misuse",
        ),
        (
            "Parameter at index 387 with name hf_model.roberta.encoder.layer.23.output.LayerNorm.weight has been marked"
            " as ready twice. This means that multiple autograd engine  hooks have fired for this particular parameter"
            " during this iteration.",
            "python.autograd_misuse",
        ),
        # DeepSpeed ZeRO's reduce_ipg_grads on a gradient computed twice in one step (modelscope/ms-swift#3128)
        (
            "AssertionError: The parameter 323 has already been reduced.                     Gradient computed twice"
            " for this partition.                     Multiple gradient reduction is currently not supported",
            "python.autograd_misuse",
        ),
        # multiprocessing's spawn children re-running a script with no __main__ guard (Lib/multiprocessing/spawn.py;
        # tinkerhub/ComputerVision-with-PyTorch-Learning-Program#80, a DataLoader with workers on Windows)
        ("        An attempt has been made to start a new process before the", "python.spawn_without_main_guard"),
        # abseil/abseil-py:absl/flags/_flagvalues.py: FLAGS read before app.run parsed them
        (
            "absl.flags._exceptions.UnparsedFlagAccessError: Trying to access flag --config before flags were parsed.",
            "python.distributed_misuse",
        ),
    ],
)
def test_a_frameworks_words_for_misused_code_are_a_code_bug(tmp_path: Path, line: str, rule: str) -> None:
    report = triage_lines(tmp_path, line)
    assert report.diagnosis.failure_class is FailureClass.CODE_BUG
    assert report.diagnosis.evidence[0].rule_id == rule


@pytest.mark.parametrize(
    "line",
    [
        # SeanNaren/deepspeech.pytorch#31: the project's own checkpoint() called with too few arguments, fixed in the
        # project: no framework's class is named, so env.framework_signature_drift stays silent
        "TypeError: checkpoint() takes at least 5 arguments (4 given)",
        # cychai1995/DDPGfD#3: the project's RLTrainer, an attribute no framework's Trainer ever had
        "AttributeError: 'RLTrainer' object has no attribute 'device'",
    ],
)
def test_a_projects_own_signature_or_attribute_is_still_a_code_bug(tmp_path: Path, line: str) -> None:
    report = triage_lines(tmp_path, line)
    assert report.diagnosis.failure_class is FailureClass.CODE_BUG

"""Loss-divergence families of knowledge/signatures/numerics.yaml, through the whole triage.

Each case is raw lines real programs print (the thread or source file in the comment) with the class they must
come out as, beside what competes with them there: the finite losses before the NaN, the traceback a NaN check
raises in user code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.api import triage
from crashcart.knowledge.taxonomy import FailureClass

DIVERGED = FailureClass.LOSS_DIVERGENCE

CASES = [
    (  # xiaohu2015/DeepLearning_tutorials#16: a tutorial's autoencoder whose "cost" turns NaN after one epoch
        "tutorial_cost_nan",
        ["Start training...", "Epoch 0 cost: 71.95003230701798", "Epoch 1 cost: nan", "Epoch 2 cost: nan"],
        DIVERGED,
    ),
    (  # tensorflow/models#3716: a TF 1.x session stops on a NaN histogram, the tensor's name wrapped onto a second line
        "tf_summary_histogram_nan",
        [
            '  File "D:\\Anaconda\\envs\\tensorflow\\lib\\site-packages\\tensorflow\\python\\client\\session.py",'
            " line 1335, in _do_call",
            "    raise type(e)(node_def, op, message)",
            "tensorflow.python.framework.errors_impl.InvalidArgumentError: Nan in summary histogram for:"
            " ModelVars/FeatureExtractor/MobilenetV1/Conv2d_13_poi",
            "ntwise_2_Conv2d_5_3x3_s2_128/BatchNorm/moving_variance",
        ],
        DIVERGED,
    ),
    (  # AIGeeksGroup/3D-R1#16: the 3DETR-style loop skips a few non-finite steps, then terminates the run
        "detr3d_loss_not_finite",
        [
            "Epoch [0/5]; Iter [0/9450]; Loss 10.08; LR 1.00e-06; Iter time 3.72; ETA 9:46:15; Mem 29072.79MB",
            "Loss in not finite. Skip this training step.",
            "Loss in not finite. Skip this training step.",
            "Loss in not finite. Terminate training.",
        ],
        DIVERGED,
    ),
    (  # tensorflow/models#8549: TensorFlow's NanTensorHook after finite steps, then its exception
        "tf_nan_tensor_hook",
        [
            "I0521 14:43:59.269938 140033274427136 basic_session_run_hooks.py:260] loss = 1.3336712, step = 400"
            " (85.220 sec)",
            "E0521 14:44:30.800493 140033274427136 basic_session_run_hooks.py:760] Model diverged with loss = NaN.",
            "",
            "tensorflow.python.training.basic_session_run_hooks.NanLossDuringTrainingError: NaN loss during training.",
        ],
        DIVERGED,
    ),
    (  # bricewalker/Hey-Jetson#7: Keras' TerminateOnNaN, printed after the progress bar of the failing epoch
        "keras_terminate_on_nan",
        [
            "3455/3455 [==============================] - 21350s 6s/step - loss: 356.8575 - val_loss: 237.5635",
            "Epoch 2/30",
            "1883/3455 [===============>..............] - ETA: 2:39:53 - loss: nan     Batch 1882: Invalid loss,"
            " terminating training",
        ],
        DIVERGED,
    ),
    (  # tensorflow/models#5516: the Object Detection API's check_numerics on the total loss
        "tf_check_numerics",
        [
            "INFO:tensorflow:global step 1: loss = 12.6485 (3.511 sec/step)",
            "INFO:tensorflow:Error reported to Coordinator: <class"
            " 'tensorflow.python.framework.errors_impl.InvalidArgumentError'>, LossTensor is inf or nan. : Tensor had"
            " NaN values",
            '\t [[Node: CheckNumerics = CheckNumerics[T=DT_FLOAT, message="LossTensor is inf or nan.",'
            ' _device="/job:localhost/replica:0/task:0/device:CPU:0"](total_loss)]]',
        ],
        DIVERGED,
    ),
    (  # jax-ml/jax#25701: jax_debug_nans re-runs the jitted function and raises in the user's own frame
        "jax_debug_nans",
        [
            "Invalid nan value encountered in the output of a jax.jit function. Calling the de-optimized version.",
            "Traceback (most recent call last):",
            '  File "/usr/local/google/home/mattjj/packages/jax/25701.py", line 6, in <module>',
            "    jnp.log(-10)",
            '  File "/usr/local/google/home/mattjj/packages/jax/jax/_src/lax/lax.py", line 342, in log',
            "    return log_p.bind(x)",
            "           ^^^^^^^^^^^^^",
            "FloatingPointError: invalid value (nan) encountered in log",
        ],
        DIVERGED,
    ),
    (  # pytorch/pytorch:torch/nn/utils/clip_grad.py: clip_grad_norm_ with error_if_nonfinite
        "clip_grad_norm_non_finite",
        [
            "RuntimeError: The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be"
            " clipped. To disable this error and scale the gradients by the non-finite norm anyway, set"
            " `error_if_nonfinite=False`",
        ],
        DIVERGED,
    ),
    (  # Lightning-AI/pytorch-lightning:src/lightning/pytorch/loops/utilities.py: check_finite_loss's format
        "lightning_nonfinite_training_step_loss",
        ["ValueError: The loss returned in `training_step` is tensor(nan, device='cuda:0', grad_fn=<DivBackward0>)."],
        DIVERGED,
    ),
    (  # Lightning-AI/pytorch-lightning:src/lightning/fabric/utilities/spike.py: TrainingSpikeException's format
        "fabric_spike_detection",
        ["lightning.fabric.utilities.spike.TrainingSpikeException: Training spike detected in batch 1843"],
        DIVERGED,
    ),
    (  # Lightning-AI/pytorch-lightning:src/lightning/pytorch/callbacks/early_stopping.py: improved, then stopped
        "early_stopping_nonfinite_metric",
        [
            "Metric val_loss improved by 0.021 >= min_delta = 0.0. New best score: 0.412",
            "Monitored metric val_loss = tensor(nan, device='cuda:0') is not finite. Previous best value was 0.412."
            " Signaling Trainer to stop.",
        ],
        DIVERGED,
    ),
    (  # facebookresearch/fairseq#1215: fairseq's minimum-loss-scale message pasted into its own source line
        "fairseq_min_loss_scale_garbled",
        [
            '  File "/home/sumegha/fairseq/fairseq/optim/fp16_optimizer.py", line 189, in clip_grad_norm',
            "    ).format(self.args. scale reached (0.0001). Your loss is probably exploding. Try lowering the learning"
            " rate, using gradient clipping or increasing the batch size.min_loss_scale))",
            "FloatingPointError: Minimum loss.",
        ],
        DIVERGED,
    ),
    (  # lizhou-cs/JointNLT#18 (botaoye/OSTrack:lib/train/actors/ostrack.py): a tracker's NaN check on its boxes
        "tracker_network_outputs_nan",
        ["ValueError:Network outputs is NAN! Stop Training"],
        DIVERGED,
    ),
    (  # JinmiaoChenLab/scTM#6: torch.distributions refusing a Normal whose loc is NaN, inside a ValueError
        "distribution_nan_loc",
        [
            "ValueError: Expected parameter loc (Parameter of shape (1,)) of distribution Normal(loc: Parameter"
            " containing:",
            "tensor([nan], device='cuda:0', requires_grad=True), scale: tensor([nan], device='cuda:0',"
            " grad_fn=<AddBackward0>)) to satisfy the constraint Real(), but found invalid values:",
            "Parameter containing:",
            "tensor([nan], device='cuda:0', requires_grad=True)",
        ],
        DIVERGED,
    ),
    (  # Chiaraplizz/ST-TR#5: tensorboardX's warning on every NaN value the run logs, after 20 normal epochs
        "tensorboardx_nonfinite_scalars",
        [
            "WARNING:root:NaN or Inf found in input tensor.",
            "WARNING:root:NaN or Inf found in input tensor.",
            "WARNING:root:NaN or Inf found in input tensor.",
        ],
        DIVERGED,
    ),
    (  # PaddlePaddle/PaddleSlim#1582: Paddle prints its fetched loss as a one-element array, finite then NaN
        "paddle_bracketed_loss",
        [
            "2022-12-08 17:57:31,371-INFO: Total iter: 0, epoch: 0, batch: 0, loss: [10.000229]",
            "2022-12-08 17:57:32,672-INFO: Total iter: 10, epoch: 0, batch: 10, loss: [nan]",
            "2022-12-08 17:57:33,992-INFO: Total iter: 20, epoch: 0, batch: 20, loss: [nan]",
        ],
        DIVERGED,
    ),
]


def test_a_distribution_refusing_finite_values_is_no_divergence(tmp_path: Path) -> None:
    """BayraktarLab/cell2location#384: the values printed are finite, so some other constraint failed."""
    log = tmp_path / "finite_loc.log"
    log.write_text(
        "ValueError: Expected parameter loc (Parameter of shape (21, 14456)) of distribution Normal(loc:"
        " torch.Size([21, 14456]), scale: torch.Size([21, 14456])) to satisfy the constraint Real(), but found invalid"
        " values:\nParameter containing:\n"
    )
    assert triage(log, workers=1).diagnosis.failure_class is not DIVERGED


@pytest.mark.parametrize(("name", "lines", "expected"), CASES, ids=[c[0] for c in CASES])
def test_family_decides_the_class(tmp_path: Path, name: str, lines: list[str], expected: FailureClass) -> None:
    log = tmp_path / f"{name}.log"
    log.write_text("\n".join(lines) + "\n")
    assert triage(log, workers=1).diagnosis.failure_class is expected


def test_early_stoppings_improvement_is_no_divergence(tmp_path: Path) -> None:
    """Lightning-AI/pytorch-lightning:src/lightning/pytorch/callbacks/early_stopping.py logs it on healthy runs."""
    log = tmp_path / "early_stopping_improved.log"
    log.write_text("Metric val_loss improved by 0.021 >= min_delta = 0.0. New best score: 0.412\n")
    assert triage(log, workers=1).diagnosis.failure_class is not DIVERGED

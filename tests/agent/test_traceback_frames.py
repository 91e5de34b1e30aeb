"""Whose a frame is, on frames of real tracebacks (their paths as the threads show them)."""

from __future__ import annotations

from crashcart.agent.traceback_frames import defines_class, is_library, is_stdlib, is_user
from crashcart.parsers.models import Frame

# alibaba/RecIS#15: RecIS's Trainer, raising in its own module
RECIS = Frame(
    file="/usr/local/lib/python3.10/dist-packages/recis/framework/trainer.py",
    line=354,
    function="train_and_evaluate",
    source="loop_fn = self._train_eval_loop",
    package="recis",
)
# huggingface/trl#3872: trl's SFTTrainer, from a source checkout
SFT = Frame(file="/app/trl/trainer/sft_trainer.py", line=544, function="__init__", source="super().__init__(")
# pytorch/pytorch#152308: nn.Module's __getattr__, looking up an attribute of the user's class A
MODULE = Frame(
    file="xxx/python3.8/site-packages/torch/nn/modules/module.py",
    line=1729,
    function="__getattr__",
    package="torch",
)


def test_a_class_lives_in_the_module_named_after_it() -> None:
    assert defines_class(RECIS, "Trainer")
    assert defines_class(SFT, "SFTTrainer")
    assert defines_class(MODULE, "Module")


def test_a_subclass_or_another_class_does_not() -> None:
    assert not defines_class(MODULE, "A")
    assert not defines_class(RECIS, "XGRPOTrainer")  # dhcode-cpp/X-R1#51: a project's subclass of trl's trainer


def test_installed_packages_are_libraries_and_a_checkout_is_the_users() -> None:
    assert is_library(RECIS) and not is_user(RECIS) and not is_stdlib(RECIS)
    assert is_user(SFT)

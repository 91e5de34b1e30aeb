"""agent/traceback_api.py: an attribute missing on a framework's object is the framework's release, one missing on
the project's own class the project's bug; the real traceback beside the verdict.

Records are made from the text by tests/support/traceback_records.py.
"""

from __future__ import annotations

import pytest
from traceback_records import traceback_from

from crashcart.agent.tracebacks import judge
from crashcart.knowledge.taxonomy import FailureClass

ENV, CODE = FailureClass.ENVIRONMENT, FailureClass.CODE_BUG

CASES = [
    (
        "deepspeedai/DeepSpeed#4731",  # a float where DeepSpeed expected its mpu: arguments shifted, a bug
        """
  File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/zero/stage3.py", line 253, in __init__
    self.model_parallel_group = mpu.get_model_parallel_group()
AttributeError: 'float' object has no attribute 'get_model_parallel_group'
""",
        CODE,
        "traceback.wrong_type",
    ),
    (
        "dhcode-cpp/X-R1#72",  # the project's XGRPOTrainer reads a GRPOConfig field an older trl lacks
        """
[rank0]: Traceback (most recent call last):
[rank0]:   File "/home/nydeng/X-R1_grpo/src/x_r1/grpo.py", line 279, in <module>
[rank0]:     main(script_args, training_args, model_args )
[rank0]:   File "/home/nydeng/X-R1_grpo/src/x_r1/grpo.py", line 221, in main
[rank0]:     trainer = XGRPOTrainer(
[rank0]:               ^^^^^^^^^^^^^
[rank0]:   File "/home/nydeng/X-R1_grpo/src/x_r1/x_grpo_trainer.py", line 296, in __init__
[rank0]:     self.num_iterations = args.num_iterations  # = 𝜇 in the GRPO paper
[rank0]:                           ^^^^^^^^^^^^^^^^^^^
[rank0]: AttributeError: 'GRPOConfig' object has no attribute 'num_iterations'. Did you mean: 'num_generations'?
""",
        ENV,
        "traceback.api_mismatch",
    ),
    (
        "kakaobrain/nerf-factory#7",  # a LightningDataModule's hook reads the Trainer Lightning attached to it
        """
  File "/home/mishig/NeRF-Factory/src/data/interface.py", line 60, in setup
    self.num_devices = self.trainer.num_devices
AttributeError: 'Trainer' object has no attribute 'num_devices'
""",
        ENV,
        "traceback.api_mismatch",
    ),
    (
        "bghira/SimpleTuner#1383",  # the project's own model class, fixed in the project
        """
Traceback (most recent call last):
File "/SimpleTuner/train.py", line 71, in <module>
trainer.train()
File "/SimpleTuner/helpers/training/trainer.py", line 2063, in train
model_pred = self.model_predict(
File "/SimpleTuner/helpers/training/trainer.py", line 1744, in model_predict
model_pred = self.model.model_predict(
File "/SimpleTuner/helpers/models/hidream/model.py", line 175, in model_predict
H // self.transformer.config.patch_size,
AttributeError: 'HiDream' object has no attribute 'transformer'
""",
        CODE,
        "traceback.user_code_bug",
    ),
    (
        "huixiancheng/CENet#11",  # a 'Trainer' of the project's own: "just caused by code missing"
        """
Traceback (most recent call last):
  File "train.py", line 133, in <module>
    trainer.train()
  File "/home/buaa/project_liaozhihao/CENet-main/modules/trainer.py", line 336, in train
    Trainer.save_to_log(logdir=self
AttributeError: type object 'Trainer' has no attribute 'save_to_log'
""",
        CODE,
        "traceback.user_code_bug",
    ),
    (
        "cychai1995/DDPGfD#3",  # the project's RLTrainer reads self.device before setting it
        """
Traceback (most recent call last):
  File "train.py", line 510, in <module>
    main()
  File "train.py", line 430, in main
    trainer = RLTrainer(conf_path, args.eval)
  File "train.py", line 83, in __init__
    self.agent = DDPGfDAgent(self.full_conf.agent_config, self.device)
AttributeError: 'RLTrainer' object has no attribute 'device'
""",
        CODE,
        "traceback.user_code_bug",
    ),
]


@pytest.mark.parametrize(("source", "text", "cls", "rule"), CASES, ids=[c[0] for c in CASES])
def test_whose_object_lacks_the_attribute_decides(source: str, text: str, cls: FailureClass, rule: str) -> None:
    verdict = judge(traceback_from(text))
    assert (verdict.failure_class, verdict.rule_id) == (cls, rule), verdict.reason


# The installed stack and the code are different releases, whatever the exception: a copy of a library's internals
# in the project's tree, a package's loader that finds no compiled library of its own, transformers' model-type
# registry that does not know the checkpoint's type, a Trainer attribute of another release.
DRIFT_CASES = [
    (
        # A DataLoader worker's re-raise around the copy: the worker's lines are dbolya/yolact#644's, the copy's
        # frame and exception mbzuai-oryx/UniMed-CLIP#2's. The copy decides before the data rules read the worker.
        "yolact#644+UniMed-CLIP#2",
        """
Traceback (most recent call last):
  File "/usr/local/lib/python3.7/dist-packages/torch/_utils.py", line 394, in reraise
    raise self.exc_type(msg)
KeyError: Caught KeyError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "/usr/local/lib/python3.7/dist-packages/torch/utils/data/_utils/worker.py", line 178, in _worker_loop
    data = fetcher.fetch(index)
  File "/data/UniMed-CLIP/src/training/data.py", line 271, in group_by_keys_nothrow
    fname, value = filesample["fname"], filesample["data"]
KeyError: 'fname'
""",
        ENV,
        "traceback.copied_internals",
    ),
    (
        "mbzuai-oryx/UniMed-CLIP#2",  # the project's copy of webdataset's group_by_keys under webdataset 0.2.96+
        """
File "/data/UniMed-CLIP/src/training/data.py", line 271, in group_by_keys_nothrow
fname, value = filesample["fname"], filesample["data"]
KeyError: 'fname'
""",
        ENV,
        "traceback.copied_internals",
    ),
    (
        "NVIDIA/TransformerEngine#1541",  # TE's wheel without its pytorch extension: _load_library's glob is empty
        """
Traceback (most recent call last):
  File "/openbayes/home/Test/env/wan211/lib/python3.10/site-packages/transformer_engine/pytorch/__init__.py", line 52, in _load_library
    so_path = next(so_dir.glob(f"{module_name}.*.{extension}"))
StopIteration
""",  # noqa: E501
        ENV,
        "traceback.native_library",
    ),
    (
        "yangjianxin1/Firefly#236",  # the pinned transformers predates the checkpoint's model type
        """
  File "/opt/conda/lib/python3.8/site-packages/transformers/models/auto/configuration_auto.py", line 748, in __getitem__
    raise KeyError(key)
KeyError: 'gemma'
""",
        ENV,
        "traceback.model_type_unknown",
    ),
    (
        "HKU-MedAI/MGCA#10",  # Lightning's Trainer.num_devices, which pytorch_lightning 1.5 does not have yet
        """
Traceback (most recent call last):
  File "mgca_finetuner.py", line 121, in <module>
    cli_main()
  File "mgca_finetuner.py", line 112, in cli_main
    tuner.training_steps = tuner.num_training_steps(trainer, datamodule)
  File "/vol/research/fmodel_medical/people/umar/mm_cxr/repos_lit_review/MGCA/mgca/models/ssl_finetuner.py", line 144, in num_training_steps
    effective_batch_size = trainer.accumulate_grad_batches * trainer.num_devices
AttributeError: 'Trainer' object has no attribute 'num_devices'
""",  # noqa: E501
        ENV,
        "traceback.api_mismatch",
    ),
    (
        "zai-org/ChatGLM2-6B#186",  # ptuning's copy of transformers' Trainer loop calling the installed helpers
        """
Traceback (most recent call last):
  File "/home/xia/github/ChatGLM2-6B/ptuning/main.py", line 411, in <module>
    main()
  File "/home/xia/github/ChatGLM2-6B/ptuning/main.py", line 350, in main
    train_result = trainer.train(resume_from_checkpoint=checkpoint)
  File "/home/xia/github/ChatGLM2-6B/ptuning/trainer.py", line 1635, in train
    return inner_training_loop(
  File "/home/xia/github/ChatGLM2-6B/ptuning/trainer.py", line 1981, in _inner_training_loop
    self._maybe_log_save_evaluate(tr_loss, model, trial, epoch, ignore_keys_for_eval)
  File "/home/xia/github/ChatGLM2-6B/ptuning/trainer.py", line 2220, in _maybe_log_save_evaluate
    logs["learning_rate"] = self._get_learning_rate()
  File "/home/xia/miniconda3/envs/chatglm/lib/python3.10/site-packages/transformers/trainer_pt_utils.py", line 841, in _get_learning_rate
    if self.is_deepspeed_enabled:
AttributeError: 'Seq2SeqTrainer' object has no attribute 'is_deepspeed_enabled'
""",  # noqa: E501
        ENV,
        "traceback.api_mismatch",
    ),
]


@pytest.mark.parametrize(("source", "text", "cls", "rule"), DRIFT_CASES, ids=[c[0] for c in DRIFT_CASES])
def test_a_stack_of_another_release_than_the_code_is_the_environment(
    source: str, text: str, cls: FailureClass, rule: str
) -> None:
    verdict = judge(traceback_from(text))
    assert (verdict.failure_class, verdict.rule_id) == (cls, rule), verdict.reason


IMPORT_CASES = [
    (
        "SemaphoreSolutions/s4-clarity-lib#36",  # the installed package's module body under Python 3.10
        """
>>> from s4.clarity.scripts import TriggeredStepEPP
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
  File "/opt/pkg/lib/python3.10/site-packages/s4/clarity/__init__.py", line 12, in <module>
    from ._internal.lazy_property import lazy_property
  File "/opt/pkg/lib/python3.10/site-packages/s4/clarity/_internal/__init__.py", line 6, in <module>
    from .fields import FieldsMixin
  File "/opt/pkg/lib/python3.10/site-packages/s4/clarity/_internal/fields.py", line 163, in <module>
    class FieldsDict(collections.MutableMapping):
AttributeError: module 'collections' has no attribute 'MutableMapping'
""",
    ),
    (
        "st1vms/unofficial-claude-api#11",  # 'SessionData | None' evaluated at import under Python 3.9
        """
>>> from claude2_api import *
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
  File "/usr/local/lib/python3.9/dist-packages/claude2_api/__init__.py", line 2, in <module>
    from .client import (
  File "/usr/local/lib/python3.9/dist-packages/claude2_api/client.py", line 21,
in <module>
    from .session import SessionData
  File "/usr/local/lib/python3.9/dist-packages/claude2_api/session.py", line 41, in <module>
    def get_session_data(profile: str = "", quiet: bool = False) -> SessionData
| None:
TypeError: unsupported operand type(s) for |: 'type' and 'NoneType'
""",
    ),
]


@pytest.mark.parametrize(("source", "text"), IMPORT_CASES, ids=[c[0] for c in IMPORT_CASES])
def test_an_installed_package_failing_at_its_own_import_is_the_environment(source: str, text: str) -> None:
    verdict = judge(traceback_from(text))
    assert (verdict.failure_class, verdict.rule_id) == (ENV, "traceback.import_time_failure"), verdict.reason

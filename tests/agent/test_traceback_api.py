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

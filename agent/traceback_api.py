"""The traceback rule for TypeError and AttributeError: a library's API that changed under the user's code
(environment), or the user's own bug.

Where the exception was raised and on whose object decides: a TypeError raised in transformers' frame that the
user's line called with a keyword it no longer takes is a version mismatch; an attribute missing on a class a
framework ships (trl's GRPOConfig, transformers' TrainingArguments) or on the trainer a framework attached to the
user's module is one too; the user's own class missing an attribute it never had is a bug.
"""

from __future__ import annotations

import re

from crashcart.agent.traceback_findings import LIKELY, OWN_CODE, Finding
from crashcart.agent.traceback_frames import (
    DISPATCH,
    defines_class,
    is_library,
    is_user,
    raiser,
    short_type,
    user_modules,
)
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.parsers.models import Frame, RaisedException, Traceback

_SIGNATURE_MISMATCH = re.compile(
    r"(\w[\w.]*)\(\) (?:got an unexpected keyword argument|missing \d+ required (?:positional|keyword-only)"
    r"|takes (?:from )?\d+|got multiple values for argument)"
)
_MODULE_ATTR = re.compile(r"module '([\w.]+)' has no attribute")
_OBJECT_ATTR = re.compile(
    r"'super' object has no attribute|(?:type object '|')(?P<owner>[\w.]+)'(?: object)? has no attr"
)
_BUILTIN_TYPES = frozenset(
    {"NoneType", "str", "int", "float", "bool", "list", "dict", "tuple", "set", "bytes", "function", "method"}
)
_LIBRARY_CALL = re.compile(
    r"\b(?:torch|nn|F|np|numpy|transformers|deepspeed|accelerate|datasets|peft|trl|tf|jax|megatron|apex|timm"
    r"|torchvision|pl|lightning)\.\w"
)


def api_drift(exc: RaisedException, tb: Traceback) -> Finding | None:
    """TypeError/AttributeError: a library's API that changed under the user's code, or the user's own bug."""
    if short_type(exc) not in ("TypeError", "AttributeError", "ModuleAttributeError"):
        return None
    raised = raiser(exc.frames)
    if raised is None:
        return None
    mismatch = _SIGNATURE_MISMATCH.search(exc.message)
    module = _MODULE_ATTR.search(exc.message)
    owner = _OBJECT_ATTR.search(exc.message)
    if owner is not None and _framework_object(owner, raised):
        return Finding("api_mismatch", FailureClass.ENVIRONMENT, LIKELY, "a framework's object lacks an attribute")
    if is_library(raised):
        if owner is not None and owner.group("owner") in _BUILTIN_TYPES:  # 'float' object has no attribute ...:
            return Finding("wrong_type", FailureClass.CODE_BUG, LIKELY, "a value of the wrong type reached a library")
        if owner is not None and _reads_own_attribute(owner, exc, raised):
            return Finding("library_bug", FailureClass.CODE_BUG, LIKELY, "a library reads an attribute its class lacks")
        if mismatch or module or owner:
            return Finding("api_mismatch", FailureClass.ENVIRONMENT, LIKELY, "API/version mismatch")
        return None
    library = (mismatch is not None and _callee_is_library(mismatch, exc, raised)) or (
        module is not None and module.group(1).split(".")[0] not in user_modules(exc.frames)
    )
    if library or (owner is not None and _owner_is_library(owner, exc)):
        return Finding("api_mismatch", FailureClass.ENVIRONMENT, OWN_CODE, "API/version mismatch")
    return Finding("user_code_bug", FailureClass.CODE_BUG, OWN_CODE, "a bug in the user's code")


def _callee_is_library(mismatch: re.Match[str], exc: RaisedException, raised: Frame) -> bool:
    """The user's line called a library's class or function with a signature it no longer (or not yet) has."""
    callee = mismatch.group(1).split(".")
    name = callee[-2] if len(callee) > 1 and callee[-1] == "__init__" else callee[-1]
    if name in {f.function for f in exc.frames if is_user(f)}:
        return False
    return name[:1].isupper() or bool(_LIBRARY_CALL.search(raised.source or ""))


# Python 3.10+ names the attribute it would have found: "... has no attribute '_train_eval_loop'. Did you mean:
# '_train_evaluate_loop'?"
_NEAR_MISS = re.compile(r"has no attribute '(\w+)'\. Did you mean: '\w+'\?")


def _reads_own_attribute(owner: re.Match[str], exc: RaisedException, raised: Frame) -> bool:
    """A library's method reads self.<name> that its own class (defined in the raising file) lacks, while the
    class has a near namesake: the package is out of step with itself (a rename half done), not with the
    user's code or another package."""
    name, near = owner.group("owner"), _NEAR_MISS.search(exc.message)
    if name is None or near is None or f"self.{near.group(1)}" not in (raised.source or ""):
        return False
    return defines_class(raised, name.rsplit(".", 1)[-1])


# Classes a framework ships for users to subclass or fill (trl's trainers and their configs, transformers'
# TrainingArguments, Hydra's HydraConfig): a missing attribute on one is another release of the framework than
# the code was written for (dhcode-cpp/X-R1#72: trl older than the code; facebookresearch/denoiser#113: hydra).
# A project's own 'Trainer' or 'RLTrainer' is not among them (cychai1995/DDPGfD#3, huixiancheng/CENet#11).
_FRAMEWORK_CLASS = re.compile(
    r"\w*(?:(?:GRPO|SFT|DPO|PPO|KTO|ORPO|CPO|RLOO|Reward|GKD|Online(?:DPO)?)(?:Trainer|Config)|Seq2SeqTrainer"
    r"|TrainingArguments)|HydraConfig"
)
# A LightningModule's or LightningDataModule's hook reaching the Trainer the framework attached to it
# ("self.num_devices = self.trainer.num_devices", kakaobrain/nerf-factory#7; "self.trainer.proc_rank").
_ATTACHED_TRAINER = re.compile(r"\bself\.trainer\.(\w+)")


def _framework_object(owner: re.Match[str], raised: Frame) -> bool:
    """The missing attribute was looked up on an object of a framework's own classes, or on the trainer a
    framework attached to the user's module: the code and the installed framework are different releases."""
    name = owner.group("owner")
    if name is None:
        return False
    if _FRAMEWORK_CLASS.fullmatch(name.rsplit(".", 1)[-1]):
        return True
    attached = _ATTACHED_TRAINER.search(raised.source or "")
    return name.rsplit(".", 1)[-1] == "Trainer" and attached is not None and is_user(raised)


def _owner_is_library(owner: re.Match[str], exc: RaisedException) -> bool:
    """The missing attribute was looked up on a library's object: a parent class (super) or a class the
    library's own frames name."""
    name = owner.group("owner")
    if name is None:
        return True  # 'super' object: the library's parent class lacks the method
    if name in _BUILTIN_TYPES:
        return False
    return any(name in (f.source or "") for f in exc.frames if is_library(f) and f.function not in DISPATCH)

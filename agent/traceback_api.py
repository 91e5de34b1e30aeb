"""The traceback rules for a library's API that changed under the user's code (environment), or the user's own bug.

Where the exception was raised and on whose object decides: a TypeError raised in transformers' frame that the
user's line called with a keyword it no longer takes is a version mismatch; an attribute missing on a class a
framework ships (trl's GRPOConfig, transformers' TrainingArguments) or on the trainer a framework attached to the
user's module is one too; the user's own class missing an attribute it never had is a bug.

More shapes say the installed stack and the code are different releases, whatever the exception: a copy of a
library's internals in the user's tree (webdataset's group_by_keys, transformers' _inner_training_loop) failing on
what the library has since changed; a package's own loader not finding its compiled library; transformers' auto
classes not knowing a checkpoint's model type; and an installed package whose module body fails while imported.
"""

from __future__ import annotations

import re

from crashcart.agent.traceback_findings import LIKELY, OWN_CODE, Finding
from crashcart.agent.traceback_frames import (
    DISPATCH,
    defines_class,
    is_library,
    is_user,
    path,
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
    """A library's API that changed under the user's code, or the user's own bug (TypeError/AttributeError)."""
    found = native_library(exc, tb) or model_registry(exc, tb) or copied_internals(exc, tb)
    return found or library_import(exc, tb) or _api_use(exc)


def _api_use(exc: RaisedException) -> Finding | None:
    """TypeError/AttributeError: a library's API that changed under the user's code, or the user's own bug."""
    if short_type(exc) not in ("TypeError", "AttributeError", "ModuleAttributeError"):
        return None
    raised = raiser(exc.frames)
    if raised is None:
        return None
    mismatch = _SIGNATURE_MISMATCH.search(exc.message)
    module = _MODULE_ATTR.search(exc.message)
    owner = _OBJECT_ATTR.search(exc.message)
    if owner is not None and _framework_object(owner, raised, exc):
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
# Attributes the frameworks' Trainer classes had in some releases and not in others, which a project's subclass
# (or a copy of the framework's loop in it) reads on self, or a script reads on Lightning's Trainer: transformers
# dropped deepspeed, do_grad_scaling, use_cuda_amp, sharded_ddp (SeungoneKim/SICK_Summarization#4) and added
# accelerator, is_deepspeed_enabled, is_fsdp_enabled, model_accepts_loss_kwargs; Lightning added num_devices and
# device_ids in 1.6 (HKU-MedAI/MGCA#10, kakaobrain/nerf-factory#7) and removed the rest in 1.8-2.0
# (Lightning-AI/pytorch-lightning:src/pytorch_lightning/_graveyard/trainer.py). The same list is
# env.trainer_attribute_drift's in knowledge/signatures/environment.yaml.
TRAINER_DRIFT_ATTRIBUTES = frozenset(
    {"deepspeed", "do_grad_scaling", "use_cuda_amp", "use_cpu_amp", "sharded_ddp", "is_deepspeed_enabled"}
    | {"is_fsdp_enabled", "is_fsdp_xla_enabled", "accelerator", "model_accepts_loss_kwargs", "num_devices"}
    | {"device_ids", "accelerator_backend", "root_gpu", "num_gpus", "training_type_plugin", "accelerator_connector"}
    | {"data_parallel_device_ids", "tpu_cores", "num_processes", "progress_bar_dict", "lr_schedulers", "use_amp"}
    | {"lr_scheduler_configs", "weights_save_path", "train_loop"}
)
_MISSING_ATTRIBUTE = re.compile(r"has no attribute '(\w+)'")
# A LightningModule's or LightningDataModule's hook reaching the Trainer the framework attached to it
# ("self.num_devices = self.trainer.num_devices", kakaobrain/nerf-factory#7; "self.trainer.proc_rank").
_ATTACHED_TRAINER = re.compile(r"\bself\.trainer\.(\w+)")


def _framework_object(owner: re.Match[str], raised: Frame, exc: RaisedException) -> bool:
    """The missing attribute was looked up on an object of a framework's own classes, on the trainer a framework
    attached to the user's module, or is one a framework's Trainer had in another release: the code and the
    installed framework are different releases."""
    name = owner.group("owner")
    if name is None:
        return False
    short = name.rsplit(".", 1)[-1]
    if _FRAMEWORK_CLASS.fullmatch(short):
        return True
    missing = _MISSING_ATTRIBUTE.search(exc.message)
    if short.endswith("Trainer") and missing is not None and missing.group(1) in TRAINER_DRIFT_ATTRIBUTES:
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


# A package's own loader of its compiled part: Transformer Engine's _load_library globs for its .so and raises
# StopIteration when the wheel came without it (NVIDIA/TransformerEngine#1541, NVIDIA/Megatron-LM#1274); others
# name theirs load_library, _load_lib, _load_shared_library, _get_shared_object_file. Whatever it raises there,
# the installed package lacks, or cannot load, a library its build should have brought.
_NATIVE_LOADER = re.compile(
    r"_*(?:load|find|get|locate)_(?:\w+_)?(?:librar(?:y|ies)|lib|libs|shared_objects?|shared_object_files?|so|dll)"
)


def native_library(exc: RaisedException, tb: Traceback) -> Finding | None:
    """Raised inside an installed package's loader of its own compiled library: the install lacks it or it does
    not load (a wheel without its framework extension, one built for another torch or CUDA)."""
    raised = raiser(exc.frames)
    if raised is None or not is_library(raised) or not _NATIVE_LOADER.fullmatch(raised.function or ""):
        return None
    return Finding("native_library", FailureClass.ENVIRONMENT, LIKELY, "a package's compiled library does not load")


# transformers' AutoConfig looks the checkpoint's model_type up in CONFIG_MAPPING (models/auto/configuration_auto.py)
# and, before 4.36, raised a bare KeyError for a type the installed release does not know (yangjianxin1/Firefly#236's
# "KeyError: 'gemma'" under the transformers its requirements pin); later releases say "does not recognize this
# architecture" (env.version_conflict).
_MODEL_REGISTRY = re.compile(r"/transformers/models/auto/configuration_auto\.py$")


def model_registry(exc: RaisedException, tb: Traceback) -> Finding | None:
    """A KeyError of transformers' model-type registry: the checkpoint is newer than the installed transformers."""
    raised = raiser(exc.frames)
    if short_type(exc) != "KeyError" or raised is None or not is_library(raised):
        return None
    if not _MODEL_REGISTRY.search(path(raised)):
        return None
    return Finding("model_type_unknown", FailureClass.ENVIRONMENT, LIKELY, "the installed library lacks a model type")


# Internals of libraries that projects copy into their own tree or override in a subclass, and that the libraries
# have changed between releases, so that the copy fails against the installed one: webdataset's tar iterators
# (webdataset/webdataset:webdataset/tariterators.py; 0.2.96's eof_value made OpenCLIP's copied
# group_by_keys_nothrow fail with KeyError: 'fname', mbzuai-oryx/UniMed-CLIP#2, mlfoundations/open_clip#935) and
# the private steps of transformers' Trainer loop (huggingface/transformers:src/transformers/trainer.py;
# ChatGLM2-6B's ptuning/trainer.py, zai-org/ChatGLM2-6B#186), by names only the library uses. Public hooks a
# framework asks users to write (training_step, compute_loss, forward) and names a project's own trainer gives
# its steps (_save_checkpoint, _wrap_model) are not among them: there the code is the user's own.
_LIBRARY_INTERNALS = re.compile(
    r"(?:group_by_keys|tar_file_expander|tar_file_iterator|tarfile_samples|tarfile_to_samples|url_opener)(?:_nothrow)?"
    r"|_inner_training_loop|_maybe_log_save_evaluate|_load_best_model|_load_rng_state|_get_train_sampler"
    r"|_get_eval_sampler|_remove_unused_columns|_set_signature_columns_if_needed|_load_optimizer_and_scheduler"
    r"|_save_optimizer_and_scheduler|_issue_warnings_after_load|_nested_gather|_pad_across_processes"
    r"|_rotate_checkpoints|_sorted_checkpoints|_tune_save_checkpoint|_hp_search_setup"
)
# What a copy out of step with its library raises: a key, an attribute or an argument the library no longer has.
# A ValueError there is the library's own check of the data (a duplicate file name in a tar shard).
_DRIFT_TYPES = frozenset({"KeyError", "AttributeError", "TypeError"})


def copied_internals(exc: RaisedException, tb: Traceback) -> Finding | None:
    """Raised in the user's copy (or override) of a library's internal function: the copy and the installed
    library are different releases."""
    raised = raiser(exc.frames)
    if raised is None or not is_user(raised) or short_type(exc) not in _DRIFT_TYPES:
        return None
    if not _LIBRARY_INTERNALS.fullmatch(raised.function or ""):
        return None
    return Finding("copied_internals", FailureClass.ENVIRONMENT, LIKELY, "a copy of a library's internals is stale")


# What an installed package's module raises at its own top level, while it is being imported, when the interpreter
# or the packages beside it are not the ones it was made for: 3.10 syntax under Python 3.9 (TypeError at a
# 'X | None' annotation, st1vms/unofficial-claude-api#11), a name another package or Python dropped
# (AttributeError, NameError), a syntax of a newer Python. A ValueError, KeyError or RuntimeError there is as
# often the package checking its settings (an environment variable), so those are left to the other rules.
_IMPORT_TIME_TYPES = frozenset({"TypeError", "AttributeError", "NameError", "SyntaxError"})


def library_import(exc: RaisedException, tb: Traceback) -> Finding | None:
    """Raised by an installed package's module body while it was imported: the package does not fit the
    interpreter or the packages beside it."""
    raised = raiser(exc.frames)
    if raised is None or not is_library(raised) or raised.function != "<module>":
        return None
    if short_type(exc) not in _IMPORT_TIME_TYPES:
        return None
    return Finding("import_time_failure", FailureClass.ENVIRONMENT, LIKELY, "an installed package fails at import")

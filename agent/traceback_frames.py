"""Whose a traceback's frames are: the user's own code, an installed package, or the standard library.

The judgements of traceback_rules.py turn on where an exception was raised and who called there: a TypeError
raised in transformers' frame that train.py called is an API mismatch, the same one raised in train.py a bug.
These helpers answer those questions for a list of frames, outermost first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crashcart.parsers.models import Frame, RaisedException

# Library frames that only pass a call or an attribute look-up along (nn.Module's __getattr__ and _call_impl):
# the exception belongs to whoever made the call.
DISPATCH = frozenset({"__getattr__", "__getattribute__", "_call_impl", "_wrapped_call_impl"})

# Generic names projects give their own packages; never the name of a library a job installs.
_PROJECT_MODULES = ("utils", "util", "models", "model", "src", "modules", "common", "lib", "config", "configs")


def path(frame: Frame) -> str:
    return frame.file.replace("\\", "/")


def basename(frame: Frame) -> str:
    return path(frame).rsplit("/", 1)[-1]


def is_stdlib(frame: Frame) -> bool:
    return frame.package == "python" or frame.file.startswith("<frozen")


def is_user(frame: Frame) -> bool:
    return frame.package is None and not is_stdlib(frame)


def is_library(frame: Frame) -> bool:
    return not is_user(frame) and not is_stdlib(frame)


def raiser(frames: Sequence[Frame]) -> Frame | None:
    """The innermost frame that did the failing thing, looking through the standard library and dispatch."""
    for frame in reversed(frames):
        if is_stdlib(frame) or (is_library(frame) and frame.function in DISPATCH):
            continue
        return frame
    return frames[-1] if frames else None


def call_site(frames: Sequence[Frame]) -> Frame | None:
    """The user's innermost frame in a real file (not generated code such as a dataclass's `<string>`)."""
    return next((f for f in reversed(frames) if is_user(f) and not f.file.startswith("<")), None)


def where(exc: RaisedException) -> str:
    """': TypeError raised in transformers, called from train.py' for the verdict's phrase."""
    raised, site = raiser(exc.frames), call_site(exc.frames)
    if raised is None:
        return f": {exc.exc_type}"
    if is_user(raised):
        return f": {exc.exc_type} raised in {basename(raised)}"
    place = "the standard library" if is_stdlib(raised) else raised.package
    called = f", called from {basename(site)}" if site is not None else ""
    return f": {exc.exc_type} raised in {place}{called}"


def short_type(exc: RaisedException) -> str:
    """'OutOfMemoryError' for 'torch.cuda.OutOfMemoryError', 'bad_alloc' for 'std::bad_alloc'."""
    return re.split(r"\.|::", exc.exc_type)[-1]


def user_modules(frames: Sequence[Frame]) -> set[str]:
    """Names an import of the user's own project could use: folders and file stems of the user's frames."""
    names = set(_PROJECT_MODULES)
    for frame in frames:
        if is_user(frame):
            parts = [p for p in path(frame).split("/") if p]
            names.update(p.removesuffix(".py") for p in parts)
    return names


def defines_class(frame: Frame, name: str) -> bool:
    """The frame's file is, by Python's naming convention, the module of class `name` (Trainer in trainer.py,
    SFTTrainer in sft_trainer.py)."""
    stem = basename(frame).removesuffix(".py").lower()
    return stem.replace("_", "") == name.lower()

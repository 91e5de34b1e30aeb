"""A frame as printed, placed: which installed package its file belongs to, and what a failing assert asserted.

Whether an exception came from an installed library, the standard library or the user's own code decides
between an API mismatch and a bug, so each frame carries the package its path names: the first component
after site-packages/ or dist-packages/ (or after an egg), "python" for the standard library, None otherwise.
"""

from __future__ import annotations

import re
import sys

from crashcart.parsers.models import Frame

_SITE = re.compile(r"[\\/](?:site|dist)-packages[\\/]")
_EGG = re.compile(r"[\\/]([^\\/]+\.egg)[\\/]")
_STDLIB_DIR = re.compile(r"[\\/]lib(?:64)?[\\/]python\d+(?:\.\d+)?t?[\\/]", re.IGNORECASE)  # /usr/lib/python3.10/
_WINDOWS_LIB = re.compile(r"\\lib\\([^\\]+)", re.IGNORECASE)  # C:\Python310\lib\runpy.py, ...\lib\json\__init__.py
_PART = re.compile(r"[^\\/]+")
# Cython sources an installed extension was built from print relative to their package: pyarrow/error.pxi,
# pandas/_libs/parsers.pyx. A user's script prints its own path, not a .pyx/.pxi one.
_CYTHON = re.compile(r"[A-Za-z_]\w*[\\/][^:]*\.p(?:yx|xi|xd)")
_STDLIB = frozenset(sys.stdlib_module_names)


def package_of(path: str, *, shortened: bool = False) -> str | None:
    """The installed package a file belongs to, "python" for the standard library, None for the user's code.

    `shortened`: py-spy prints paths relative to sys.path ("threading.py", "multiprocessing/connection.py"),
    so a first component that names a standard module is the standard library there (never in a traceback,
    where a relative path is the user's script).
    """
    if path.startswith("<"):
        return "python" if path.startswith("<frozen ") else None
    sites = list(_SITE.finditer(path))
    if sites:
        return _first_module(path[sites[-1].end() :])
    egg = _EGG.search(path)
    if egg:
        return _first_module(path[egg.end() :]) or _module_name(egg.group(1).split("-", 1)[0])
    if _STDLIB_DIR.search(path):
        return "python"
    windows = list(_WINDOWS_LIB.finditer(path))
    if windows and _module_name(windows[-1].group(1)) in _STDLIB:
        return "python"
    if _CYTHON.fullmatch(path):
        return _first_module(path)
    if shortened:
        first = _first_module(path)
        return "python" if first in _STDLIB else None
    return None


def _first_module(tail: str) -> str | None:
    """The module a path below a package root names: `torch/nn/x.py` -> torch, `six.py` -> six."""
    parts = _PART.findall(tail)
    if not parts:
        return None
    if parts[0].endswith(".egg") and len(parts) > 1:
        parts = parts[1:]
    return _module_name(parts[0])


def _module_name(part: str) -> str:
    """`six.py` -> six, `_cffi_backend.cpython-310-x86_64-linux-gnu.so` -> _cffi_backend."""
    return part.split(".", 1)[0] if "." in part else part


def make_frame(
    file: str, line: int | None, function: str | None, source: str | None, *, shortened: bool = False
) -> Frame:
    return Frame(
        file=file,
        line=line,
        function=function,
        source=source.strip() if source else None,
        package=package_of(file, shortened=shortened),
    )


_OPENERS = {"(": ")", "[": "]", "{": "}"}


def asserted(source: str | None) -> str | None:
    """The expression of an `assert` source line, without its message or comment; None if it is no assert."""
    if not source or not (source.startswith("assert ") or source.startswith("assert(")):
        return None
    expression = source[len("assert") :].strip()
    cut = _top_level_end(expression)
    return expression[:cut].strip() or None


def _top_level_end(text: str) -> int:
    """Where the asserted expression ends: the first comma or `#` outside brackets and string literals."""
    depth, quote, escaped = 0, "", False
    for i, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in _OPENERS:
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif char in ",#" and depth == 0:
            return i
    return len(text)


def in_call_order(frames: list[Frame]) -> list[Frame]:
    """The frames outermost first, as Python prints them: reversed when the paste lists the innermost first.

    A pasted excerpt without its `Traceback (most recent call last):` may have been copied from a tool that
    lists the most recent call first. What the frames say decides, not a guess: each frame's source line calls
    the function of the frame Python printed after it (`main()` above `... in main`), and the script's
    `<module>` frame is the outermost. The frames are reversed only when that evidence points backwards.
    """
    if len(frames) < 2:
        return frames
    forward = sum(_calls(a, b) for a, b in zip(frames, frames[1:], strict=False))
    backward = sum(_calls(b, a) for a, b in zip(frames, frames[1:], strict=False))
    forward += frames[0].function == "<module>"
    backward += frames[-1].function == "<module>" and frames[0].function != "<module>"
    return frames[::-1] if backward > forward else frames


def _calls(caller: Frame, callee: Frame) -> bool:
    """Whether the caller's source line calls the callee's function by its name (`f(`, `.f(`)."""
    name = callee.function
    if not caller.source or not name or not name.isidentifier():
        return False
    return re.search(rf"(?<![\w]){re.escape(name)}\s*\(", caller.source) is not None

"""Traceback records made from a traceback's text as Python prints it, for tests of what judges the records.

A test shows the real traceback it was built from next to the verdict it expects; this turns that text into
the parser's records (parsers/models.py) without depending on the parser itself: `File "...", line N, in f`
frames with the source line under them, a `Type: message` line whose following lines continue the message,
the chain separators, `Original Traceback` of a DataLoader worker and a `[rankN]: ` prefix. A frame's package
is read off its path the way an installed file shows it: site-packages/<name>, the standard library's
lib/pythonX.Y/<module>, else the user's own code.
"""

from __future__ import annotations

import re
import sys
from typing import Literal

from crashcart.knowledge.records import LineRef
from crashcart.parsers.models import Frame, RaisedException, Traceback

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:::\w+)*)(?::(?: (?P<message>.*))?)?$")
_RANK = re.compile(r"^\[rank(\d+)\]: ")
Relation = Literal["context", "cause"]
_SEPARATORS: dict[str, Relation] = {
    "During handling of the above exception, another exception occurred:": "context",
    "The above exception was the direct cause of the following exception:": "cause",
}
_CARETS = re.compile(r"^\s*[~^]+\s*$")
_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\](?P<name>[^/\\]+)")
_STDLIB = re.compile(r"[/\\][Ll]ib[/\\](?:python[\d.]+[/\\])?(?P<name>[^/\\]+)")


def package_of(path: str) -> str | None:
    """The installed package of a frame's file, "python" for the standard library, None for the user's code."""
    if path.startswith("<frozen"):
        return "python"
    installed = _INSTALLED.search(path)
    if installed:
        name = installed.group("name")
        return re.split(r"[.-]", name)[0] if not name.endswith(".egg") else None
    stdlib = _STDLIB.search(path)
    if stdlib and stdlib.group("name").removesuffix(".py") in sys.stdlib_module_names:
        return "python"
    return None


def traceback_from(
    text: str,
    *,
    file: str = "job.log",
    rank: int | None = None,
    kind: Literal["python", "rich", "cpp_terminate", "child_failed"] = "python",
) -> Traceback:
    """The record of one traceback printed as `text` (its first line is line 1 of `file`, a file of `rank`
    unless a line's own `[rankN]: ` prefix says otherwise)."""
    chain: list[RaisedException] = []
    frames: list[Frame] = []
    relation: Relation | None = None
    worker: str | None = None
    current: RaisedException | None = None
    start: LineRef | None = None
    for number, raw in enumerate(text.strip("\n").splitlines(), start=1):
        rank_prefix = _RANK.match(raw)
        line = raw[rank_prefix.end() :] if rank_prefix else raw
        ref = LineRef(file=file, line=number, text=raw, rank=int(rank_prefix.group(1)) if rank_prefix else rank)
        start = start or ref
        if _CARETS.match(line):
            continue
        stripped = line.strip()
        if stripped in _SEPARATORS:
            relation, current = _SEPARATORS[stripped], None
            continue
        if stripped.endswith("Traceback (most recent call last):"):
            current = None
            continue
        frame = _FRAME.match(line)
        if frame:
            frames.append(
                Frame(
                    file=frame["file"],
                    line=int(frame["line"]),
                    function=frame["function"].strip(),
                    package=package_of(frame["file"]),
                )
            )
            current = None
            continue
        if frames and frames[-1].source is None and current is None and not _EXCEPTION.match(stripped):
            frames[-1] = frames[-1].model_copy(update={"source": stripped})
            continue
        if current is not None:  # a continuation line of the message
            current.message = f"{current.message}\n{stripped}".strip("\n")
            continue
        exception = _EXCEPTION.match(stripped)
        if exception is None:
            continue
        current = RaisedException(
            exc_type=exception["type"],
            message=exception["message"] or "",
            frames=frames,
            ref=ref,
            relation=relation if chain else None,
            assertion=_asserted(exception["type"], exception["message"], frames),
        )
        worker = worker or _worker(current.message)
        chain.append(current)
        frames, relation = [], None
    assert start is not None, "an empty traceback text"
    return Traceback(kind=kind, start=start, chain=chain, worker=worker)


def _asserted(exc_type: str, message: str | None, frames: list[Frame]) -> str | None:
    if exc_type != "AssertionError" or message or not frames or not frames[-1].source:
        return None
    source = frames[-1].source
    return source.removeprefix("assert").strip() if source.startswith("assert") else None


def _worker(message: str) -> str | None:
    found = re.match(r"Caught \S+ in (DataLoader worker process \d+)", message)
    return found.group(1) if found else None

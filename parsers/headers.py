"""The first line of each failure structure, as patterns the streaming scanner can afford on every line.

A traceback, a C++ terminate, torchrun's summary or a hang dump is recognised by its first line; the lines
after it are read only there (parsers/tracebacks.py). The patterns are valid in Hyperscan and in RE2 alike
(no lookaround, no backreferences) and end at the end of the line, so that whatever a launcher, a timestamp
or an unterminated progress bar put in front of the header does not hide it. Trailing blanks are spaces
and tabs only: under Hyperscan's multiline mode a whitespace class would run on across the newline.
"""

from __future__ import annotations

import re
from enum import Enum


class Header(str, Enum):
    """Which structure a header line opens."""

    PYTHON = "python"  # Traceback (most recent call last):  (a DataLoader worker's "Original Traceback", IPython's)
    RICH = "rich"  # ╭───── Traceback (most recent call last) ─────╮
    CPP = "cpp"  # terminate called after throwing an instance of 'c10::Error'
    CHILD_FAILED = "child_failed"  # torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
    WORKER = "worker"  # KeyError: Caught KeyError in DataLoader worker process 0.
    FAULTHANDLER = "faulthandler"  # Thread 0x00007f... (most recent call first):
    PYSPY = "pyspy"  # Thread 12345 (idle): "MainThread"


PATTERNS: dict[Header, str] = {
    # Python's own (a DataLoader worker's "Original Traceback"), or IPython's `ValueError    Traceback (...)`
    Header.PYTHON: (
        r"(?:Original )?Traceback \(most recent call last\):[ \t]*$"
        r"|[A-Za-z_][\w.]*[ \t]+Traceback \(most recent call last\)[ \t]*$"
    ),
    Header.RICH: r"╭(?:─)+ Traceback \(most recent call last\) (?:─)+╮",
    Header.CPP: r"terminate called after throwing an instance of '",
    Header.CHILD_FAILED: r"[A-Za-z_][\w.]*ChildFailedError:[ \t]*$",
    # unbounded `[\w ]*`: a bounded repeat here made the whole set compile 10x slower (0.13 s a process start)
    Header.WORKER: r"[A-Za-z_][\w.]*: Caught [A-Za-z_][\w.]* in [A-Za-z][\w ]*\.[ \t]*$",
    Header.FAULTHANDLER: (
        r"(?:(?:Current thread|Thread) 0x[0-9a-fA-F]+(?: \(most recent call first\))?"
        r"|Stack \(most recent call first\)):[ \t]*$"
    ),
    Header.PYSPY: r"Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:idle|active)(?:\+gil)?\)(?:: \"[^\"\n]*\")?[ \t]*$",
}

TAIL_CHARS = 4096  # a header sits at the end of its line: a 10 MB progress-bar line is searched in its tail only

_COMPILED = tuple((kind, re.compile(pattern)) for kind, pattern in PATTERNS.items())
# Text every header holds, one or more per pattern: most lines hold none, and a few substring tests (C's memchr)
# settle them before any of the seven regexes runs.
_NEEDLES = (
    "Traceback (most recent call last)",
    "terminate called after throwing",
    "ChildFailedError:",
    ": Caught ",
    "Thread 0x",
    "thread 0x",  # faulthandler's "Current thread 0x..."
    "Stack (most recent call first)",
    " (idle",
    " (active",
)


def may_hold_header(text: str) -> bool:
    """Whether the text holds what every header holds: False settles that none of its lines is a header."""
    return any(needle in text for needle in _NEEDLES)


def find_header(line: str) -> tuple[Header, int] | None:
    """Which header the line carries and where it starts (the earliest, if two would match)."""
    offset = max(0, len(line) - TAIL_CHARS)
    tail = line[offset:]
    if not may_hold_header(tail):
        return None
    found: tuple[Header, int] | None = None
    for kind, regex in _COMPILED:
        m = regex.search(tail)
        if m is not None and (found is None or m.start() + offset < found[1]):
            found = (kind, m.start() + offset)
    return found


def has_header(line: str) -> bool:
    return find_header(line) is not None


def starts_with_header(body: str) -> bool:
    """A header at the very start of a line (after its printer's prefix): a new structure begins here."""
    found = find_header(body)
    return found is not None and found[1] == 0

"""The exception a traceback ends with: its `Type: message` line, the whole message, torchrun's summary.

A message may run over many lines (CUDA's hints, a c10::Error's "Exception raised from ..." and its frame
list, a state_dict's mismatches); it ends at a blank line after it, the next log record, a new header or a
bound. torchrun's ChildFailedError is followed by its `====` block instead: what a diagnosis wants from it
is the root cause's fields (host, rank, exit code, signal), kept as printed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, NamedTuple

from crashcart.parsers.headers import has_header
from crashcart.parsers.printers import RECORD_START, Cursor

MAX_MESSAGE_LINES = 120
MAX_MESSAGE_CHARS = 16_384
MAX_SUMMARY_LINES = 300
_JUNK_BEFORE_EXCEPTION = 5  # lines of other output (a progress bar, a print) between the frames and `Type: msg`

# `Type: message`; a bare type only when its name says it is one (KeyboardInterrupt, AssertionError).
_TYPED = re.compile(r"(?P<type>[A-Za-z_][\w.]*):(?: ?(?P<message>.*))?$")
_BARE = re.compile(
    r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Iteration|Warning|Failure|Timeout))$"
)
_C10_GOES_ON = re.compile(r"Exception raised from |frame #\d+: ")
_RULE = re.compile(r"([=*])\1{9,}\s*$")
_SECTION_RULE = re.compile(r"-{10,}\s*$")
CAUSE = "The above exception was the direct cause of the following exception:"
CONTEXT = "During handling of the above exception, another exception occurred:"
SEPARATORS: dict[str, Literal["cause", "context"]] = {CAUSE: "cause", CONTEXT: "context"}

Rejoin = Callable[[str, str], str | None]  # (printed line, next line) -> what joins them ("" or " "), None: no wrap


class ExceptionLine(NamedTuple):
    exc_type: str
    first: str  # the message's first line ("" for a bare type)


def exception_line(body: str) -> ExceptionLine | None:
    """`ValueError: bad value` / `torch.OutOfMemoryError: CUDA out of memory.` / a bare `KeyboardInterrupt`."""
    m = _TYPED.match(body)
    if m is not None:
        return ExceptionLine(m.group("type"), (m.group("message") or "").rstrip())
    m = _BARE.match(body.rstrip())
    return ExceptionLine(m.group("type"), "") if m else None


def find_exception_line(cur: Cursor) -> ExceptionLine | None:
    """The exception line after a traceback's frames, past a few lines of other output; taken if found."""
    for ahead in range(_JUNK_BEFORE_EXCEPTION + 1):
        line = cur.peek(ahead)
        if line is None or line.body.strip() in SEPARATORS:
            return None
        found = exception_line(line.body)
        if found is not None and not RECORD_START.match(line.body):
            cur.pos += ahead + 1
            return found
        if has_header(line.body):
            return None
    return None


def ends_message(body: str) -> bool:
    return bool(RECORD_START.match(body)) or body.strip() in SEPARATORS or has_header(body)


def read_message(cur: Cursor, first: str, rejoin: Rejoin | None = None, printed: str | None = None) -> str:
    """The message from its first line on: continuation lines, and a blank line only where a c10::Error's
    "Exception raised from" follows it. Lines `rejoin` says were wrapped are joined again; `printed` is the
    whole first line as printed (type and all), which is what a console wrapped."""
    lines = [first]
    last = printed if printed is not None else first  # the last line as printed, before any rejoining
    while len(lines) < MAX_MESSAGE_LINES and (line := cur.peek()) is not None:
        if not line.body.strip():
            following = cur.next_text()
            if following is None or not _C10_GOES_ON.match(following):
                break
            cur.skip_blank()
            lines.append("")
            continue
        if ends_message(line.body):
            break
        glue = rejoin(last, line.body) if rejoin is not None else None
        if glue is None:
            lines.append(line.body)
        else:
            lines[-1] += glue + line.body
        last = line.body
        cur.take()
    return "\n".join(lines).strip("\n")[:MAX_MESSAGE_CHARS]


def read_separator(cur: Cursor) -> Literal["cause", "context"] | None:
    """A chain's "During handling ..." / "The above exception ..." line, taken with the blank lines around
    it, if the next traceback's header follows; otherwise nothing is taken."""
    start = cur.pos
    cur.skip_blank()
    line = cur.peek()
    relation = SEPARATORS.get(line.body.strip()) if line is not None else None
    if relation is not None:
        cur.take()
        cur.skip_blank()
        following = cur.peek()
        if following is not None and has_header(following.body):
            return relation
    cur.pos = start
    return None


def read_summary(cur: Cursor) -> str | None:
    """torchrun's `====` block after a ChildFailedError: its title and its root cause, lines as printed.

    The block ends at the rule it opened with (older releases open with `****` and rule sections with `====`).
    """
    opening = cur.peek()
    if opening is None or not _RULE.match(opening.body):
        return None
    rule = opening.body.rstrip()
    cur.take()
    lines: list[str] = []
    while len(lines) < MAX_SUMMARY_LINES and (line := cur.peek()) is not None:
        text = line.body.rstrip()
        if not text or RECORD_START.match(text):
            break
        cur.take()
        if text == rule:
            break
        lines.append(text)
    return _root_cause(lines)


def _root_cause(lines: list[str]) -> str:
    """The title line and the Root Cause section; every line if the block has no such section."""
    title = next((t.strip() for t in lines if not _is_rule(t)), "")
    start = next((i for i, t in enumerate(lines) if t.startswith("Root Cause")), None)
    if start is None:
        return "\n".join(t for t in lines if not _is_rule(t))
    end = next((i for i in range(start + 1, len(lines)) if _is_rule(lines[i])), len(lines))
    return "\n".join([title, *lines[start:end]])[:MAX_MESSAGE_CHARS]


def _is_rule(text: str) -> bool:
    return bool(_RULE.match(text) or _SECTION_RULE.match(text))

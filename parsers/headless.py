"""A traceback the log starts inside of: frames, then the exception, with no `Traceback (most recent ...)` above.

A log cut at its head (a pasted excerpt, a rotated file, `tail -n` of a job's output) often begins in the middle
of the traceback that matters, and no header pattern then fires. Only a file's first lines can be such a
traceback's: anywhere else the header was printed, so this is looked for once per file, in its first
HEADLESS_LINES lines, before any header. The shapes such a head takes:

- frames, then the exception (and any chain after it), each line maybe behind its printer's prefix
  (`[rank1]:   File ...`): one traceback per printer whose first frame is there, read with that printer's lines;
- a rich box whose top was cut, then the exception, and the boxes of the rest of the chain;
- IPython's frames cut from their header, or only the numbered source of the last one (`---> 93 code`);
- the tail of an earlier exception and "During handling of the above exception ..." above the frames, whose
  header was cut too: a later part of a chain. Its frames are a traceback even where the excerpt ends before
  their exception line; the earlier exception's line joins the chain when its type was kept;
- frames a tool listed innermost first, put back in Python's order (frames.in_call_order);
- no frames at all, only the exception line (`huggingface_hub.utils._validators.HFValidationError: Repo id ...`,
  `RuntimeError: Unable to find ...`): what a pasted excerpt or a `tail -n 1` keeps. A line is taken as one only
  when its type is an exception class's name (`...Error`, `...Exception`) and the head holds no frame and no
  header: a frameless record that the traceback rules classify by type and message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

from crashcart.knowledge.records import LineRef
from crashcart.parsers.attribution import strip_prefixes
from crashcart.parsers.frames import in_call_order
from crashcart.parsers.headers import has_header, may_hold_header
from crashcart.parsers.models import Frame, RaisedException, Traceback
from crashcart.parsers.printers import RECORD_START, Cursor, Printed, printed_lines
from crashcart.parsers.pytracebacks import (
    IPYTHON_ARROW,
    Relation,
    finish_exception,
    ipython_title,
    is_ipython_source,
    read_frames,
    read_ipython_frames,
    read_python_link,
)
from crashcart.parsers.raised import SEPARATORS, exception_line, find_exception_line, read_separator
from crashcart.parsers.richtracebacks import is_box_line, read_cut_box, read_rich_link

HEADLESS_LINES = 12  # how far into a file a cut traceback's first frame may sit (after a shell prompt, a note)
MAX_PRINTERS = 8  # headless tracebacks read from one head (ranks whose lines interleave there)
_LEAD_LINES = 4  # lines of an earlier exception's message above a chain separator kept as its tail
_IPYTHON_LOOKAHEAD = 12  # numbered source lines IPython prints around a failing line (its context is 5 or so)
_RAY = re.compile(r"\((?:[\w.:-]+ )?pid=\d+(?:, ip=[\d.]+)?\) ")  # as parsers/attribution.py reads it
_FRAME = re.compile(r'\s*(?:> )?File "[^"\n]+", line \d+(?:, in .+)?$')
_LONE_TYPE = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)")


# Text a head must hold for any of the shapes above: a frame's `File "`, a box's edge, a lone exception's type
# (its name ends in Error or Exception), IPython's arrow as IPYTHON_ARROW reads it (the number ends the line or
# a space follows it: NCCL's `1[1] -> 2[2]` is none), or a header (chain_head).
_MARKS = ('File "', "│", "Error", "Exception")
_ARROW = re.compile(r"-> ?\d+(?:\s|\Z)")


def may_start_inside(lines: Sequence[str]) -> bool:
    """Whether a file's first lines may hold a cut traceback (headless_starts) or a chain's cut earlier part
    (chain_head): False settles both with a few substring tests, where they match a dozen patterns a line. Most
    files start with none of these marks: 1,024 rank files spent 0.25 ms each on their heads."""
    head = "\n".join(lines[:HEADLESS_LINES])
    return any(mark in head for mark in _MARKS) or _ARROW.search(head) is not None or may_hold_header(head)


class Start(NamedTuple):
    """Where a headless traceback starts in a file's head: its first frame's (or box line's) index, the length
    of its printer's prefix there, and the index of the line above a chain separator it continues, if any."""

    at: int
    prefix: int
    lead: int | None = None


def headless_start(lines: Sequence[str]) -> int | None:
    """The index of the first Python frame line, or line of a rich box's inside, among a file's first lines,
    when no header came before it."""
    starts = headless_starts(lines)
    return starts[0].at if starts else None


def headless_starts(lines: Sequence[str]) -> list[Start]:
    """Each printer's first frame line (a rich box's line, IPython's frame title or source) among a file's first
    lines, before any header: the ranks of an interleaved log each start their own cut traceback."""
    starts: list[Start] = []
    seen: set[str] = set()
    for i, line in enumerate(lines[:HEADLESS_LINES]):
        if has_header(line):
            break
        prefix = printer_prefix(line)
        body = line[len(prefix) :]
        if prefix in seen or not (_FRAME.match(body) or is_box_line(body) or _ipython_cut(lines, i, prefix)):
            continue
        seen.add(prefix)
        starts.append(Start(i, len(prefix), _chain_lead(lines, i, prefix)))
        if len(starts) >= MAX_PRINTERS:
            break
    return starts or _lone_exception(lines)


def _lone_exception(lines: Sequence[str]) -> list[Start]:
    """The first exception line of a head with no frame and no header (see the module docstring): above a header,
    such a line is an earlier part of that header's chain (chain_head), or a message of its own."""
    head = lines[:HEADLESS_LINES]
    if any(has_header(line) for line in head):
        return []
    for i, line in enumerate(head):
        prefix = printer_prefix(line)
        if _is_lone_exception(line[len(prefix) :]):
            return [Start(i, len(prefix))]
    return []


def _is_lone_exception(body: str) -> bool:
    found = exception_line(body)
    return found is not None and _LONE_TYPE.fullmatch(found.exc_type) is not None and not RECORD_START.match(body)


def chain_head(lines: Sequence[str]) -> tuple[int, int] | None:
    """(index of the first header, index of the lead above it) when a file's first lines are the cut-off end of
    a chain's earlier part, its `Type: message` line kept, then the separator, right above a header: the part
    the header opens continues that chain."""
    for i, line in enumerate(lines[:HEADLESS_LINES]):
        if has_header(line):
            prefix = printer_prefix(line)
            lead = _chain_lead(lines, i, prefix)
            if lead is None or not _typed(lines[lead][len(prefix.rstrip()) :].strip()):
                return None
            return i, lead
    return None


def _typed(body: str) -> bool:
    return exception_line(body) is not None and not RECORD_START.match(body) and body not in SEPARATORS


def _ipython_cut(lines: Sequence[str], at: int, prefix: str) -> bool:
    """Whether lines[at] starts IPython's frames cut from their header: a frame's title or a numbered source
    line, with only numbered source lines between it and the failing line's arrow (`---> 93 code`)."""
    body = lines[at][len(prefix) :]
    if ipython_title(body.strip()) is None and not is_ipython_source(body):
        return False
    for i in range(at, min(len(lines), at + _IPYTHON_LOOKAHEAD)):
        text = lines[i][len(prefix) :]
        if IPYTHON_ARROW.match(text.strip()):
            return True
        if i > at and not is_ipython_source(text):
            return False
    return False


def printer_prefix(line: str) -> str:
    """The printer's prefix a line starts with: a launcher's (`[rank1]: `, `[1,3]<stderr>:`, srun's `3: `) or
    a Ray worker's (`(RayTrainWorker pid=1234, ip=10.0.0.1) `), the empty string when it has none."""
    ray = _RAY.match(line)
    if ray is not None:
        return ray.group()
    return line[: len(line) - len(strip_prefixes(line))]


def _chain_lead(lines: Sequence[str], at: int, prefix: str) -> int | None:
    """The first line of the message tail above a chain separator that the frame at `at` follows (blank lines
    between), when the printer's lines above the frame end with that separator: the frames are a later part of
    a chain. The separator's own index when nothing but blank lines is above it."""
    mark = prefix.rstrip()
    own = [i for i in range(at) if lines[i].startswith(mark)]
    bodies = [lines[i][len(mark) :].strip() for i in own]
    k = len(own) - 1
    while k >= 0 and not bodies[k]:
        k -= 1
    if k < 0 or bodies[k] not in SEPARATORS:
        return None
    first = own[k]
    k -= 1
    while k >= 0 and not bodies[k]:
        k -= 1
    for _ in range(_LEAD_LINES):
        if k < 0 or not bodies[k]:
            break
        first, k = own[k], k - 1
    return first


def read_headless(
    window: Sequence[str],
    first_line: int,
    make_ref: Callable[[str, int], LineRef],
    *,
    prefix: int = 0,
    lead: Sequence[str] = (),
) -> tuple[Traceback | None, int]:
    """The traceback whose frames start at window[0] (line first_line), with any chain after its exception, and
    how many window lines it used; None when no exception line follows the frames.

    `prefix`: the length of its printer's prefix on window[0]. `lead`: the file's lines from the tail of an
    earlier exception down to the chain separator above window[0], when the frames continue a chain: frames
    with no exception line after them are then a traceback still, cut where the excerpt ends, and the record
    starts at the lead's first line.
    """
    view = printed_lines(window, prefix)
    cur = Cursor(view.lines)

    def refs(line: Printed) -> LineRef:
        return make_ref(window[line.idx], first_line + line.idx)

    kind: Literal["python", "rich"] = "rich" if is_box_line(view.lines[0].body) else "python"
    earlier, relation = earlier_link(lead, first_line, make_ref, window[0][:prefix].rstrip())
    unfinished: list[Frame] = []
    if kind == "python" and _is_lone_exception(view.lines[0].body):
        found = exception_line(view.lines[0].body)
        cur.pos = 1
        assert found is not None  # _is_lone_exception read it
        links = finish_exception(cur, refs, view.lines[0], found, [], relation).chain
    elif kind == "python":
        ipython = not _FRAME.match(view.lines[0].body)
        frames = read_ipython_frames(cur) if ipython else in_call_order(read_frames(cur))
        found = find_exception_line(cur) if frames else None
        if found is None:
            if not (lead and frames):
                return None, 1
            links, unfinished = [], frames
        else:
            links = finish_exception(cur, refs, cur.lines[cur.pos - 1], found, frames, relation).chain
    else:
        links = read_cut_box(cur, refs).chain
        if links:
            links[0].relation = relation
    chain = earlier + links if links or unfinished else []
    read_link = read_python_link if kind == "python" else read_rich_link
    while links and (more_relation := read_separator(cur)) is not None:
        more = read_link(cur, refs, more_relation)
        chain += more.chain
        if not more.chain:  # the excerpt ends inside the next part: its frames are kept
            unfinished = more.unfinished
            break
    if not chain and not unfinished:
        return None, 1
    used = max(cur.end(), 1)
    if view.foreign_header is not None:
        used = min(used, view.foreign_header)
    start = make_ref(lead[0], first_line - len(lead)) if lead else refs(view.lines[0])
    return Traceback(kind=kind, start=start, chain=chain, unfinished=unfinished), used


def earlier_link(
    lead: Sequence[str], first_line: int, make_ref: Callable[[str, int], LineRef], mark: str
) -> tuple[list[RaisedException], Relation]:
    """The chain separator's relation, and the earlier exception when its `Type: message` line opens the lead
    (its frames were cut away; an empty list when only its message's tail was kept). `mark`: the printer's
    prefix, without its trailing blank: other printers' lines in the lead are not its own."""
    bodies = [line[len(mark) :].strip() for line in lead if line.startswith(mark)]
    relation = next((SEPARATORS[b] for b in reversed(bodies) if b in SEPARATORS), None)
    found = exception_line(bodies[0]) if len(bodies) > 1 and _typed(bodies[0]) else None
    if found is None:
        return [], relation
    message = [found.first]
    for body in bodies[1:]:
        if not body:
            break
        message.append(body)
    ref = make_ref(lead[0], first_line - len(lead))
    raised = RaisedException(exc_type=found.exc_type, message="\n".join(message).strip(), ref=ref)
    return [raised], relation

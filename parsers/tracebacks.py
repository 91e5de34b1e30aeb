"""The multi-line structure of a failure as records: tracebacks (Python's, rich's, C++ terminates, torchrun's
summary) and the thread stacks of hang dumps.

The streaming scanner matches HEADER_PATTERNS on every line; only at a header (rare) does it hand the lines
that follow to read_structure, which reads the one structure that starts there:

- the header's printer (a launcher's `[rank3]: `, a timestamp) says which lines are its own (printers.py);
- a chain ("During handling ...", "The above exception ...") is one record, oldest exception first; a
  DataLoader worker's exceptions come before the main process's re-raise (pytracebacks.py);
- rich's box-drawn traceback gives the same record, kind "rich" (richtracebacks.py);
- `terminate called after throwing an instance of 'c10::Error'` + `  what():  ...` is kind "cpp_terminate":
  the C++ type, the what() text with its continuation lines, cited at the what() line;
- torchrun's ChildFailedError with its `====` block is kind "child_failed", its message the root cause's
  fields as printed (raised.py);
- faulthandler and py-spy dumps give one StackDump per thread, innermost frame last (stackdumps.py).

The count returned is how many window lines the structure covers, so the scanner skips headers inside it;
it stops short of the first header another printer wrote in between (an interleaved rank's traceback is
read from there in its turn; a later part of this chain may then be read again as a record of its own,
with the same last exception line).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from crashcart.knowledge.records import LineRef
from crashcart.parsers.headers import PATTERNS, Header, find_header
from crashcart.parsers.models import RaisedException, StackDump, Traceback
from crashcart.parsers.printers import Cursor, Printed, printed_lines
from crashcart.parsers.pytracebacks import Links, Refs, read_exception_only, read_python_chain
from crashcart.parsers.raised import read_message
from crashcart.parsers.richtracebacks import read_rich_chain
from crashcart.parsers.stackdumps import read_faulthandler, read_pyspy

HEADER_PATTERNS: tuple[str, ...] = tuple(PATTERNS.values())
MAX_WINDOW_LINES = 400  # a 40-line traceback of one rank among 8 interleaved ones still fits

_CPP_TYPE = re.compile(r"instance of '(?P<type>[A-Za-z_][\w:<>, ]*?)(?:'|terminate called)")
_WHAT = "what():"
_WHAT_WITHIN = 8  # lines after the header where `what():` may come (other ranks' terminates interleave)

MakeRef = Callable[[str, int], LineRef]
Structure = Traceback | StackDump


def read_structure(window: Sequence[str], first_line: int, make_ref: MakeRef) -> tuple[Structure | None, int]:
    """window[0] is a line a HEADER_PATTERN matched (line first_line of the log), the following lines of the
    log after it. The record (None if it is not one after all) and how many window lines it consumed."""
    found = find_header(window[0]) if window else None
    if found is None:
        return None, 1
    kind, at = found
    view = printed_lines(window[:MAX_WINDOW_LINES], at, rejoin_wraps=kind is not Header.RICH)
    cur = Cursor(view.lines)

    def refs(line: Printed) -> LineRef:
        return make_ref(window[line.idx], first_line + line.idx)

    record = _read(kind, cur, refs)
    if record is None:
        return None, 1
    consumed = cur.end()
    if view.foreign_header is not None:
        consumed = min(consumed, view.foreign_header)
    return record, max(consumed, 1)


def _read(kind: Header, cur: Cursor, refs: Refs) -> Structure | None:
    if kind is Header.FAULTHANDLER:
        return read_faulthandler(cur, refs)
    if kind is Header.PYSPY:
        return read_pyspy(cur, refs)
    start = refs(cur.lines[0])
    if kind is Header.CPP:
        terminate = _read_terminate(cur, refs)
        return Traceback(kind="cpp_terminate", start=start, chain=[terminate])
    if kind is Header.RICH:
        links = read_rich_chain(cur, refs)
    elif kind is Header.PYTHON:
        links = read_python_chain(cur, refs)
    else:  # a worker's re-raise or torchrun's summary, seen from its exception line on
        links = read_exception_only(cur, refs)
    return _traceback(links, kind, start)


def _traceback(links: Links, kind: Header, start: LineRef) -> Traceback | None:
    if not links.chain and not links.unfinished:
        return None
    shape = "child_failed" if links.child_failed else "rich" if kind is Header.RICH else "python"
    return Traceback(kind=shape, start=start, chain=links.chain, worker=links.worker, unfinished=links.unfinished)


def _read_terminate(cur: Cursor, refs: Refs) -> RaisedException:
    """`terminate called after throwing an instance of 'c10::Error'` then `  what():  CUDA error: ...`."""
    header = cur.take()
    assert header is not None  # the window starts at the header
    m = _CPP_TYPE.search(header.body)
    exc_type = m["type"] if m else "?"
    for ahead in range(_WHAT_WITHIN):
        line = cur.peek(ahead)
        if line is None:
            break
        if line.body.lstrip().startswith(_WHAT):
            cur.pos += ahead + 1
            what = line.body.split(_WHAT, 1)[1].strip()
            return RaisedException(exc_type=exc_type, message=read_message(cur, what), ref=refs(line))
    return RaisedException(exc_type=exc_type, message="", ref=refs(header))

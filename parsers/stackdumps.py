"""One thread's stack from a hang dump: faulthandler's and py-spy's, innermost frame last.

    Thread 0x00007fa040e2b700 (most recent call first):          Thread 544105 (idle): "MainThread"
      File ".../threading.py", line 324 in wait                      _recv (multiprocessing/connection.py:395)
      File ".../queue.py", line 180 in get                           recv (multiprocessing/connection.py:250)

Both print the innermost frame first; the record keeps a traceback's order. py-spy prints paths relative to
sys.path, `--locals` adds indented argument lines, `--native` frames without a line number.
"""

from __future__ import annotations

import re

from crashcart.parsers.frames import make_frame
from crashcart.parsers.models import Frame, StackDump
from crashcart.parsers.printers import Cursor
from crashcart.parsers.pytracebacks import Refs

_FAULT_FRAME = re.compile(r'\s*File "(?P<file>.*)", line (?P<line>\d+|\?\?\?) in (?P<func>.+)$')
_FAULT_FILLER = frozenset({"<no Python frame>", "..."})
_PYSPY_FRAME = re.compile(r"(?P<indent>\s+)(?P<func>\S.*?) \((?P<where>[^()]+)\)$")
_PYSPY_LINE = re.compile(r"(?P<file>.+):(?P<line>\d+)$")


def read_faulthandler(cur: Cursor, refs: Refs) -> StackDump | None:
    header = cur.take()
    if header is None:
        return None
    frames: list[Frame] = []
    while (line := cur.peek()) is not None:
        m = _FAULT_FRAME.match(line.body)
        if m is not None:
            number = None if m["line"] == "???" else int(m["line"])
            frames.append(make_frame(m["file"], number, m["func"], None))
        elif line.body.strip() not in _FAULT_FILLER:
            break
        cur.take()
    frames.reverse()
    return StackDump(start=refs(header), thread=header.body.strip().rstrip(":").rstrip(), frames=frames)


def read_pyspy(cur: Cursor, refs: Refs) -> StackDump | None:
    header = cur.take()
    if header is None:
        return None
    frames: list[Frame] = []
    indent: str | None = None
    while (line := cur.peek()) is not None:
        m = _PYSPY_FRAME.match(line.body)
        if m is not None and m["indent"] == (indent or m["indent"]):
            indent = m["indent"]
            frames.append(_pyspy_frame(m["func"], m["where"]))
        elif not (indent and line.body.startswith(indent) and line.body[len(indent) : len(indent) + 1].isspace()):
            break  # deeper lines are --locals' arguments and locals; anything else ends the thread
        cur.take()
    frames.reverse()
    return StackDump(start=refs(header), thread=header.body.strip(), frames=frames)


def _pyspy_frame(function: str, where: str) -> Frame:
    m = _PYSPY_LINE.match(where)
    if m is None:  # a native frame: `poll (libc.so.6)`
        return make_frame(where, None, function, None, shortened=True)
    return make_frame(m["file"], int(m["line"]), function, None, shortened=True)

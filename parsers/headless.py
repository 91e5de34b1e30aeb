"""A traceback the log starts inside of: frames, then the exception, with no `Traceback (most recent ...)` above.

A log cut at its head (a pasted excerpt, a rotated file, `tail -n` of a job's output) often begins in the middle
of the traceback that matters, and no header pattern then fires. Only a file's first lines can be such a
traceback's: anywhere else the header was printed, so this is looked for once per file, in its first
HEADLESS_LINES lines, before any header.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

from crashcart.knowledge.records import LineRef
from crashcart.parsers.headers import has_header
from crashcart.parsers.models import Traceback
from crashcart.parsers.printers import Cursor, Printed, printed_lines
from crashcart.parsers.pytracebacks import finish_exception, read_frames, read_python_link
from crashcart.parsers.raised import find_exception_line, read_separator
from crashcart.parsers.richtracebacks import is_box_line, read_cut_box

HEADLESS_LINES = 12  # how far into a file a cut traceback's first frame may sit (after a shell prompt, a note)
_FRAME = re.compile(r'\s*(?:> )?File "[^"\n]+", line \d+(?:, in .+)?$')


def headless_start(lines: Sequence[str]) -> int | None:
    """The index of the first Python frame line, or line of a rich box's inside, among a file's first lines,
    when no header came before it."""
    for i, line in enumerate(lines[:HEADLESS_LINES]):
        if has_header(line):
            return None
        if _FRAME.match(line) or is_box_line(line):
            return i
    return None


def read_headless(
    window: Sequence[str], first_line: int, make_ref: Callable[[str, int], LineRef]
) -> tuple[Traceback | None, int]:
    """The traceback whose frames start at window[0] (line first_line), with any chain after its exception, and
    how many window lines it used; None when no exception line follows the frames."""
    view = printed_lines(window, 0)
    cur = Cursor(view.lines)

    def refs(line: Printed) -> LineRef:
        return make_ref(window[line.idx], first_line + line.idx)

    kind: Literal["python", "rich"] = "python" if _FRAME.match(window[0]) else "rich"
    if kind == "python":
        frames = read_frames(cur)
        found = find_exception_line(cur) if frames else None
        if found is None:
            return None, 1
        links = finish_exception(cur, refs, cur.lines[cur.pos - 1], found, frames, None)
    else:
        links = read_cut_box(cur, refs)
    chain = list(links.chain)
    while chain and (relation := read_separator(cur)) is not None:
        more = read_python_link(cur, refs, relation)
        if not more.chain:
            break
        chain += more.chain
    if not chain:
        return None, 1
    return Traceback(kind=kind, start=refs(view.lines[0]), chain=chain, worker=links.worker), max(cur.end(), 1)

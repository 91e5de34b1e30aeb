"""Python's own traceback, as one record: frames, the exception, and the chain printed before it.

Python prints a chain oldest first, each part joined to the next by "During handling of the above
exception ..." (context) or "The above exception was the direct cause ..." (cause). A DataLoader worker's
exception (also a DataParallel replica's, a pin-memory thread's) is re-raised in the main process with the
worker's own traceback as its message (`Caught KeyError in DataLoader worker process 0.` + `Original
Traceback ...`); the worker's exceptions join the chain before the re-raise, which they caused. torch
before 1.0 put the worker's traceback right after the type (`OSError: Traceback (most recent call last):`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, NamedTuple

from crashcart.knowledge.records import LineRef
from crashcart.parsers.frames import asserted, make_frame
from crashcart.parsers.headers import has_header
from crashcart.parsers.models import Frame, RaisedException
from crashcart.parsers.printers import RECORD_START, Cursor, Printed
from crashcart.parsers.raised import (
    SEPARATORS,
    ExceptionLine,
    Rejoin,
    exception_line,
    find_exception_line,
    read_message,
    read_separator,
    read_summary,
)

Refs = Callable[[Printed], LineRef]  # the LineRef of a printed line
Relation = Literal["context", "cause"] | None

# Ray's log deduplication appends ` [repeated 2x across cluster]` to a line other workers printed too
_FRAME = re.compile(
    r'\s*(?:> )?File "(?P<file>.*)", line (?P<line>\d+)(?:, in (?P<func>.+?))?(?: \[repeated \d+x across cluster\])?$'
)
_CAUGHT = re.compile(r"Caught \S+ in (?P<worker>.+?)\.?$")
_ORIGINAL = "Original Traceback (most recent call last):"
_PYTHON_HEADER = re.compile(r"(?:Original )?Traceback \(most recent call last\):\s*$")


class Links(NamedTuple):
    """What one part of a chain added: its exceptions (a worker's come first), the worker, and whether it
    ended in torchrun's summary."""

    chain: list[RaisedException]
    worker: str | None = None
    child_failed: bool = False
    unfinished: list[Frame] = []  # frames read before the lines ran out, with no exception line after them


def read_frames(cur: Cursor) -> list[Frame]:
    """`  File "x.py", line 3, in f` lines with the source line under each; carets, repeats and the
    annotations of better-exceptions/loguru are skipped. A paste that lost its indentation (an issue's text
    outside a code block) has its frames and sources flush left: a flush-left frame's source is the line
    under it when that line cannot be anything else."""
    frames: list[Frame] = []
    while (line := cur.peek()) is not None:
        m = _FRAME.match(line.body)
        if m is not None:
            cur.take()
            source = _source(cur, dedented=not line.body[:1].isspace())
            frames.append(make_frame(m["file"], int(m["line"]), m["func"], source))
        elif line.body[:1].isspace() and line.body.strip():
            cur.take()  # 3.11 carets, "[Previous line repeated 996 more times]", the rest of a 3.13 source
        elif frames and _CARETS.match(line.body):
            cur.take()  # the carets of a paste that lost its indentation
        elif not line.body.strip() and (following := cur.next_text()) and _FRAME.match(following):
            cur.skip_blank()  # loguru puts blank lines between frames, TensorFlow's py_func one under the header
        else:
            break
    return frames


_CARETS = re.compile(r"[\^~ ]*\^[\^~ ]*$")


def _source(cur: Cursor, *, dedented: bool = False) -> str | None:
    line = cur.peek()
    if line is None or _FRAME.match(line.body):
        return None
    if not line.body[:1].isspace() and not (dedented and _flush_left_source(line.body)):
        return None
    text = line.body.strip()
    if not text or set(text) <= set("^~ "):
        return None
    cur.take()
    return text


def _flush_left_source(body: str) -> bool:
    """A flush-left line that can only be a source line: no exception line, header, chain separator or log
    record of its own, no caret line."""
    text = body.strip()
    return bool(text) and not (
        exception_line(text) is not None
        or text in SEPARATORS
        or RECORD_START.match(text)
        or has_header(text)
        or _CARETS.match(text)
    )


LinkReader = Callable[[Cursor, Refs, Relation], Links]


def read_chain(cur: Cursor, refs: Refs, read_link: LinkReader) -> Links:
    """A traceback from its header on, with every later part of its chain; cur stops after the last message."""
    chain: list[RaisedException] = []
    worker = None
    child_failed = False
    relation: Relation = None
    while True:
        links = read_link(cur, refs, relation)
        chain.extend(links.chain)
        worker = worker or links.worker
        if not links.chain:
            return Links(chain, worker, child_failed, links.unfinished)
        child_failed = links.child_failed
        relation = read_separator(cur)
        if relation is None:
            return Links(chain, worker, child_failed, links.unfinished)


def read_python_chain(cur: Cursor, refs: Refs) -> Links:
    return read_chain(cur, refs, read_python_link)


def read_python_link(cur: Cursor, refs: Refs, relation: Relation) -> Links:
    """One `Traceback (most recent call last):` with its frames and exception (IPython's frames under its
    `ValueError    Traceback (most recent call last)`); an empty chain if the traceback stops before its
    exception line (the log or the window ended)."""
    header = cur.peek()
    if header is None:
        return Links([])
    if _PYTHON_HEADER.search(header.body):
        cur.take()
        frames = read_frames(cur)
    elif IPYTHON_HEADER.match(header.body.strip()):
        cur.take()
        frames = read_ipython_frames(cur)
    else:
        return Links([])
    found = find_exception_line(cur)
    if found is None:
        return Links([], unfinished=frames)
    return finish_exception(cur, refs, cur.lines[cur.pos - 1], found, frames, relation)


def finish_exception(
    cur: Cursor,
    refs: Refs,
    named: Printed,
    found: ExceptionLine,
    frames: list[Frame],
    relation: Relation,
    rejoin: Rejoin | None = None,
) -> Links:
    """The exception `named` names, with its message, torchrun's summary or a worker's re-raised chain."""
    if found.exc_type.endswith("ChildFailedError"):
        summary = read_summary(cur)
        if summary is not None:
            return Links([_raised(found.exc_type, summary, frames, refs(named), relation)], child_failed=True)
    if found.first == "Traceback (most recent call last):":  # torch < 1.0: the worker's traceback is the message
        cur.pos -= 1  # read the exception line again, as the header of the worker's traceback it opens
        cur.lines[cur.pos] = named._replace(body=found.first)
        inner = read_python_chain(cur, refs)
        last = inner.chain[-1] if inner.chain else None
        message = f"{last.exc_type}: {last.message}" if last else ""
        main = _raised(found.exc_type, message, frames, refs(named), "cause")
        return Links([*inner.chain, main], unfinished=inner.unfinished)
    message = read_message(cur, found.first, rejoin, named.body)
    caught = _CAUGHT.match(found.first)
    following = cur.peek()
    if caught is not None and following is not None and following.body.strip() == _ORIGINAL:
        inner = read_python_chain(cur, refs)
        if inner.chain:
            inner.chain[0].relation = relation
        main = _raised(found.exc_type, message, frames, refs(named), "cause" if inner.chain else relation)
        return Links([*inner.chain, main], worker=caught["worker"], unfinished=inner.unfinished)
    return Links([_raised(found.exc_type, message, frames, refs(named), relation)])


def _raised(exc_type: str, message: str, frames: list[Frame], ref: LineRef, relation: Relation) -> RaisedException:
    assertion = None
    if exc_type.rsplit(".", 1)[-1] == "AssertionError" and frames:
        assertion = asserted(frames[-1].source)
    return RaisedException(
        exc_type=exc_type, message=message, frames=frames, ref=ref, relation=relation, assertion=assertion
    )


def read_exception_only(cur: Cursor, refs: Refs) -> Links:
    """A structure that starts at its exception line (a worker's re-raise, torchrun's summary) rather than
    at a traceback header: the frames before it were not in the window."""
    named = cur.take()
    found = exception_line(named.body) if named is not None else None
    if named is None or found is None:
        return Links([])
    links = finish_exception(cur, refs, named, found, [], None)
    relation = read_separator(cur)
    if relation is None:
        return links
    rest = read_python_chain(cur, refs)
    if rest.chain:
        rest.chain[0].relation = relation
    child_failed = rest.child_failed if rest.chain else links.child_failed
    return Links(links.chain + rest.chain, links.worker or rest.worker, child_failed, rest.unfinished)


# -- IPython's (Jupyter's, Colab's) traceback ----------------------------------------------------------------
#
#     ValueError                                Traceback (most recent call last)
#     Cell In [93], line 2                    <- also `Cell In[3], line 2`, `Input In [3], in <cell line: 1>()`
#           1 import accelerate
#     ----> 2 accelerate.notebook_launcher(training_function, args=(text_encoder, vae, unet))
#
#     File ~\AppData\...\accelerate\launchers.py:87, in notebook_launcher(function, args, num_processes, ...)
#          86     if num_processes is None:
#     ---> 87         raise ValueError(
#
#     ValueError: You have to specify the number of GPUs you would like to use, add `num_processes=...` to your call.
#
# IPython 7 and older name a frame `path in function(args)` (`<ipython-input-6-eb79...> in <module>()`; Colab links
# the path, `[/usr/.../builder.py](https://localhost:8080/#) in _prepare_split_single(self, ...)`) and its line only
# at the arrow. Colab folds library frames into a `8 frames` line.

IPYTHON_HEADER = re.compile(r"[A-Za-z_][\w.]*\s+Traceback \(most recent call last\)\s*$")
_IPY_FILE = re.compile(r"File (?P<file>.+?):(?P<line>\d+), in (?P<func>[^\s(]+)")
_IPY_CELL = re.compile(r"(?P<file>(?:Cell|Input) In ?\[\s*\d+\]), (?:line (?P<line>\d+)|in (?P<func><cell line: \d+>))")
_IPY_OLD = re.compile(r"(?:\[(?P<linked>[^\]]+)\]\([^)\s]*\)|(?P<file>\S(?:.*?\S)?)) in (?P<func>[^\s(]+)\(")
IPYTHON_ARROW = re.compile(r"-+> ?(?P<line>\d+)(?: (?P<code>.*))?$")
_IPY_CONTEXT = re.compile(r"\s+\d+(?: |$)")
_IPY_FOLDED = re.compile(r"\d+ frames?$")
_WINDOWS_PATH = re.compile(r"[A-Za-z]:[\\/]")


def ipython_title(text: str) -> Frame | None:
    """The frame a line of IPython's names (`File x.py:12, in f(a)`, `Cell In[3], line 2`, `x.py in f(a)`)."""
    if (m := _IPY_FILE.match(text)) is not None:
        return make_frame(m["file"], int(m["line"]), m["func"], None)
    if (m := _IPY_CELL.match(text)) is not None:
        return make_frame(m["file"], int(m["line"]) if m["line"] else None, m["func"] or "<module>", None)
    if (m := _IPY_OLD.match(text)) is not None:
        return make_frame(m["linked"] or m["file"], None, m["func"], None)
    return None


def is_ipython_source(body: str) -> bool:
    """A numbered line of the source IPython prints under a frame, the failing one behind its arrow."""
    return bool(IPYTHON_ARROW.match(body.strip()) or _IPY_CONTEXT.match(body))


def read_ipython_frames(cur: Cursor) -> list[Frame]:
    """IPython's frames: a title, the numbered source around the failing line (`---> 87 code`), blank lines
    between frames and Colab's `N frames`; up to the exception line. A cut excerpt may start in the source."""
    frames: list[Frame] = []
    while (line := cur.peek()) is not None:
        text = line.body.strip()
        if not text or _IPY_FOLDED.match(text):
            cur.take()
            continue
        if exception_line(text) is not None and not _WINDOWS_PATH.match(text):
            break
        arrow = IPYTHON_ARROW.match(text)
        if arrow is not None:
            cur.take()
            if not frames:  # the excerpt starts inside a frame's source: its title was cut away
                frames.append(make_frame("", None, None, None))
            last = frames[-1]
            number = last.line if last.line is not None else int(arrow["line"])
            code = (arrow["code"] or "").strip() or last.source
            frames[-1] = last.model_copy(update={"line": number, "source": last.source or code})
        elif _IPY_CONTEXT.match(line.body):
            cur.take()
        elif (frame := ipython_title(text)) is not None:
            cur.take()
            frames.append(frame)
        else:
            break
    return frames

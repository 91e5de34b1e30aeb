"""rich's box-drawn traceback (accelerate, typer, kohya's scripts) as the same record as Python's own.

    ╭───────────────────── Traceback (most recent call last) ─────────────────────╮
    │ /opt/conda/lib/python3.7/site-packages/deepspeed/runtime/config.py:          │
    │ 891 in _batch_assertion                                                     │
    │ ❱  891 │   │   │   f"Check batch related parameters. train_batch_si         │
    │ ╭──────── locals ────────╮                                                  │
    ╰─────────────────────────────────────────────────────────────────────────────╯
    AssertionError: Check batch related parameters. train_batch_size is not
    equal to micro_batch_per_gpu * gradient_acc_step * world_size 64 != 4 *

A frame is `path:line in function` (`in function:line` when rich found no file), wrapped inside the box when
long; its source is the `❱` line of the pane under it. rich word-wraps the exception's message at the
console's width, which is the box's when the box is narrower than rich's 100-column default: only then is
a wrap told from a line break.
"""

from __future__ import annotations

import re

from crashcart.parsers.frames import make_frame
from crashcart.parsers.models import Frame
from crashcart.parsers.printers import Cursor
from crashcart.parsers.pytracebacks import Links, Refs, Relation, finish_exception, read_chain
from crashcart.parsers.raised import Rejoin, find_exception_line

RICH_DEFAULT_WIDTH = 100  # rich.traceback.Traceback(width=100): a box this wide says nothing of the console's
_TITLE = re.compile(r"(?P<file>.+):(?P<line>\d+) in (?P<func>\S+)$")
_TITLE_NO_FILE = re.compile(r"in (?P<func>\S+):(?P<line>\d+)$")
# A line of a source pane: right-aligned line numbers (`❱` at the failing one), then the code behind its
# indentation guides. A wrapped frame title that goes on with its line number starts flush instead.
_SOURCE = re.compile(r"(?:(?P<mark>❱)|\s)\s*(?P<line>\d+)(?: │|\s|$)(?P<code>.*)$")
_HIDDEN = re.compile(r"\.\.\. \d+ frames hidden \.\.\.$")
_MAX_TITLE_PARTS = 4


def is_rich_header(body: str) -> bool:
    return body.startswith("╭") and "Traceback (most recent call last)" in body


def read_rich_chain(cur: Cursor, refs: Refs) -> Links:
    return read_chain(cur, refs, read_rich_link)


def read_rich_link(cur: Cursor, refs: Refs, relation: Relation) -> Links:
    header = cur.peek()
    if header is None or not is_rich_header(header.body.lstrip()):
        return Links([])
    cur.take()
    box = header.body.strip()
    width = len(box)
    frames = _read_box(cur, width - 4)
    found = find_exception_line(cur)
    if found is None:
        return Links([], unfinished=frames)
    named = cur.lines[cur.pos - 1]
    return finish_exception(cur, refs, named, found, frames, relation, rejoin_for(width))


def read_cut_box(cur: Cursor, refs: Refs) -> Links:
    """A box whose top was cut away (a log that starts inside it): its frames, then the exception under it.

    The excerpt's first line may have lost its `│ ` too. The box's width, which the message's wraps need, is
    that of its whole lines, as the top line is gone.
    """
    width = _box_width(cur)
    frames = _read_box(cur, width - 4, cut=True)
    if not frames:
        return Links([])
    found = find_exception_line(cur)
    if found is None:
        return Links([], unfinished=frames)
    return finish_exception(cur, refs, cur.lines[cur.pos - 1], found, frames, None, rejoin_for(width))


def is_box_line(body: str) -> bool:
    """A line of a box's inside, or one whose left edge was cut away."""
    text = body.strip()
    return text.endswith("│") or (text.startswith("│") and len(text) > 1)


def _box_width(cur: Cursor) -> int:
    widths = []
    for ahead in range(len(cur.lines) - cur.pos):
        text = cur.lines[cur.pos + ahead].body.strip()
        if not is_box_line(text):
            break
        if text.startswith("│") and text.endswith("│"):
            widths.append(len(text))
    return max(widths, default=RICH_DEFAULT_WIDTH)


def _read_box(cur: Cursor, inner: int, *, cut: bool = False) -> list[Frame]:
    """The frames of one box, up to and with its bottom line `╰───╯` (`cut`: its first line may lack `│`)."""
    frames: list[Frame] = []
    while (line := cur.peek()) is not None:
        text = line.body.strip()
        if text.startswith("╰"):
            cur.take()
            break
        if not text.startswith("│") and not (cut and cur.pos == 0 and text.endswith("│")):
            break  # the box was cut short
        cur.take()
        content = _content(line.body)
        stripped = content.strip()
        if not stripped or _HIDDEN.match(stripped):
            continue
        if stripped.startswith("╭"):
            _skip_panel(cur)
        elif source := _SOURCE.match(content):
            if source["mark"] and frames:
                code = source["code"].replace("│", " ").strip()
                frames[-1] = frames[-1].model_copy(update={"source": code or None})
        else:
            frame = _read_title(cur, content, inner)
            if frame is not None:
                frames.append(frame)
    return frames


def _content(body: str) -> str:
    """What sits between a box line's `│ ` and ` │` (trailing padding kept: it tells a fold from a wrap)."""
    text = body.strip()
    text = text[1:] if text.startswith("│") else text
    text = text[:-1] if text.endswith("│") else text
    return text[1:] if text.startswith(" ") else text


def _skip_panel(cur: Cursor) -> None:
    """A locals panel nested in the box: `│ ╭─ locals ─╮ │` ... `│ ╰──────╯ │`."""
    while (line := cur.peek()) is not None and line.body.strip().startswith("│"):
        cur.take()
        if _content(line.body).strip().startswith("╰"):
            return


def _read_title(cur: Cursor, content: str, inner: int) -> Frame | None:
    """`path:line in function`, rejoined when rich wrapped it over box lines: folded (no space) where the
    part filled the box, word-wrapped (a space) where it stopped short."""
    title = content.rstrip()
    for _ in range(_MAX_TITLE_PARTS):
        m = _TITLE.match(title) or _TITLE_NO_FILE.match(title)
        if m is not None:
            file = m.groupdict().get("file") or ""  # rich printed no path: the file was not on disk
            return make_frame(file, int(m["line"]), m["func"], None)
        following = cur.peek()
        if following is None or not following.body.strip().startswith("│"):
            return None
        part = _content(following.body).rstrip()
        if not part.strip() or _SOURCE.match(part) or part.strip().startswith("╭"):
            return None
        cur.take()
        folded = len(content.rstrip()) >= inner
        title = title + ("" if folded else " ") + part.strip()
        content = part
    return None


def rejoin_for(box_width: int) -> Rejoin | None:
    """Lines rich wrapped at the console's width: the next word would not have fitted on the line."""
    if box_width >= RICH_DEFAULT_WIDTH:
        return None
    console = box_width

    def rejoin(line: str, following: str) -> str | None:
        """The glue between a wrapped line and the next: the next word would not have fitted."""
        if not following or following[0].isspace() or len(line) > console:
            return None
        word = following.split(" ", 1)[0]
        if len(line) + 1 + len(word) <= console:
            return None
        return "" if len(line) == console and " " not in line else " "  # a word longer than a line is folded

    return rejoin

"""Which lines after a header its printer wrote: launcher and timestamp prefixes, other ranks' lines, hard wraps.

A combined log interleaves the tracebacks of many ranks line by line, each line behind its printer's prefix
(`[rank3]: `, `[default3]:`, `3: `, `[1,3]<stderr>:`, `[gpu187:0]:`, a timestamp). The prefix on the header
line says which of the following lines are this structure's own: those are kept with the prefix stripped,
lines of other printers are skipped, and an unprefixed line ends the structure only when it is clearly a log
record of its own. A console that hard-wraps at its width cuts a line in two: when the cut is clear (the line
is exactly the console's width and what follows cannot start a line of its own) the halves are joined here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from crashcart.parsers.attribution import strip_prefixes
from crashcart.parsers.headers import has_header, starts_with_header

MAX_LINE_CHARS = 16_384  # a line is parsed no further than this (lines can be 10 MB)
CONSOLE_WIDTH = 80  # the classic terminal: the one width a single cut line is enough to trust
_LOOKAHEAD = 16  # lines after the header that must confirm a prefix
_PREFIX_CHARS = 200  # a printer's prefix is short; a longer lead-in is a progress bar or other noise

# Log records that start a line of their own: a timestamp, a glog/logging/level lead, a tool's own tag.
RECORD_START = re.compile(
    r"\[?\d{4}[-/.]\d\d[-/.]\d\d[T _]\d\d:\d\d"
    r"|\[?\d\d[-/]\d\d(?:[-/]\d{2,4})?[ T_-]\d\d:\d\d"
    r"|\[?\d\d:\d\d:\d\d"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d"
    r"|\[?[IWEF]\d{4} \d\d:\d\d:\d\d"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.-]*:"
    r"|\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)\]?[ :|]"
    r"|(?:wandb|srun|slurmstepd|Fatal Python error): |Exception ignored in|Exception in thread "
    r"|[\w.-]+:\d+:\d+ \[\d+\] NCCL "
    r"|\s*\d{1,3}%(?:\||\s+\d+/\d+ \[)"  # tqdm's bar, or its counts where a notebook dropped the bar
)
_TIMESTAMP = re.compile(
    r"\[?(?:\d{4}[-/.]\d\d[-/.]\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?"
    r"|\d\d:\d\d:\d\d(?:[.,]\d+)?)\]?"
)
# Launcher prefixes right before a header that follows other output on its line (a progress bar).
_LAUNCHER_TAIL = re.compile(r"(?:\[(?:rank|default)\d{1,7}\]: ?|\[\d{1,7},\d{1,7}\]<std(?:out|err)>: ?)+$")
_LAUNCHER_LEAD = re.compile(r"\[(?:rank|default)\d{1,7}\]:|\[\d{1,7},\d{1,7}\]<std(?:out|err)>:")
_EXCEPTION_LIKE = re.compile(r"[A-Za-z_][\w.]*:(?: |$)")
_OWN_LINE = re.compile(
    r"\s|[│╭╰]|[=*-]{10}|File \"|frame #\d|Exception raised from |CUDA kernel errors|For debugging consider"
)


class Printed(NamedTuple):
    """One line of the structure's printer: where it is in the window and its text without the prefix."""

    idx: int  # window index of the line (of its first part, when a hard wrap was rejoined)
    body: str
    last: int  # window index of its last part


class Printer(NamedTuple):
    """The prefix every line of one printer starts with (None: the header had none)."""

    prefix: re.Pattern[str] | None

    def body(self, line: str) -> str | None:
        """The line without the prefix, or None if another printer wrote it."""
        if self.prefix is None:
            return None if _LAUNCHER_LEAD.match(line) else line
        m = self.prefix.match(line)
        return line[m.end() :] if m else None


def printer_of(window: Sequence[str], header_at: int) -> Printer:
    """The printer of the header in window[0] (starting at header_at), confirmed by the lines after it."""
    lead = window[0][:header_at]
    if not lead.strip() or len(lead) > _PREFIX_CHARS:
        tail = _LAUNCHER_TAIL.search(lead[-_PREFIX_CHARS:])
        return _confirmed([_literal(tail.group())] if tail else [], window) or Printer(None)
    candidates = []
    stamp = _TIMESTAMP.match(lead)
    if stamp:
        candidates.append(_shaped(lead, stamp.end()))
    candidates.append(_literal(lead))
    tail = _LAUNCHER_TAIL.search(lead)
    if tail and tail.start() > 0:
        candidates.append(_literal(tail.group()))
    found = _confirmed(candidates, window)
    if found is not None:
        return found
    if not strip_prefixes(lead):  # a launcher's prefix, with nothing after the header to confirm it
        return Printer(_literal(lead))
    return Printer(None)


def _confirmed(candidates: list[re.Pattern[str]], window: Sequence[str]) -> Printer | None:
    following = window[1 : 1 + _LOOKAHEAD]
    for candidate in candidates:
        if any(candidate.match(line) for line in following):
            return Printer(candidate)
    return None


def _literal(prefix: str) -> re.Pattern[str]:
    return _shaped(prefix, 0)


def _shaped(prefix: str, shaped_end: int) -> re.Pattern[str]:
    """The prefix as a pattern: digits and spaces of prefix[:shaped_end] (a timestamp) may vary; trailing
    spaces are optional, so that a blank line of the printer, printed without them, is still its own."""
    core = prefix.rstrip(" ")
    pad = len(prefix) - len(core)
    shaped = re.sub(r"\\ ", " ", re.escape(core[:shaped_end]))
    shaped = re.sub(r"\d+", r"\\d+", shaped)
    shaped = re.sub(r" +", " +", shaped)
    return re.compile(shaped + re.escape(core[shaped_end:]) + f" {{0,{pad}}}")


def wrap_width(window: Sequence[str]) -> int | None:
    """The console width the window was hard-wrapped at, when it shows: no line is longer, and lines of
    exactly that width go on in the next line, once at the classic 80 columns, twice at any other width."""
    lengths = [len(line) for line in window]
    top = max(lengths, default=0)
    if top < CONSOLE_WIDTH:
        return None
    cuts = sum(1 for i in range(len(window) - 1) if lengths[i] == top and continues(window[i + 1]))
    return top if cuts >= (1 if top == CONSOLE_WIDTH else 2) else None


def continues(text: str) -> bool:
    """Whether a line after a cut one can be its continuation: nothing that starts a line of its own."""
    return bool(text) and not (
        _OWN_LINE.match(text)
        or _LAUNCHER_LEAD.match(text)
        or RECORD_START.match(text)
        or _EXCEPTION_LIKE.match(text)
        or starts_with_header(text)
    )


class View(NamedTuple):
    lines: list[Printed]
    foreign_header: int | None  # window index of the first header another printer wrote


def printed_lines(window: Sequence[str], header_at: int, *, rejoin_wraps: bool = True) -> View:
    """The header's printer's lines of the window, prefixes stripped, hard wraps rejoined (linear)."""
    printer = printer_of(window, header_at)
    width = wrap_width(window) if rejoin_wraps else None
    lines = [Printed(0, _cut(window[0][header_at:]), 0)]
    full = width is not None and len(window[0]) == width
    foreign: int | None = None
    prefixed = printer.prefix is not None
    for idx in range(1, len(window)):
        raw = window[idx].rstrip("\r\n")
        body = printer.body(raw)
        rest = (raw if body is None else None) if prefixed else body  # what a cut line would continue with
        if full and rest is not None and continues(rest):
            first = lines[-1]
            lines[-1] = Printed(first.idx, _cut(first.body + rest), idx)
            full = len(raw) == width
            continue
        full = width is not None and len(raw) == width
        if body is not None:
            lines.append(Printed(idx, _cut(body), idx))
        elif not raw.strip():
            lines.append(Printed(idx, "", idx))  # a blank line belongs to no printer: keep it as this one's
        elif prefixed and (RECORD_START.match(raw) or starts_with_header(raw)):
            break  # an unprefixed record of its own ends the structure
        elif foreign is None and has_header(raw):
            foreign = idx
    return View(lines, foreign)


def _cut(text: str) -> str:
    return text[:MAX_LINE_CHARS]


class Cursor:
    """A reading position in one printer's lines: readers take what they recognise and leave the rest."""

    def __init__(self, lines: list[Printed]) -> None:
        self.lines = lines
        self.pos = 0

    def peek(self, ahead: int = 0) -> Printed | None:
        at = self.pos + ahead
        return self.lines[at] if at < len(self.lines) else None

    def take(self) -> Printed | None:
        line = self.peek()
        if line is not None:
            self.pos += 1
        return line

    def next_text(self, ahead: int = 0) -> str | None:
        """The first non-blank body at or after `ahead` lines on."""
        while (line := self.peek(ahead)) is not None:
            if line.body.strip():
                return line.body
            ahead += 1
        return None

    def skip_blank(self) -> None:
        while (line := self.peek()) is not None and not line.body.strip():
            self.pos += 1

    def end(self) -> int:
        """How many window lines the lines taken so far cover (at least the header)."""
        return self.lines[self.pos - 1].last + 1 if self.pos else 1

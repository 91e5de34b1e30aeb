"""Text from logs, file names and node names made safe to show on a terminal or in a chat message.

A log captured from a terminal keeps its colour codes; a line or a file name can hold any byte. Written
raw, an escape sequence recolours, clears or retitles the reader's terminal (OSC 52 even writes the
clipboard), a CR overwrites the line and bidi controls reorder it. So colour and cursor codes (CSI) are
dropped from log text, since they only style it; every other control character is shown as a visible escape
(`\\x1b`, `\\x07`), so nothing the program printed is lost. A file name keeps even its colour codes, escaped:
it must be found again as it is. Markdown gets the same treatment: it is printed to a terminal too, and a raw
ESC in a chat message is unreadable. JSON needs none: it escapes them itself.
Hand-written: the ANSI strippers on PyPI drop colour codes but leave the other controls in.
Counts shown to people are here too (`counted`): every face module prints them, and this one loads light.
"""

from __future__ import annotations

import re

_CSI = r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # ECMA-48 control sequence: colours, cursor moves, erases
# C0 but tab, DEL, C1, lone surrogates (undecodable bytes of a file name), bidi embeddings/overrides/isolates
_CONTROL = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]"
_UNSAFE = re.compile(rf"({_CSI})|\n|{_CONTROL}")
_UNSAFE_BUT_NEWLINES = re.compile(rf"({_CSI})|{_CONTROL}")
_UNSAFE_NAME = re.compile(rf"\n|{_CONTROL}")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _visible(match: re.Match[str]) -> str:
    if match.lastindex:  # a colour or cursor code: dropped
        return ""
    char = match.group(0)
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str, *, newlines: bool = False) -> str:
    """Log text without colour codes and with every other control character written as a visible escape.

    A newline is escaped too (a log line is one line), unless `newlines` keeps it (prose).
    """
    if text.isprintable():
        return text
    return (_UNSAFE_BUT_NEWLINES if newlines else _UNSAFE).sub(_visible, text)


def printable_name(name: str) -> str:
    """A file name (or a message naming one) with every control character escaped, colour codes too."""
    return name if name.isprintable() else _UNSAFE_NAME.sub(_visible, name)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 file`, `2 files`, `1,204 lines`: a count with its noun in the right number."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"

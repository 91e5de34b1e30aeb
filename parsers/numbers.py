"""Numbers read off log lines, file names and scheduler output, parsed so that no value can crash a triage.

Python's int() refuses more than 4,300 digits (a ValueError, CVE-2020-10735), and str.isdigit() accepts
characters int() rejects ('²'); a log can hold either. No rank, task id, XID, NCCL sequence number or
iteration needs more than a uint64's 20 digits, so a longer run of digits is taken for no number at all.
"""

from __future__ import annotations

MAX_DIGITS = 20  # 2**64 - 1 = 18446744073709551615


def small_int(text: str | bytes, max_digits: int = MAX_DIGITS) -> int | None:
    """The number written in text as ASCII digits only, or None when it is not one or has over max_digits."""
    if not text or len(text) > max_digits or not text.isascii() or not text.isdigit():
        return None
    return int(text)

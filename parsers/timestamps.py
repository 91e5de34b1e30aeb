"""Wall-clock time of a log line, so that events from different files can be put in one order.

Every launcher and library stamps lines its own way; this reads the common ones and gives up
quietly on the rest. Times are naive, in the log's own clock, unless the line names a zone (then
they are converted to UTC), so that stamps of one job compare with each other. Uptime stamps
(dmesg `[12345.678]`) are not wall-clock and give None. Called on evidence lines, so it is cheap:
one substring test rejects most lines, and only the first 64 characters are looked at.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import re2

from crashcart.parsers.attribution import strip_prefixes

HEAD = 64  # characters looked at, after launcher prefixes
_RAW_HEAD = HEAD + 64  # room for the prefixes themselves

_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS = {m: i for i, m in enumerate(_MONTH_NAMES, 1)}
_FRAC = r"(?:[.,](\d{1,9}))?"
_HMS = r"(\d\d):(\d\d):(\d\d)" + _FRAC

# 2024-01-01T12:00:00.123Z, 2024-01-01 12:00:00,141, [2023-08-07 18:35:18,432], 2024/01/01 12:00:00
_ISO = re.compile(r"(?<!\d)(\d{4})[-/](\d\d)[-/](\d\d)[T ]" + _HMS + r"(Z|[+-]\d\d:?\d\d(?!\d))?")
# glog / absl / c10 (c10 does not pad the month: E419 = Apr 19): E1128 07:35:07.606841, [E1206 18:44:12.7]
_GLOG = re.compile(r"\[?[IWEF](\d{1,2})(\d\d) " + _HMS)
# syslog: Nov 28 07:35:07 host kernel: ...
_SYSLOG = re.compile(r"([A-Z][a-z]{2}) {1,2}(\d{1,2}) " + _HMS)
# dmesg -T / ctime: [Tue Nov 28 07:35:07 2023]
_CTIME = re.compile(r"\[?[A-Z][a-z]{2} ([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})")
# two-digit year: 22-09-01 02:31:11.512
_YY = re.compile(r"\[?(\d\d)-(\d\d)-(\d\d)[ T]" + _HMS)
# month/day: [02/25 05:00:27] (PaddleDetection), 08/07/2023 18:35:18 (Hugging Face examples)
_MD = re.compile(r"\[?(\d\d)/(\d\d)(?:/(\d{4}))?[ ,]" + _HMS)
# dmesg uptime: [12345.678901] -- seconds since boot, not a wall clock
_UPTIME = re.compile(r"\[ *\d+\.\d+\]")


def _micro(frac: str | None) -> int:
    return int((frac + "00000")[:6]) if frac else 0


def _year(year: int | None) -> int:
    return year if year is not None else datetime.now().year


def _iso(m: re.Match[str]) -> datetime:
    y, mo, d, hh, mi, ss, frac, zone = m.groups()
    dt = datetime(int(y), int(mo), int(d), int(hh), int(mi), int(ss), _micro(frac))
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        dt -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return dt


def _glog(m: re.Match[str], year: int | None) -> datetime:
    mo, d, hh, mi, ss, frac = m.groups()
    return datetime(_year(year), int(mo), int(d), int(hh), int(mi), int(ss), _micro(frac))


def _syslog(m: re.Match[str], year: int | None) -> datetime | None:
    mon, d, hh, mi, ss, frac = m.groups()
    month = _MONTHS.get(mon)
    if month is None:
        return None
    return datetime(_year(year), month, int(d), int(hh), int(mi), int(ss), _micro(frac))


def _ctime(m: re.Match[str]) -> datetime | None:
    mon, d, hh, mi, ss, y = m.groups()
    month = _MONTHS.get(mon)
    return datetime(int(y), month, int(d), int(hh), int(mi), int(ss)) if month else None


def _yy(m: re.Match[str]) -> datetime:
    y, mo, d, hh, mi, ss, frac = m.groups()
    return datetime(2000 + int(y), int(mo), int(d), int(hh), int(mi), int(ss), _micro(frac))


def _md(m: re.Match[str], year: int | None) -> datetime:
    mo, d, y, hh, mi, ss, frac = m.groups()
    return datetime(int(y) if y else _year(year), int(mo), int(d), int(hh), int(mi), int(ss), _micro(frac))


def _anchored(head: str, year: int | None) -> datetime | None:
    """Formats that start the line; dispatched on the first character so few regexes run."""
    first = head[0]
    if first == "[" and _UPTIME.match(head):
        return None
    probe = head[1:2] if first == "[" else first
    if probe.isdigit():
        m = _ISO.match(head, 1 if first == "[" else 0)
        if m:
            return _iso(m)
        m = _YY.match(head)
        if m:
            return _yy(m)
        m = _MD.match(head)
        return _md(m, year) if m else None
    if probe in "IWEF":
        m = _GLOG.match(head)
        if m:
            return _glog(m, year)
    if probe.isupper():
        m = _SYSLOG.match(head)
        if m:
            return _syslog(m, year)
        m = _CTIME.match(head)
        if m:
            return _ctime(m)
    return None


def parse_timestamp(text: str, year: int | None = None) -> datetime | None:
    """The line's wall-clock time, or None; `year` fills in formats that omit it (else this year).

    Never raises: a malformed stamp (month 13, Feb 30) is no stamp.
    """
    raw = text[:_RAW_HEAD]
    if ":" not in raw:  # every format here has HH:MM:SS
        return None
    head = strip_prefixes(raw)[:HEAD]
    if not head:
        return None
    try:
        found = _anchored(head, year)
        if found is not None:
            return found
        if _UPTIME.match(head):
            return None
        # A date further in: `submitit WARNING (2022-08-12 02:06:11,453)`, `[2024-04-11 16:02:33,141 ...`.
        m = _ISO.search(head) if "-" in head or "/" in head else None
        return _iso(m) if m else None
    except (ValueError, OverflowError):
        return None


# ---------------------------------------------------------------------------------------------------
# Year-less stamps (glog, syslog, `[02/25 05:00:27]`) borrow the year of the file's dated lines.
_NO_YEAR = 4  # a leap year no log is stamped with: given to formats without a year, it tells them apart
# A dated stamp anywhere in a block: ISO 8601 (`2023-12-05T07:16:01`, `2024/03/05 06:07:08`) or ctime with
# its year at the end (`[Tue Nov 28 07:35:07 2023]`). RE2, a DFA: a block without one costs ~0.1 ms per
# 64 KiB, where Python's re, trying the pattern at every byte, took 2 ms.
_DATED = re2.compile(
    rb"((?:19|20)\d\d)[-/][01]\d[-/][0-3]\d[T ][0-2]\d:[0-5]\d"
    rb"|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d ((?:19|20)\d\d)"
)
LEARN_BYTES = 1 << 16  # looked at per block
LEARN_BLOCKS = 4  # blocks looked at before giving up: the year, where there is one, comes early


class YearTracker:
    """Per file: the year of its first dated line, lent to the same file's year-less stamps.

    A kernel log (syslog stamps) and a training log (ISO stamps) of one job must share a clock; with the
    year of today, last December's XID would sort a year after the job's own lines. Feed it whole blocks
    (`learn`: one RE2 search of a block's head until a year is found) and stamp lines with `parse`.
    A year-less stamp whose month falls back by more than half a year (Dec -> Jan) has moved on a year.
    `fallback` is the year to lend before the file shows one (a job-wide year); else this year.
    """

    def __init__(self, fallback: int | None = None) -> None:
        self.year: int | None = None  # the first year the file itself showed
        self._fallback = fallback
        self._looked = 0
        self._month = 0  # month of the last year-less stamp
        self._rolled = 0  # years passed since the first year-less stamp

    def learn(self, block: bytes) -> None:
        """Look for a dated stamp in the head of a block, until one is found (or LEARN_BLOCKS blocks' heads'
        worth of text was looked at: however the file was cut into blocks, the same text is looked at)."""
        if self.year is not None or self._looked >= LEARN_BLOCKS * LEARN_BYTES:
            return
        head = min(len(block), LEARN_BYTES)
        self._looked += head
        m = _DATED.search(block, 0, head)
        if m is not None:
            self.year = int(m.group(1) or m.group(2))

    def parse(self, text: str) -> datetime | None:
        """The line's time as parse_timestamp reads it, a year-less stamp given the file's year."""
        stamp = parse_timestamp(text, _NO_YEAR)
        if stamp is None:
            return None
        if stamp.year != _NO_YEAR:
            if self.year is None:
                self.year = stamp.year
            return stamp
        if stamp.month < self._month - 6:
            self._rolled += 1
        self._month = stamp.month
        base = self.year if self.year is not None else self._fallback
        try:
            return stamp.replace(year=(base if base is not None else datetime.now().year) + self._rolled)
        except ValueError:  # Feb 29 outside a leap year
            return None

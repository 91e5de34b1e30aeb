"""Year-less stamps of files that show no year of their own, given the year the job's other files show.

A file's glog, syslog or dmesg stamps take the year of that file's dated lines (timestamps.YearTracker); a
node's kernel log or a launcher's glog output often has none, and was lent this year. For a job of another
year that put those lines a year away from the job's training lines: a healthy job of last March read as a
hang of 525,000 minutes. Once every file is scanned the job's year is known, so the lent stamps are moved to
it. Only the records of the files that showed no year are touched: a job whose every file is dated pays a
look at each scan's year.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TypeVar

from crashcart.knowledge.records import LineRef
from crashcart.parsers.models import FileScan, MetricPoint

R = TypeVar("R", LineRef, MetricPoint)


def lend_job_year(scans: Sequence[FileScan], this_year: int | None = None) -> list[FileScan]:
    """The scans, those without a year of their own re-dated to the year most of the dated files show."""
    years = Counter(scan.year for scan in scans if scan.year is not None)
    lent = this_year if this_year is not None else datetime.now().year
    if not years:
        return list(scans)
    job_year = max(years.items(), key=lambda item: (item[1], item[0]))[0]
    if job_year == lent:
        return list(scans)
    return [_redated(scan, lent, job_year - lent) if scan.year is None else scan for scan in scans]


def _redated(scan: FileScan, lent: int, delta: int) -> FileScan:
    def move(record: R) -> R:
        stamp = record.time
        if stamp is None or stamp.year < lent:  # dated by the file itself, further in than its year was looked for
            return record
        try:
            moved = stamp.replace(year=stamp.year + delta)
        except ValueError:  # 29 February lent to a year without one
            moved = stamp.replace(year=stamp.year + delta, day=28)
        return record.model_copy(update={"time": moved})

    return scan.model_copy(
        update={
            "hits": [hit.model_copy(update={"ref": move(hit.ref)}) for hit in scan.hits],
            "templates": [t.model_copy(update={"first": move(t.first), "last": move(t.last)}) for t in scan.templates],
            "tracebacks": [
                tb.model_copy(
                    update={
                        "start": move(tb.start),
                        "chain": [exc.model_copy(update={"ref": move(exc.ref)}) for exc in tb.chain],
                    }
                )
                for tb in scan.tracebacks
            ],
            "stacks": [stack.model_copy(update={"start": move(stack.start)}) for stack in scan.stacks],
            "metrics": [move(point) for point in scan.metrics],
        }
    )

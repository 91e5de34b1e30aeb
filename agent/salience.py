"""What makes a log line worth a human's (or a model's) attention when no rule names it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from parsers.models import FileScan

RARE_COUNT = 3  # a template seen this often or less in the whole job is rare
ERRORISH = re.compile(
    r"(?i)error|fail|exception|fatal|abort|killed|traceback|timed? ?out|nan\b|denied|refused|critical|panic|"
    r"giving up|lost\b|expired|unreachable|corrupt"
)


def template_totals(scans: Sequence[FileScan]) -> dict[str, int]:
    """How often each template occurs in the whole job (all files, nodes and ranks)."""
    totals: dict[str, int] = {}
    for scan in scans:
        for stat in scan.templates:
            totals[stat.template_id] = totals.get(stat.template_id, 0) + stat.count
    return totals

"""What makes a log line worth a human's (or a model's) attention when no rule names it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from crashcart.parsers.models import FileScan, TemplateStat

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


def mark_rare(scans: Sequence[FileScan]) -> None:
    """Flag every template that the whole job printed at most RARE_COUNT times."""
    totals = template_totals(scans)
    for scan in scans:
        for stat in scan.templates:
            stat.rare = totals[stat.template_id] <= RARE_COUNT


def salient_templates(scans: Sequence[FileScan], limit: int = 100) -> list[TemplateStat]:
    """The per-node/rank templates worth a look: those with rule hits, then new, then rare ones, in time order."""
    picked = [s for scan in scans for s in scan.templates if s.rule_ids or s.new or s.rare]

    def order(s: TemplateStat) -> tuple:
        kind = 0 if s.rule_ids else 1 if s.new else 2
        return (kind, s.first.time is None, s.first.time or datetime.min, s.first.file, s.first.line)

    picked.sort(key=order)
    return picked[:limit]

"""A job's fingerprint: the few templates and rules that tell its failure apart, for incident memory."""

from __future__ import annotations

from collections.abc import Sequence

from crashcart.agent.events import CollectiveTimeoutEvent, Event, FailureEvent, XidEvent
from crashcart.agent.salience import ERRORISH, RARE_COUNT, template_totals
from crashcart.knowledge.incidents import Fingerprint
from crashcart.knowledge.taxonomy import Role
from crashcart.parsers.models import FileScan

MAX_TEMPLATES = 40


def fingerprint(scans: Sequence[FileScan], events: Sequence[Event]) -> Fingerprint:
    """Rule-hit templates first (strongest rule first), then rare error-like templates, each file's final
    lines, then other rare templates."""
    signals = [e for e in events if isinstance(e, (FailureEvent, XidEvent, CollectiveTimeoutEvent))]
    signals.sort(key=lambda e: (e.role is not Role.ROOT_CAUSE, -e.priority))
    rule_ids = list(dict.fromkeys(e.rule_id for e in signals))
    classes = list(dict.fromkeys(e.failure_class for e in signals if e.role is not Role.CONTEXT))
    totals = template_totals(scans)
    text: dict[str, str] = {}
    hit_rank: dict[str, int] = {}
    order = {rule: i for i, rule in enumerate(rule_ids)}
    for scan in scans:
        for stat in scan.templates:
            text[stat.template_id] = stat.template
            ranks = [order[r] for r in stat.rule_ids if r in order]
            if ranks:
                hit_rank[stat.template_id] = min(ranks + [hit_rank.get(stat.template_id, len(order))])
    with_hits = sorted(hit_rank, key=hit_rank.__getitem__)
    rare = [t for t, n in totals.items() if n <= RARE_COUNT and t not in hit_rank]
    loud = [t for t in rare if ERRORISH.search(text[t])]
    chosen = list(dict.fromkeys(with_hits + loud + _final_words(scans) + rare))[:MAX_TEMPLATES]
    return Fingerprint(templates=[text[t] for t in chosen], rule_ids=rule_ids, classes=classes)


def _final_words(scans: Sequence[FileScan], per_file: int = 3) -> list[str]:
    """The templates of each file's last lines: where a job that died without a known signature says why."""
    out: list[str] = []
    for scan in scans:
        last = sorted(scan.templates, key=lambda s: s.last.line, reverse=True)[:per_file]
        out.extend(s.template_id for s in last)
    return out

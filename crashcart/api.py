"""The library entry points every user path calls: the CLI, the bot, batch triage and tests."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from agent.diagnose import diagnose
from agent.events import build_events
from crashcart.report import Report, ScanStats
from knowledge.rules import Rule, load_rules
from parsers.scan import scan_sources
from parsers.sources import discover

MAX_REPORT_EVENTS = 300


def triage(
    paths: Sequence[str | Path], *, rules: Sequence[Rule] | None = None, workers: int | None = None
) -> Report:
    """Read the logs at `paths` (files, folders, .gz/.zst, '-' for stdin) and diagnose the failure."""
    started = time.perf_counter()
    sources = discover([str(p) for p in paths])
    active = list(rules) if rules is not None else load_rules()
    loaded = time.perf_counter()
    scans = scan_sources(sources, active, workers)
    scanned = time.perf_counter()
    events = build_events(scans)
    diagnosis = diagnose(events, scans)
    done = time.perf_counter()
    size = sum(s.bytes for s in scans)
    seconds = done - started
    stats = ScanStats(
        files=len(scans), lines=sum(s.lines for s in scans), bytes=size,
        rule_hits=sum(len(s.hits) + s.hits_dropped for s in scans),
        templates=len({t.template_id for s in scans for t in s.templates}),
        seconds=round(seconds, 3), mb_per_s=round(size / 1e6 / seconds, 1) if seconds > 0 else 0.0,
    )
    return Report(
        paths=[str(p) for p in paths],
        diagnosis=diagnosis,
        events=events[:MAX_REPORT_EVENTS],
        events_omitted=max(0, len(events) - MAX_REPORT_EVENTS),
        stats=stats,
        timings={
            "load_rules": round(loaded - started, 3),
            "scan": round(scanned - loaded, 3),
            "diagnose": round(done - scanned, 3),
        },
    )

"""The few lines around each evidence line, read again from the job's files for the report to show.

Bounded: CONTEXT lines either side, the first MAX_EVIDENCE evidence lines, each line clipped to LINE_CHARS, and
each span streamed from its file up to its last line (the lines before it only counted). A file gone since the
triage, or standard input (which cannot be read twice), leaves that evidence with its own line alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from crashcart.knowledge.errors import CrashcartError
from crashcart.knowledge.records import Evidence, Strict
from crashcart.parsers.sources import discover, numbered_lines

CONTEXT = 3
MAX_EVIDENCE = 12
LINE_CHARS = 400


class Excerpt(Strict):
    """An evidence line with its neighbours: (line number, text) in order, the evidence line among them."""

    evidence: Evidence
    lines: list[tuple[int, str]]


def excerpts(paths: Sequence[str], evidence: Sequence[Evidence]) -> list[Excerpt]:
    wanted = list(evidence[:MAX_EVIDENCE])
    try:
        sources = {s.display: s for s in discover([p for p in paths if p != "-"]).sources if s.path is not None}
    except CrashcartError:  # the logs moved since: each evidence line stands alone
        sources = {}
    ranges: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for ev in wanted:
        if ev.file in sources:
            ranges[ev.file].append((max(1, ev.line - CONTEXT), ev.line + CONTEXT))
    read: dict[str, dict[int, str]] = defaultdict(dict)
    for file, spans in ranges.items():  # a pass per span: the lines before it are only counted, natively
        for lo, hi in sorted(set(spans)):
            read[file].update((no, text[:LINE_CHARS]) for no, text in numbered_lines(sources[file], lo, hi))
    out = []
    for ev in wanted:
        lines = read.get(ev.file, {})
        around = [(no, lines[no]) for no in range(ev.line - CONTEXT, ev.line + CONTEXT + 1) if no in lines]
        out.append(Excerpt(evidence=ev, lines=around or [(ev.line, ev.text[:LINE_CHARS])]))
    return out

"""What the model is shown, built within a token budget from what the pipeline already has.

Sections, most telling first: the deterministic findings (rule hits), the log lines (the whole log when it fits
the lines' and templates' share of the budget; else the first error-like lines of each node and each file's
last line), the job's rare templates with counts, similar past incidents, and the runbooks of the candidate
classes. Every log line is shown as `[file:line]`, and only those lines may be cited back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from crashcart.agent.events import CollectiveTimeoutEvent, Event, FailureEvent, XidEvent
from crashcart.agent.fingerprint import failure_window, is_progressing
from crashcart.agent.models import Diagnosis
from crashcart.agent.outbound import clip
from crashcart.agent.redact import Redactor
from crashcart.agent.salience import ERRORISH
from crashcart.knowledge.records import LineRef, rank_place
from crashcart.knowledge.runbooks import mitigation_steps
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, DESCRIPTIONS, FailureClass
from crashcart.parsers.attribution import strip_prefixes
from crashcart.parsers.masking import mask
from crashcart.parsers.models import FileScan
from crashcart.parsers.sources import Source, numbered_lines

CHARS_PER_TOKEN = 4
# A shown line is cut here, after its secrets are redacted: long enough for the messages that decide a diagnosis
# (PyTorch's CUDA OOM message is 420-600 characters, NCCL's and the driver's errors as long), shown whole, so a model
# reads the line the rules read and an answer cites what the log says, not its first half.
LINE_CHARS = 1000
FINDING_CHARS = 2000  # a rule's line in the findings: as much as evidence keeps (parsers.templater.KEPT_LINE_BYTES)
TEMPLATE_CHARS = 400  # a template with its first line: a shape, read for what else the job printed
_SHARES = {"findings": 0.25, "lines": 0.35, "templates": 0.2, "similar": 0.1, "runbooks": 0.1}


@dataclass
class Context:
    """The sections of the prompt, and what the answer may refer to."""

    sections: dict[str, str]
    citeable: dict[tuple[str, int], str] = field(default_factory=dict)  # (file, line) -> text shown
    nodes: set[str] = field(default_factory=set)
    ranks: set[str] = field(default_factory=set)  # "rank12": a rank the logs show, a place where no host is named
    redactor: Redactor = field(default_factory=Redactor)  # secrets only: what it redacted while lines were cut

    @property
    def tokens(self) -> int:
        return sum(len(v) for v in self.sections.values()) // CHARS_PER_TOKEN + 1


def _cite(
    ref_file: str,
    line: int,
    node: str | None,
    rank: int | None,
    text: str,
    redactor: Redactor,
    limit: int = LINE_CHARS,
) -> str:
    who = " ".join(x for x in (node, None if rank is None else f"rank{rank}") if x)
    return f"[{ref_file}:{line}]" + (f" ({who})" if who else "") + " " + clip(text, limit, redactor)


class _Section:
    """Lines added until the section's share of the budget is spent."""

    def __init__(self, budget_chars: int) -> None:
        self.budget, self.used = budget_chars, 0
        self.lines: list[str] = []

    def add(self, line: str) -> bool:
        if self.used + len(line) + 1 > self.budget:
            return False
        self.lines.append(line)
        self.used += len(line) + 1
        return True

    def text(self, empty: str = "(none)") -> str:
        return "\n".join(self.lines) or empty


def build_context(
    scans: Sequence[FileScan],
    events: Sequence[Event],
    diagnosis: Diagnosis,
    budget_tokens: int,
    sources: Sequence[Source] = (),
) -> Context:
    """The prompt sections for one job, each within its share of `budget_tokens`; with the job's `sources`, a
    log small enough is shown whole."""
    chars = {name: int(share * budget_tokens * CHARS_PER_TOKEN) for name, share in _SHARES.items()}
    ctx = Context(sections={"taxonomy": _taxonomy()})
    ctx.nodes = {s.node for scan in scans for s in scan.templates if s.node}
    ctx.nodes |= {e.node for e in events if e.node}
    ctx.ranks = {rank_place(s.rank) for scan in scans for s in scan.templates if s.rank is not None}
    ctx.ranks |= {rank_place(e.rank) for e in events if e.rank is not None}
    ctx.sections["findings"] = _findings(diagnosis, events, _Section(chars["findings"]), ctx)
    whole = _whole_log(sources, scans, _Section(chars["lines"] + chars["templates"]), ctx)
    if whole is not None:
        ctx.sections["lines"] = whole
        ctx.sections["templates"] = "(the whole log is shown above)"
    else:
        ctx.sections["lines"] = _first_error_lines(scans, _Section(chars["lines"]), ctx)
        ctx.sections["templates"] = _templates(scans, _Section(chars["templates"]), ctx.redactor)
    ctx.sections["similar"] = _similar(diagnosis, _Section(chars["similar"]))
    ctx.sections["runbooks"] = _runbooks(diagnosis, _Section(chars["runbooks"]))
    return ctx


def _taxonomy() -> str:
    return "\n".join(f"- {c.value} (default action {DEFAULT_ACTION[c].value}): {DESCRIPTIONS[c]}" for c in FailureClass)


def _show(section: _Section, ctx: Context, ref: LineRef | Event, suffix: str = "", limit: int = LINE_CHARS) -> bool:
    line = _cite(ref.file, ref.line, ref.node, ref.rank, ref.text, ctx.redactor, limit) + suffix
    if section.add(line):
        ctx.citeable[(ref.file, ref.line)] = ref.text
        return True
    return False


def _findings(diagnosis: Diagnosis, events: Sequence[Event], section: _Section, ctx: Context) -> str:
    head = f"rules say: {diagnosis.failure_class.value} (confidence {diagnosis.confidence:.2f}): {diagnosis.summary}"
    section.add(head)
    if diagnosis.alternatives:
        section.add(
            "other candidates: " + ", ".join(f"{a.failure_class.value} ({a.score:.0f})" for a in diagnosis.alternatives)
        )
    signals = [e for e in events if isinstance(e, (FailureEvent, XidEvent, CollectiveTimeoutEvent))]
    signals.sort(key=lambda e: -e.priority)
    # one rule's line in the same shape on many ranks (every rank's timeout) is shown once, with where else
    alike: dict[tuple[str, str], list[FailureEvent | XidEvent | CollectiveTimeoutEvent]] = {}
    for event in signals:
        alike.setdefault((event.rule_id, mask(strip_prefixes(event.text))), []).append(event)
    for group in alike.values():
        first = group[0]
        tag = f"  <- rule {first.rule_id}: {first.failure_class.value}, {first.role.value}, x{first.count}"
        if len(group) > 1:
            where = sorted({e.node or (f"rank{e.rank}" if e.rank is not None else e.file) for e in group[1:]})
            tag += f"; alike on {len(group) - 1} more: {', '.join(where[:8])}{' ...' if len(where) > 8 else ''}"
        if not _show(section, ctx, first, tag, FINDING_CHARS):
            break
    return section.text()


def _whole_log(sources: Sequence[Source], scans: Sequence[FileScan], section: _Section, ctx: Context) -> str | None:
    """Every line of every file, when the job's text fits the section (and every file can be read again: standard
    input cannot); None otherwise, and nothing is marked citeable."""
    readable = {s.display: s for s in sources if s.path is not None}
    if not scans or any(scan.file not in readable for scan in scans):
        return None
    if sum(scan.bytes for scan in scans) + 32 * sum(scan.lines for scan in scans) > section.budget:
        return None  # each shown line also carries its [file:line] tag
    shown: dict[tuple[str, int], str] = {}
    for scan in scans:
        for no, text in numbered_lines(readable[scan.file]):
            if not section.add(_cite(scan.file, no, None, None, text, ctx.redactor)):
                return None
            shown[(scan.file, no)] = text
    ctx.citeable.update(shown)
    return section.text()


def _first_error_lines(scans: Sequence[FileScan], section: _Section, ctx: Context) -> str:
    """Per file: its error-like templates' first lines in order, the rare lines where its progress stopped (the
    failure window of agent/fingerprint.py), then its last line."""
    per_file: list[list[LineRef]] = []
    progressing = is_progressing(scans)
    for scan in scans:
        refs = sorted((s.first for s in scan.templates if ERRORISH.search(s.template)), key=lambda r: r.line)
        refs += sorted((s.first for s in failure_window(scan, progressing)), key=lambda r: r.line)
        if scan.templates:
            refs.append(max(scan.templates, key=lambda s: s.last.line).last)
        per_file.append(list({(r.file, r.line): r for r in refs}.values()))
    # the same line from many ranks is shown once, with where else it was printed
    places: dict[str, list[LineRef]] = {}
    for refs in per_file:
        for ref in refs:
            places.setdefault(strip_prefixes(ref.text).strip(), []).append(ref)
    depth = 0
    while any(depth < len(refs) for refs in per_file):  # round-robin so every node gets its first lines in
        for refs in per_file:
            if depth >= len(refs) or (refs[depth].file, refs[depth].line) in ctx.citeable:
                continue
            same = places[strip_prefixes(refs[depth].text).strip()]
            if same[0] is not refs[depth]:
                continue  # shown (or to be shown) where it was first seen
            here = refs[depth].node or refs[depth].file
            others = sorted({r.node or r.file for r in same[1:]} - {here})
            also = f"  (x{len(same)}, also on {', '.join(others[:8])}{' ...' if len(others) > 8 else ''})"
            if not _show(section, ctx, refs[depth], also if others else ""):
                return section.text()
        depth += 1
    return section.text()


def _templates(scans: Sequence[FileScan], section: _Section, redactor: Redactor) -> str:
    """Job-wide templates, rarest first: count, how many nodes/ranks, where first seen."""
    totals: dict[str, list] = {}
    for scan in scans:
        for stat in scan.templates:
            entry = totals.setdefault(stat.template_id, [0, set(), stat])
            entry[0] += stat.count
            entry[1].add((stat.node, stat.rank))
    for count, places, stat in sorted(totals.values(), key=lambda e: (e[0], e[2].first.line)):
        if not section.add(
            f"x{count} on {len(places)} node/rank(s), first {stat.first.file}:{stat.first.line}: "
            f"{clip(_template_text(stat.template, stat.first.text), TEMPLATE_CHARS, redactor)}"
        ):
            break
    return section.text()


def _template_text(template: str, first: str) -> str:
    """The template, or its first line when that line holds a secret: masking can cut a secret into pieces
    (`xoxb-<*>-<*>-AbCd...`) that no pattern knows, while the line itself is redacted whole."""
    return template if Redactor().redact(first) == first else first


def _similar(diagnosis: Diagnosis, section: _Section) -> str:
    for item in diagnosis.similar:
        resolved = f"; resolved: {item.resolution}" if item.resolution else ""
        if not section.add(
            f"- similarity {item.similarity:.2f}: {item.failure_class.value} -> "
            f"{item.action.value} (job {item.job}){resolved}"
        ):
            break
    return section.text("(no similar past incidents)")


def _runbooks(diagnosis: Diagnosis, section: _Section) -> str:
    classes = [diagnosis.failure_class] + [a.failure_class for a in diagnosis.alternatives]
    for cls in dict.fromkeys(c for c in classes if c is not FailureClass.UNKNOWN):
        section.add(f"{cls.value}:")
        for step in mitigation_steps(cls, diagnosis.faulty_nodes)[:3]:
            if not section.add(f"  - {step}"):
                return section.text()
    return section.text()

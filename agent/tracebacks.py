"""A traceback judged by its structure, so that no traceback is left `unknown`.

Single-line signatures see one line; a traceback also says which exception of its chain came first, where it
was raised (an installed package, the standard library, the user's own code), what it went through (DataLoader
workers, image decoders, config validators) and, for a bare assert, what was asserted. A TypeError raised in
transformers' frame that train.py called is an API/version mismatch; the same TypeError raised in train.py
about train.py's own objects is a bug. The rules live in traceback_rules.py; this module picks the telling
exception of a chain and turns verdicts into events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from crashcart.agent.events import FailureEvent
from crashcart.agent.exception_reading import learned
from crashcart.agent.traceback_data import is_worker_reraise
from crashcart.agent.traceback_findings import SUMMARY, Finding
from crashcart.agent.traceback_frames import short_type, where
from crashcart.agent.traceback_launch import judge_unfinished
from crashcart.agent.traceback_rules import FALLBACK_REASONS, judge_exception
from crashcart.knowledge.records import LineRef, Strict
from crashcart.knowledge.rules import generic_rule_ids
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, FailureClass, Role
from crashcart.parsers.masking import mask
from crashcart.parsers.models import FileScan, RaisedException, Traceback

MAX_EVENTS = 50  # a job of 1,000 ranks printing one traceback each stays a small event list

# Verdicts that follow from a failure elsewhere: they name the class only when nothing better is seen.
SYMPTOM_REASONS = frozenset(
    {"bare_runtime_error", "terminate_without_what", "launcher_summary", "dist_backend", "sigterm", "no_exception_line"}
    | {"remote_failure", "remote_node_lost", "library_exception", "learned_symptom"}
)
_NO_EXCEPTION_LINE = Finding("no_exception_line", FailureClass.CODE_BUG, SUMMARY, "a traceback")


class TracebackVerdict(Strict):
    """What one traceback says, and the exception line to cite for it."""

    rule_id: str  # "traceback.<reason>"
    failure_class: FailureClass
    priority: int
    reason: str  # one short phrase: "API/version mismatch: TypeError raised in transformers, called from train.py"
    ref: LineRef


Judged = tuple[Finding, int, Finding | None]  # the rules' finding, the telling link, the prior's when asked


class SignatureLines(NamedTuple):
    """The lines of one file that signatures read: by a message family's signature, or by the exception's type."""

    specific: frozenset[int] = frozenset()
    generic: frozenset[int] = frozenset()


NO_SIGNATURES = SignatureLines()


def judge(
    tb: Traceback, seen: dict[tuple[object, ...], Judged] | None = None, lines: SignatureLines = NO_SIGNATURES
) -> TracebackVerdict:
    """The verdict of the chain's most telling exception; on a tie the oldest, since later ones were raised
    while handling it. A DataLoader worker's re-raise in the main process stands aside for the worker's own.

    Where no rule knew the exception and no specific signature read its line, the prior learned from real
    failures may name its class (exception_reading.py). It names a class, not a cause: a reading of what was
    a symptom stays one, unless a type-only signature had already called the line a root cause.

    With `seen`, a traceback of a shape judged before (every rank printing the same one) is not judged again.
    """
    links = _links(tb)
    if not links:  # the log ended before its exception line: what its frames tell, else only that it failed
        return _verdict(judge_unfinished(tb.unfinished) or _NO_EXCEPTION_LINE, tb.start, "")
    key = _shape(tb)
    found = seen.get(key) if seen is not None else None
    if found is None:
        finding, index = _telling(links, tb)
        found = (finding, index, learned(links[index], tb) if finding.reason in FALLBACK_REASONS else None)
        if seen is not None:
            seen[key] = found
    finding, index, prior = found
    exc = links[index]
    line = exc.ref.line
    if prior is not None and line not in lines.specific and (exc.frames or _bare_but_readable(exc, line, lines)):
        symptom = finding.reason in SYMPTOM_REASONS and line not in lines.generic
        timeout = prior.failure_class is FailureClass.COLLECTIVE_TIMEOUT  # what every waiting rank prints
        finding = prior._replace(reason="learned_symptom") if symptom or timeout else prior
    return _verdict(finding, exc.ref, where(exc))


def _bare_but_readable(exc: RaisedException, line: int, lines: SignatureLines) -> bool:
    """A bare exception line's reading counts only over a type-only signature's, and never for the types that
    where they were raised decides (an AttributeError or TypeError of a library's API, or of the user's own
    class: a line alone cannot tell which)."""
    return line in lines.generic and short_type(exc) not in ("AttributeError", "TypeError")


def _links(tb: Traceback) -> list[RaisedException]:
    """The chain a judgement weighs: a DataLoader worker's re-raise stands aside for the worker's own."""
    return [exc for exc in tb.chain if not is_worker_reraise(exc)] or tb.chain


def _telling(links: list[RaisedException], tb: Traceback) -> tuple[Finding, int]:
    """The most telling link's finding by the rules alone, and its index."""
    judged = [(judge_exception(exc, tb), -i) for i, exc in enumerate(links)]
    best, at = max(judged, key=lambda item: (item[0].priority, item[1]))
    return best, -at


def telling_exceptions(scans: Sequence[FileScan]) -> list[tuple[RaisedException, Traceback]]:
    """Each traceback's most telling exception by the rules alone: what the prior learns from
    (agent/prior_learning.py)."""
    found = []
    for scan in scans:
        for tb in scan.tracebacks:
            links = _links(tb)
            if links:
                found.append((links[_telling(links, tb)[1]], tb))
    return found


def _signature_lines(scan: FileScan) -> SignatureLines:
    generic = generic_rule_ids()
    return SignatureLines(
        specific=frozenset(hit.ref.line for hit in scan.hits if hit.rule_id not in generic),
        generic=frozenset(hit.ref.line for hit in scan.hits if hit.rule_id in generic),
    )


def _shape(tb: Traceback) -> tuple[object, ...]:
    """What a judgement reads of a traceback: all of it but where it was printed."""
    chain = tuple((e.exc_type, e.message, e.relation, e.assertion, tuple(e.frames)) for e in tb.chain)
    return (tb.kind, tb.worker, chain, tuple(tb.unfinished))


def role_of(verdict: TracebackVerdict) -> Role:
    """Root cause, except for verdicts that only follow from a failure elsewhere."""
    reason = verdict.rule_id.removeprefix("traceback.")
    return Role.SYMPTOM if reason in SYMPTOM_REASONS else Role.ROOT_CAUSE


def traceback_events(scans: Sequence[FileScan]) -> list[FailureEvent]:
    """One event per judged traceback, folded: the same exception line on one rank is one event with a count,
    each distinct exception keeps its first event before repeats on other ranks fill the cap."""
    groups: dict[tuple[str, str, str | None, int | None], list[TracebackVerdict]] = {}
    seen: dict[tuple[object, ...], Judged] = {}
    for scan in scans:
        if not scan.tracebacks:  # most files of a job of many ranks
            continue
        lines = _signature_lines(scan)
        for tb in scan.tracebacks:
            if _read_by_a_signature(tb, lines.specific):
                continue
            verdict = judge(tb, seen, lines)
            key = (verdict.rule_id, mask(verdict.ref.text[:300]), verdict.ref.node, verdict.ref.rank)
            groups.setdefault(key, []).append(verdict)
    firsts: dict[tuple[str, str], tuple[str, str, str | None, int | None]] = {}
    for key in groups:
        firsts.setdefault(key[:2], key)
    leaders = set(firsts.values())
    order = list(firsts.values()) + [key for key in groups if key not in leaders]
    return [_event(groups[key]) for key in order[:MAX_EVENTS]]


def _read_by_a_signature(tb: Traceback, hit_lines: frozenset[int]) -> bool:
    """An exception line alone (no frames: parsers/headless.py) that a signature matched: the signature's reading
    of it, root cause or symptom, is all there is; the type alone must not outrank it."""
    frameless = tb.kind == "python" and bool(tb.chain) and not tb.unfinished and not any(e.frames for e in tb.chain)
    return frameless and all(exc.ref.line in hit_lines for exc in tb.chain)


def _event(verdicts: list[TracebackVerdict]) -> FailureEvent:
    first = verdicts[0]
    return FailureEvent(
        **dict(first.ref),
        count=len(verdicts),
        rule_id=first.rule_id,
        failure_class=first.failure_class,
        action=DEFAULT_ACTION[first.failure_class],
        role=role_of(first),
        priority=first.priority,
    )


def _verdict(finding: Finding, ref: LineRef, where: str) -> TracebackVerdict:
    return TracebackVerdict(
        rule_id=f"traceback.{finding.reason}",
        failure_class=finding.failure_class,
        priority=finding.priority,
        reason=f"{finding.label}{where}",
        ref=ref,
    )

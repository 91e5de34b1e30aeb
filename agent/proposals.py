"""Checking a proposed rule before an operator sees it, and the one builder of proposals on those checks.

A proposal (from the LLM agent or from `derive_from_template`) reaches the queue in knowledge/rule_store.py only
with a `Validation` that says it compiles in both engines of the fast filter, has no backtracking-prone shape,
matches every evidence line it was made for, matches no healthy training-log line, is not trivially broad, and,
for its failure class, matches no line of another failure and is at least as specific as the shipped rules it would
outrank (issue 9: `Traceback \\(most recent call last\\)` or `RuntimeError: ` passed every other check).
Each refusal is one line that says what to change, so the agent can retry and the operator can judge.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import accumulate

import hyperscan
import re2

from crashcart.agent import regex_shape
from crashcart.agent.corpora import random_lines
from crashcart.agent.derive import derive_from_template
from crashcart.agent.diagnose import ROLE_WEIGHT
from crashcart.knowledge.crash_lines import crash_lines
from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.healthy import healthy_corpus
from crashcart.knowledge.records import Strict
from crashcart.knowledge.rule_store import Origin, RuleProposal, hyperscan_database
from crashcart.knowledge.rules import Rule, load_rules
from crashcart.knowledge.taxonomy import FailureClass, Role
from crashcart.parsers.rulefilter import RuleFilter
from crashcart.parsers.templater import Templater

__all__ = ["Validation", "propose", "propose_from_line", "propose_from_suggestion", "validate_pattern"]

MIN_LITERALS = 8  # `error`, `\d+ failed`, `.*` fall short; `NCCL WARN` just makes it
MAX_RANDOM_SHARE = 0.01  # of the random log-like lines a specific rule may match
TEMPLATE_MODEL = "drain3-template"
_SHOWN = 120  # characters of a line quoted in a reason
# What a confirmed proposal scores in the diagnosis (a root cause at the record's default priority): the shipped
# rules scoring no more are the ones it would outrank on a line both match.
PROPOSAL_SCORE = ROLE_WEIGHT[Role.ROOT_CAUSE] + RuleProposal.model_fields["priority"].default
UNREADABLE = (
    "shape: Python's parser cannot read it, so its backtracking shape and literals cannot be checked; write it in "
    "the syntax RE2, Hyperscan and Python share"
)


class Validation(Strict):
    """The verdict on one pattern: ok only when reasons is empty; notes say what was checked."""

    ok: bool
    reasons: list[str]
    notes: list[str]


def validate_pattern(
    pattern: str,
    examples: list[str],
    healthy: Iterable[str] | None = None,
    *,
    failure_class: FailureClass | None = None,
) -> Validation:
    """Every reason the pattern cannot be a rule (empty when it can), against `healthy` (default: healthy_corpus).

    With the `failure_class` it is proposed for, also against the lines of other failures and the shipped rules
    it would outrank; without one (a pattern judged on its own) those two checks are skipped.
    """
    reasons: list[str] = []
    notes: list[str] = []
    parsed = regex_shape.parse(pattern)
    unsupported = regex_shape.unsupported(parsed) if parsed is not None else []
    reasons += unsupported + _check_shape(parsed, notes)
    regex, db = _compile(pattern, reasons, quiet=bool(unsupported))
    if regex is not None:
        if parsed is None and db is not None:
            reasons.append(UNREADABLE)
        lines = tuple(healthy) if healthy is not None else _default_healthy()
        reasons += _check_examples(regex, db, examples, notes)
        reasons += _check_healthy(regex, db, lines, notes)
        if failure_class is not None:
            reasons += _check_other_failures(regex, db, failure_class, notes)
            reasons += _check_outranked(parsed, examples, failure_class, notes)
        reasons += _check_random(regex, db, notes)
    return Validation(ok=not reasons, reasons=reasons, notes=notes)


def _check_shape(parsed: regex_shape.Items | None, notes: list[str]) -> list[str]:
    """Backtracking-prone shapes and too few literal characters, read off the parse tree."""
    if parsed is None:
        return []  # refused as UNREADABLE once both engines accept it (else their refusal says why)
    reasons = regex_shape.backtracking(parsed) + regex_shape.padded(parsed)
    literals = regex_shape.required_literals(parsed)
    if literals < MIN_LITERALS:
        reasons.append(
            f"too broad: only {literals} literal characters in every match (at least {MIN_LITERALS} "
            "needed); anchor it on the message's own words"
        )
    else:
        notes.append(f"{literals} literal characters in every match")
    return reasons


@lru_cache(maxsize=1)
def _default_healthy() -> tuple[str, ...]:
    return tuple(healthy_corpus())


def _compile(pattern: str, reasons: list[str], quiet: bool) -> tuple[re2._Regexp | None, hyperscan.Database | None]:
    """Both engines' forms; a refusal is a reason unless an `unsupported:` reason already says why."""
    options = re2.Options()
    options.log_errors = False
    regex = db = None
    try:
        regex = re2.compile(pattern, options)
    except re2.error as exc:
        if not quiet:
            reasons.append(f"compile: RE2 rejects it ({_text(exc)}); the fast filter confirms lines in RE2")
    try:
        db = hyperscan_database(pattern)
    except KnowledgeError as exc:
        if not quiet:
            cause = _text(exc.__cause__) if exc.__cause__ else str(exc)
            reasons.append(f"compile: Hyperscan rejects it ({cause}); the fast filter scans blocks with Hyperscan")
    return regex, db


def _text(exc: BaseException) -> str:
    arg = exc.args[0] if exc.args else exc
    return (arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)).splitlines()[0]


def _check_examples(
    regex: re2._Regexp, db: hyperscan.Database | None, examples: list[str], notes: list[str]
) -> list[str]:
    if not examples:
        return ["misses example: none given; pass the evidence lines it must match"]
    reasons = [f"misses example: {ex[:_SHOWN]!r}" for ex in examples if not regex.search(ex)]
    if db is not None:
        reasons += [
            f"compile: Hyperscan misses example {ex[:_SHOWN]!r} that RE2 matches; the filter would never see it"
            for ex in examples
            if regex.search(ex) and not _matching(regex, db, (ex,))
        ]
    if not reasons:
        notes.append(f"matches all {len(examples)} example line(s) in RE2 and Hyperscan")
        notes += _known_already(examples)
    return reasons


def _known_already(examples: list[str]) -> list[str]:
    """A note (not a refusal) when shipped failure rules already fire on the evidence: the proposal may be redundant,
    or may name a deeper cause than they do; the operator decides."""
    shipped = _shipped_filter()
    ids = sorted(
        {
            shipped.rules[h.rule_index].id
            for h in shipped.scan("\n".join(examples).encode())
            if shipped.rules[h.rule_index].role is not Role.CONTEXT
        }
    )
    return [f"shipped rules already match the examples: {', '.join(ids)}"] if ids else []


@lru_cache(maxsize=1)
def _shipped_filter() -> RuleFilter:
    return RuleFilter(load_rules())


def _check_healthy(
    regex: re2._Regexp, db: hyperscan.Database | None, lines: tuple[str, ...], notes: list[str]
) -> list[str]:
    hits = _matching(regex, db, lines)
    if hits:
        more = f" (and {len(hits) - 1} more)" if len(hits) > 1 else ""
        return [f"matches healthy line: {lines[hits[0]][:_SHOWN]!r}{more}; make it specific to the failure"]
    notes.append(f"matches none of {len(lines)} healthy log lines")
    return []


def _check_other_failures(
    regex: re2._Regexp, db: hyperscan.Database | None, failure_class: FailureClass, notes: list[str]
) -> list[str]:
    """A rule for one class must fire on no line of another failure: the shipped rules' examples of every other
    class, and the lines every crash prints (knowledge/crash_lines.yaml), or it names its class for those too."""
    lines, sources = _other_failures(failure_class)
    hits = _matching(regex, db, lines)
    if hits:
        more = f" (and {len(hits) - 1} more)" if len(hits) > 1 else ""
        return [
            f"matches another failure's line {lines[hits[0]][:_SHOWN]!r} ({sources[hits[0]]}){more}; match what "
            f"only a {failure_class.value} failure prints"
        ]
    notes.append(f"matches none of {len(lines)} lines of other failures")
    return []


@lru_cache(maxsize=len(FailureClass))
def _other_failures(failure_class: FailureClass) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The lines a rule for failure_class must not match, and where each comes from (for the refusal)."""
    # The lines every crash prints first: a pattern that matches one is refused for the most telling reason.
    found: dict[str, str] = dict.fromkeys(crash_lines(), "a line crashes of every class print")
    for rule in load_rules():
        if rule.failure_class is not failure_class:
            for line in rule.examples:
                found.setdefault(line, f"an example of rule {rule.id}, {rule.failure_class.value}")
    return tuple(found), tuple(found.values())


def _check_outranked(
    parsed: regex_shape.Items | None, examples: list[str], failure_class: FailureClass, notes: list[str]
) -> list[str]:
    """At least as specific as the shipped rules it would outrank: on an example line where a shipped rule of another
    class fires and the proposal would win the diagnosis (it scores PROPOSAL_SCORE, above every symptom and every
    root cause of lower priority), the proposal must require at least as many literal characters as that rule.

    Literal characters are what regex_shape.required_literals counts (every match must contain them), so a rule
    that wins a line must say at least as much about it as the rule it overrides; one that matches that rule's own
    examples is refused already by _check_other_failures.
    """
    if parsed is None:
        return []
    mine = regex_shape.required_literals(parsed)
    shipped = _shipped_filter()
    reasons: dict[str, None] = {}
    for hit in shipped.scan("\n".join(examples).encode()):
        rule = shipped.rules[hit.rule_index]
        theirs = _literals(rule.pattern)
        if rule.failure_class is not failure_class and _outranks(rule) and mine < theirs:
            reasons[
                f"less specific than rule {rule.id} ({rule.failure_class.value}), which it would outrank on "
                f"{hit.text[:_SHOWN]!r}: {mine} literal characters in every match against its {theirs}; spell out "
                "more of the message"
            ] = None
    if not reasons:
        notes.append("at least as specific as every shipped rule of another class it would outrank")
    return list(reasons)


def _outranks(rule: Rule) -> bool:
    return rule.role is not Role.CONTEXT and ROLE_WEIGHT[rule.role] + rule.priority <= PROPOSAL_SCORE


@lru_cache(maxsize=1024)
def _literals(pattern: str) -> int:
    parsed = regex_shape.parse(pattern)
    return regex_shape.required_literals(parsed) if parsed is not None else 0


def _check_random(regex: re2._Regexp, db: hyperscan.Database | None, notes: list[str]) -> list[str]:
    lines = random_lines()
    share = len(_matching(regex, db, lines)) / len(lines)
    if share > MAX_RANDOM_SHARE:
        return [
            f"too broad: matches {share:.1%} of {len(lines)} random log-like lines (the limit is "
            f"{MAX_RANDOM_SHARE:.0%}); anchor it on the message's own words"
        ]
    notes.append(f"matches {share:.1%} of {len(lines)} random log-like lines")
    return []


def _matching(regex: re2._Regexp, db: hyperscan.Database | None, lines: Sequence[str]) -> list[int]:
    """Indexes of the lines the fast filter would hit: Hyperscan candidates over the joined text, RE2-confirmed."""
    if db is None:  # Hyperscan refused the pattern (already a reason): RE2 alone still shows what it would hit
        return [i for i, line in enumerate(lines) if regex.search(line)]
    blob, starts = _joined(tuple(lines))
    candidates: set[int] = set()

    def on_match(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
        # The line the filter would confirm: the one holding the match end, found as RuleFilter finds it.
        candidates.add(bisect_right(starts, blob.rfind(b"\n", 0, to) + 1) - 1)

    db.scan(blob, match_event_handler=on_match, scratch=hyperscan.Scratch(db))
    return sorted(i for i in candidates if regex.search(lines[i]))


@lru_cache(maxsize=32)
def _joined(lines: tuple[str, ...]) -> tuple[bytes, list[int]]:
    """The lines as one block (as the filter scans them) and the byte offset where each starts."""
    encoded = [line.encode() for line in lines]
    starts = [0, *accumulate(len(e) + 1 for e in encoded)][:-1]
    return b"\n".join(encoded), starts


def propose(
    pattern: str,
    examples: list[str],
    failure_class: FailureClass,
    *,
    origin: Origin,
    model: str,
    job: str,
    explanation: str,
    healthy: Iterable[str] | None = None,
) -> RuleProposal:
    """The one way a proposal is made: validated, and pending when it passes, else rejected with every reason.

    A rejected proposal is kept (not raised) so that the operator, the bot and the report can show why.
    """
    check = validate_pattern(pattern, examples, healthy, failure_class=failure_class)
    return RuleProposal(
        pattern=pattern,
        failure_class=failure_class,
        explanation=explanation,
        examples=examples,
        origin=origin,
        model=model,
        job=job,
        status="pending" if check.ok else "rejected",
        reason="; ".join(check.reasons) or None,
        validation=check.notes + check.reasons,
    )


def propose_from_line(
    line: str, failure_class: FailureClass, *, job: str, healthy: Iterable[str] | None = None
) -> RuleProposal:
    """The template proposer, no model needed: a regex derived from the Drain3 template of a confirmed line."""
    text = line.rstrip("\r\n")
    templater = Templater()
    template = templater.template(templater.template_index(text.encode()))
    return propose(
        derive_from_template(template, text),
        [text],
        failure_class,
        origin="template",
        model=TEMPLATE_MODEL,
        job=job,
        explanation=f"derived from the confirmed line: {text[:200]}",
        healthy=healthy,
    )


def propose_from_suggestion(suggestion: dict, model: str, job: str) -> RuleProposal:
    """The model's regex (an answer's proposed_rule plus the lines it cited) as a proposal."""
    return propose(
        suggestion["regex"],
        suggestion["examples"],
        FailureClass(suggestion["failure_class"]),
        origin="llm",
        model=model,
        job=job,
        explanation=f"{suggestion['why']} (suggested by {model})",
    )

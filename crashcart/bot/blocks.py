"""A triage Report as Slack Block Kit: verdict, where, evidence in code blocks, next steps, past incidents, buttons.

Log text is hostile: every string from a report is escaped (`&`, `<`, `>` and bare @here/@channel/@everyone),
so a log line holding `<!channel>` or `<@U123>` shows as text and pings nobody; secrets are redacted first by
the gate for text that leaves the machine (crashcart.agent.outbound), before any cut; colour codes are dropped and
other control characters shown as escapes, as on the terminal (a raw ESC is harmless in Slack, but unreadable).
Slack's limits are kept: a section's text is at most 3000 characters, a message at most 50 blocks, a header 150
characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from crashcart.agent.outbound import clip, outbound
from crashcart.agent.report import Report
from crashcart.knowledge.rule_store import RuleProposal
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.printable import printable
from crashcart.render import where

SECTION_CHARS = 3000
HEADER_CHARS = 150
MAX_BLOCKS = 50
MAX_EVIDENCE = 8
EVIDENCE_CHARS = 500
MAX_SIMILAR = 5
MAX_PROPOSALS = 5
LINE_CHARS = 400

CONFIRM = "crashcart_confirm"
CORRECT = "crashcart_correct"
RULE_CONFIRM = "crashcart_rule_confirm"
RULE_REJECT = "crashcart_rule_reject"
DIAGNOSIS_BLOCK = "crashcart_diagnosis"
RULE_BLOCK = "crashcart_rule:"

_BROADCAST = re.compile(r"@(here|channel|everyone)\b", re.IGNORECASE)


def escape(text: str) -> str:
    """Text safe for mrkdwn: no secrets, no control sequences (<!channel>, <@U..>, links), no bare broadcast words."""
    text = printable(outbound(text), newlines=True).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BROADCAST.sub("@\u200b\\1", text)


def code(text: str, limit: int = EVIDENCE_CHARS) -> str:
    """A code block that the text cannot close early."""
    body = escape(_trim(text, limit)).replace("```", "`\u200b``")
    return f"```{body}```"


def inline(text: str) -> str:
    return "`" + escape(text).replace("`", "'") + "`"


def one_line(message: str, prefix: str = ":warning:") -> str:
    """An error or refusal as one escaped line."""
    flat = " ".join(message.split())
    return f"{prefix} {escape(_trim(flat, LINE_CHARS))}"


def _trim(text: str, limit: int) -> str:
    return clip(text, limit)  # redacted before it is cut: a cut secret's head is still a secret


def _section(text: str, block_id: str | None = None) -> dict:
    block = {"type": "section", "text": {"type": "mrkdwn", "text": _trim(text, SECTION_CHARS)}}
    if block_id:
        block["block_id"] = block_id
    return block


def _packed(parts: Iterable[str]) -> list[dict]:
    """Sections holding the parts in order, each under Slack's 3000-character limit."""
    sections, current = [], ""
    for part in parts:
        if current and len(current) + 1 + len(part) > SECTION_CHARS:
            sections.append(_section(current))
            current = ""
        current = f"{current}\n{part}" if current else part
    return sections + ([_section(current)] if current else [])


def _button(text: str, action_id: str, value: str, style: str | None = None) -> dict:
    button = {"type": "button", "text": {"type": "plain_text", "text": text}, "action_id": action_id, "value": value}
    if style:
        button["style"] = style
    return button


def summary_text(report: Report) -> str:
    """The notification text (shown where blocks are not)."""
    d = report.diagnosis
    return escape(f"crashcart: {d.failure_class.value} → {d.action.value} ({where(report)})")


def _evidence(report: Report) -> list[dict]:
    d = report.diagnosis
    parts = []
    for ev in d.evidence[:MAX_EVIDENCE]:
        who = " ".join(x for x in (ev.node, None if ev.rank is None else f"rank {ev.rank}") if x)
        parts.append(f"{inline(f'{ev.file}:{ev.line}')}{' (' + escape(who) + ')' if who else ''}\n{code(ev.text)}")
    if len(d.evidence) > MAX_EVIDENCE:
        parts.append(f"_… and {len(d.evidence) - MAX_EVIDENCE} more lines (`crashcart triage` shows them all)_")
    return _packed(["*Evidence*", *parts]) if parts else [_section("*Evidence*: no line stood out")]


def _similar(report: Report) -> list[dict]:
    d = report.diagnosis
    if not d.similar:
        return [_section("_Nothing similar in incident memory: a new failure._")] if d.novel else []
    lines = []
    for s in d.similar[:MAX_SIMILAR]:
        resolved = f"; resolved: {escape(_trim(s.resolution, 200))}" if s.resolution else ""
        lines.append(
            f"• {inline(s.id)} ({s.similarity:.2f}): {inline(s.failure_class.value)} → "
            f"{inline(s.action.value)}, job {escape(_trim(s.job, 120))}{resolved}"
        )
    head = "*Similar past incidents*" + (" (none is close: a new failure)" if d.novel else "")
    return _packed([head, *lines])


def correction_menu(report_id: str) -> dict:
    """A static_select of the taxonomy (without `unknown`): the class the operator says is right."""
    options = [
        {"text": {"type": "plain_text", "text": c.value}, "value": f"{report_id}|{c.value}"}
        for c in FailureClass
        if c is not FailureClass.UNKNOWN
    ]
    return {
        "type": "static_select",
        "action_id": CORRECT,
        "options": options,
        "placeholder": {"type": "plain_text", "text": "Correct the class…"},
    }


def _diagnosis_actions(report: Report, report_id: str) -> dict:
    elements = [correction_menu(report_id)]
    if report.diagnosis.failure_class is not FailureClass.UNKNOWN:
        elements.insert(0, _button("Confirm diagnosis", CONFIRM, report_id, "primary"))
    return {"type": "actions", "block_id": DIAGNOSIS_BLOCK, "elements": elements}


def proposal_blocks(proposal: RuleProposal) -> list[dict]:
    """A pending rule proposal with its pattern and Confirm / Reject buttons (for the rule confirmers)."""
    text = (
        f"*Proposed rule* {inline(proposal.id)} for {inline(proposal.failure_class.value)} "
        f"(from {escape(proposal.model or proposal.origin)})\n{code(proposal.pattern)}\n"
        f"{escape(_trim(proposal.explanation, 500))}"
    )
    buttons = [
        _button("Confirm rule", RULE_CONFIRM, proposal.id, "primary"),
        _button("Reject rule", RULE_REJECT, proposal.id, "danger"),
    ]
    return [_section(text), {"type": "actions", "block_id": RULE_BLOCK + proposal.id, "elements": buttons}]


def report_blocks(report: Report, report_id: str) -> list[dict]:
    """The whole reply; `report_id` is what the buttons carry to find the report again."""
    d = report.diagnosis
    header = _trim(f"crashcart: {d.failure_class.value} → {d.action.value}", HEADER_CHARS)
    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": header}},
        _section(
            f"{escape(_trim(d.summary, 1500))}\n*Where:* {escape(where(report))}\n"
            f"*Confidence:* {d.confidence:.2f} (decided by {d.decided_by})"
        ),
        *_evidence(report),
    ]
    if d.mitigation:
        blocks += _packed(["*Next steps*", *(f"{i}. {escape(s)}" for i, s in enumerate(d.mitigation, 1))])
    blocks += _similar(report)
    for proposal in [p for p in report.proposals if p.status == "pending"][:MAX_PROPOSALS]:
        blocks += proposal_blocks(proposal)
    st = report.stats
    footer = (
        f"{st.files} file(s), {st.lines:,} lines, {st.bytes / 1e6:.1f} MB read in {st.seconds:.2f}s · "
        "confirm to store the incident in memory, or pick the right class"
    )
    tail = [
        _diagnosis_actions(report, report_id),
        {"type": "context", "elements": [{"type": "mrkdwn", "text": footer}]},
    ]
    return blocks[: MAX_BLOCKS - len(tail)] + tail


def with_note(blocks: list[dict], block_id: str, note: str) -> list[dict]:
    """The message's blocks with the block `block_id` (its buttons) replaced by a context line."""
    context = {"type": "context", "block_id": block_id, "elements": [{"type": "mrkdwn", "text": note}]}
    return [context if b.get("block_id") == block_id else b for b in blocks]

"""Report → Block Kit: hostile log text escaped, Slack's size limits kept, the right buttons."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from fakes.secrets import LINES as SECRET_LINES
from fakes.secrets import leaks

from crashcart.agent.models import Diagnosis, SimilarIncident
from crashcart.agent.report import Report, ScanStats
from crashcart.bot.blocks import (
    CONFIRM,
    CORRECT,
    DIAGNOSIS_BLOCK,
    HEADER_CHARS,
    MAX_BLOCKS,
    RULE_CONFIRM,
    SECTION_CHARS,
    code,
    escape,
    one_line,
    report_blocks,
    summary_text,
    with_note,
)
from crashcart.knowledge.records import Evidence
from crashcart.knowledge.rule_store import RuleProposal
from crashcart.knowledge.taxonomy import Action, FailureClass

HOSTILE = "NCCL WARN <!channel> <!here|here> <@U0ADMIN> <https://evil.example.com|click> @everyone ```x``` &amp;"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("<!channel>", "&lt;!channel&gt;"),
        ("<@U123ABC> hi", "&lt;@U123ABC&gt; hi"),
        ("<!subteam^S123>", "&lt;!subteam^S123&gt;"),
        ("a & b", "a &amp; b"),
        ("ping @here and @Channel", "ping @\u200bhere and @\u200bChannel"),
        ("ssh trainer@herenode07", "ssh trainer@herenode07"),  # a user@host, not @here (emails are redacted)
        # loguru's colours as a log file keeps them (huggingface/datatrove#131): dropped, not shown as garbage
        ("\x1b[1mINFO    \x1b[0m | rank=275", "INFO     | rank=275"),
        ("a\x1b]0;title\x07\rb\nc", "a\\x1b]0;title\\x07\\rb\nc"),  # other controls visible; newlines kept
    ],
)
def test_escape(raw: str, shown: str) -> None:
    assert escape(raw) == shown


def test_log_text_cannot_close_its_code_block() -> None:
    assert code("a ``` <!channel>") == "```a `\u200b`` &lt;!channel&gt;```"


def test_errors_are_one_escaped_line() -> None:
    assert one_line("bad <!here>\n  path") == ":warning: bad &lt;!here&gt; path"


def _report(failure_class: FailureClass = FailureClass.GPU_HARDWARE, n: int = 1, width: int = 80) -> Report:
    evidence = [
        Evidence(file=f"node{i:02d}<@U1>.log", line=i, text=(HOSTILE + " ") * (width // 80 + 1), node="n7")
        for i in range(n)
    ]
    similar = [
        SimilarIncident(
            id=f"inc-{i}",
            similarity=0.9,
            failure_class=failure_class,
            action=Action.RETRY,
            resolution="drained <!channel>" * 20,
            job="job <@U2>",
            created_at=datetime(2026, 1, 1),
        )
        for i in range(n)
    ]
    proposals = [
        RuleProposal(
            id=f"prop-{i:010x}",
            pattern="x" * width,
            failure_class=FailureClass.NETWORK,
            explanation="an explanation <!channel>",
            examples=["x"],
            origin="llm",
            model="m",
            job="j",
        )
        for i in range(n)
    ]
    diagnosis = Diagnosis(
        failure_class=failure_class,
        action=Action.DRAIN_NODE_AND_RETRY,
        confidence=0.9,
        summary="GPU fell off the bus " + HOSTILE,
        faulty_nodes=["node07<!here>"],
        evidence=evidence,
        mitigation=[f"step {i} " + HOSTILE * (width // 80) for i in range(n)],
        similar=similar,
    )
    stats = ScanStats(files=1, lines=10, bytes=1000, rule_hits=1, templates=1, seconds=0.1, mb_per_s=1.0)
    return Report(paths=["x"], diagnosis=diagnosis, stats=stats, proposals=proposals)


def _walk_texts(blocks: list[dict]):
    for b in blocks:
        if "text" in b:
            yield b["type"], b["text"]["text"]
        for e in b.get("elements", []):
            if e.get("type") == "mrkdwn":
                yield "context", e["text"]


def test_a_huge_report_keeps_slacks_limits_and_pings_nobody() -> None:
    blocks = report_blocks(_report(n=60, width=6000), "abc123")
    assert len(blocks) <= MAX_BLOCKS
    for kind, text in _walk_texts(blocks):
        assert len(text) <= (HEADER_CHARS if kind == "header" else SECTION_CHARS)
    raw = json.dumps(blocks)
    for ping in ("<!channel>", "<!here", "<@U", "<https://evil", "@everyone"):
        assert ping not in raw
    assert blocks[-2]["block_id"] == DIAGNOSIS_BLOCK and blocks[-1]["type"] == "context"  # buttons are never cut


def test_small_report_layout() -> None:
    blocks = report_blocks(_report(n=1), "abc123")
    assert blocks[0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": "crashcart: gpu_hardware → drain_node_and_retry"},
    }
    text = "\n".join(t for _, t in _walk_texts(blocks))
    assert "*Where:* nodes: node07&lt;!here&gt;" in text
    assert "`node00&lt;@U1&gt;.log:0` (n7)\n```NCCL WARN &lt;!channel&gt;" in text
    assert "• `inc-0` (0.90): `gpu_hardware` → `retry`, job job &lt;@U2&gt;; resolved: drained" in text
    actions = [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert actions == [RULE_CONFIRM, "crashcart_rule_reject", CONFIRM, CORRECT]


def test_unknown_can_only_be_corrected_and_the_menu_has_no_unknown() -> None:
    blocks = report_blocks(_report(FailureClass.UNKNOWN, n=0), "abc123")
    (menu,) = blocks[-2]["elements"]
    assert menu["action_id"] == CORRECT
    values = [o["value"] for o in menu["options"]]
    assert values[0] == "abc123|gpu_hardware" and "abc123|unknown" not in values and len(values) == 14


def test_with_note_replaces_only_the_buttons() -> None:
    blocks = report_blocks(_report(n=1), "abc123")
    noted = with_note(blocks, DIAGNOSIS_BLOCK, "done")
    assert len(noted) == len(blocks) and noted[:-2] == blocks[:-2] and noted[-1] == blocks[-1]
    assert noted[-2] == {
        "type": "context",
        "block_id": DIAGNOSIS_BLOCK,
        "elements": [{"type": "mrkdwn", "text": "done"}],
    }


def _secret_report() -> Report:
    """A report whose every text field carries corpus secrets: evidence (all lines, one by one and past the cut),
    the summary, next steps, a past incident's resolution, a pending proposal's pattern and explanation."""
    texts = [line.text for line in SECRET_LINES]
    evidence = [Evidence(file="node07.log", line=i + 1, text=text, node="node07") for i, text in enumerate(texts)]
    diagnosis = Diagnosis(
        failure_class=FailureClass.NETWORK,
        action=Action.RETRY,
        confidence=0.8,
        summary="network (LLM): the launcher failed after " + texts[-2],
        faulty_nodes=["node07"],
        evidence=evidence,
        mitigation=[f"check {text}" for text in texts[:12]],
        similar=[
            SimilarIncident(
                id="inc-1",
                similarity=0.9,
                failure_class=FailureClass.NETWORK,
                action=Action.RETRY,
                resolution="rotated " + texts[0],
                job="job 42",
                created_at=datetime(2026, 1, 1),
            )
        ],
    )
    proposal = RuleProposal(
        id="prop-0000000001",
        pattern=texts[3],
        failure_class=FailureClass.NETWORK,
        explanation="seen with " + texts[7],
        examples=[texts[3]],
        origin="llm",
        model="m",
        job="j",
    )
    stats = ScanStats(files=1, lines=10, bytes=1000, rule_hits=1, templates=1, seconds=0.1, mb_per_s=1.0)
    return Report(paths=["x"], diagnosis=diagnosis, stats=stats, proposals=[proposal])


def test_no_secret_of_the_corpus_reaches_the_blocks_whole_or_in_pieces() -> None:
    report = _secret_report()
    assert leaks([e.text for e in report.diagnosis.evidence]) != {}  # the report itself holds them (local)
    blocks = report_blocks(report, "abc123")
    assert leaks(blocks) == {} and leaks(summary_text(report)) == {}
    assert leaks(one_line(f"failed: {SECRET_LINES[0].text}")) == {} and leaks(code(SECRET_LINES[-1].text)) == {}
    assert "[REDACTED:" in json.dumps(blocks) and "node07" in json.dumps(blocks)  # node names stay for people

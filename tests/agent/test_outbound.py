"""The gate for text that leaves the machine: every string inside what is sent is redacted, records come back as
records, and a cut happens after redaction so no secret's head survives it."""

from __future__ import annotations

from pathlib import Path

from fakes.secrets import LINES, SECRETS, leaks

from crashcart.agent.models import Diagnosis
from crashcart.agent.outbound import clip, outbound
from crashcart.agent.redact import Redactor
from crashcart.knowledge.records import Evidence
from crashcart.knowledge.taxonomy import Action, FailureClass


def test_every_string_in_a_structure_is_redacted_and_the_shape_kept() -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": line.text}} for line in LINES]
    out = outbound(blocks)
    assert leaks(out) == {} and [b["type"] for b in out] == ["section"] * len(LINES)
    assert outbound(("a", 1, None)) == ("a", 1, None)


def test_a_record_comes_back_as_a_record_of_the_same_type() -> None:
    line = LINES[0].text  # PGPASSWORD=...
    d = Diagnosis(
        failure_class=FailureClass.NETWORK,
        action=Action.RETRY,
        confidence=0.5,
        summary=line,
        evidence=[Evidence(file="node07.log", line=3, text=line, node="node07")],
    )
    out = outbound(d)
    assert isinstance(out, Diagnosis) and out.failure_class is FailureClass.NETWORK
    assert leaks(out.model_dump(mode="json")) == {} and out.evidence[0].node == "node07"
    assert d.summary == line  # the original is left as it was: the local report keeps its evidence


def test_clip_redacts_before_it_cuts() -> None:
    key = SECRETS["aws_id"]  # AKIA + 16: a shape with no keyword before it
    line = "ERROR s3 upload failed: " + "x" * 364 + " " + key + " denied"  # the key starts at 389
    assert leaks(Redactor().redact(line[:400]), {"k": key}) != {}  # cut first: its head is left, unrecognised
    shown = clip(line, 400)
    assert len(shown) == 400 and leaks(shown, {"k": key}) == {} and shown.endswith(" [REDACTED:…")


def test_a_callers_redactor_pseudonymises_hosts_too() -> None:
    redactor = Redactor(hosts=True, known_hosts=["node07"])
    assert outbound({"error": "nodes the logs do not show: node07"}, redactor) == {
        "error": "nodes the logs do not show: host-1"
    }


def test_a_reports_masked_templates_keep_no_piece_of_a_secret(tmp_path) -> None:
    """Masking cuts `xoxb-7832...-hFqK...` into `xoxb-<NUM>-<NUM>-hFqK...`, which no pattern knows: the templates
    and the fingerprint go as their lines redacted, or with their placeholders filled in and redacted."""
    from crashcart.api import triage

    log = tmp_path / "job.log"
    example = Path(__file__).resolve().parents[2] / "examples" / "xid79-job" / "logs" / "node07.log"
    log.write_text(example.read_text() + "".join(f"ERROR {ln.text}\n" for ln in LINES))
    report = triage([str(log)])
    assert leaks(report.model_dump(mode="json")) != {}  # the masked templates hold pieces of secrets
    sent = outbound(report)
    assert leaks(sent.model_dump(mode="json")) == {}
    assert len(sent.templates) == len(report.templates) and len(sent.fingerprint.templates) == len(
        report.fingerprint.templates
    )
    plain = [(t, s) for t, s in zip(report.templates, sent.templates, strict=True) if "ERROR" not in t.template]
    assert plain and all(t.template == s.template for t, s in plain)  # the job's own lines stay masked as they were

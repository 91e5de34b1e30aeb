"""Notices built from real triage and batch records, sent through Apprise to a receiver on 127.0.0.1: a generic
JSON webhook, Slack's webhook payload, a receiver that is down, a URL Apprise does not know."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from fakes.secrets import LINES as SECRET_LINES
from fakes.secrets import leaks
from fakes.webhook import closed_port

from crashcart.agent.report import Report
from crashcart.api import triage
from crashcart.batch.models import BatchJob, BatchResult
from crashcart.batch.summary import summarise
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.notify import Notice, batch_notice, notice_for, send, triage_notice

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "xid79-job"


@pytest.fixture(scope="module")
def report() -> Report:
    """The README's example job, triaged for real (no memory, no model)."""
    return triage([str(EXAMPLE)], workers=1)


def test_a_job_notice_names_class_action_nodes_and_the_first_evidence_line(report: Report) -> None:
    notice = triage_notice(report)
    d = report.diagnosis
    assert notice.title == f"crashcart: gpu_hardware → drain_node_and_retry (confidence {d.confidence:.2f})"
    first = d.evidence[0]
    lines = notice.body.splitlines()
    assert f"where: nodes: {', '.join(d.faulty_nodes)}" in lines[1]
    assert lines[2].startswith(f"evidence (+{len(d.evidence) - 1} more): {first.file}:{first.line}: ")
    assert first.text.split()[0] in lines[2] and notice.kind == "failure"
    assert len(notice.body) < 2000  # a summary, not the report


def test_no_secret_a_log_line_holds_leaves_in_a_notice(report: Report) -> None:
    redacted = 0
    for secret in SECRET_LINES:
        d = report.diagnosis
        first = d.evidence[0].model_copy(update={"text": secret.text})
        leaky = report.model_copy(
            update={"diagnosis": d.model_copy(update={"summary": secret.text, "evidence": [first]})}
        )
        notice = triage_notice(leaky)
        assert leaks([notice.title, notice.body]) == {}, secret.where
        redacted += "[REDACTED:" in notice.body  # the rest sat past the cut: redacted before it, then cut off
    assert redacted > len(SECRET_LINES) / 2


def test_a_json_webhook_receives_the_notice(report: Report, webhook) -> None:
    url = webhook.url("json", "/hooks/crashcart")
    assert send(triage_notice(report), [url]) == []
    [post] = webhook.posts
    assert post.path == "/hooks/crashcart" and post.headers["content-type"] == "application/json"
    assert post.body["title"].startswith("crashcart: gpu_hardware → drain_node_and_retry")
    assert post.body["message"] == triage_notice(report).body and post.body["type"] == "failure"


def test_the_slack_webhook_payload_carries_the_notice(report: Report, webhook, slack_webhook: str) -> None:
    pasted = "https://hooks.slack.com/services/" + slack_webhook.removeprefix("slack://")  # as Slack shows it
    assert send(triage_notice(report), [slack_webhook, pasted]) == []
    for post in webhook.posts:
        assert post.path == "/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"  # Slack's incoming-webhook path
        [attachment] = post.body["attachments"]
        assert attachment["title"].startswith("crashcart: gpu_hardware → drain_node_and_retry")
        assert report.diagnosis.faulty_nodes[0] in attachment["text"] and attachment["footer"] == "crashcart"
    assert len(webhook.posts) == 2


def test_a_receiver_that_is_down_is_one_failure_naming_the_channel_with_its_password_masked(
    report: Report, webhook
) -> None:
    port = closed_port()
    urls = [f"json://ops:hunter2-s3cret@127.0.0.1:{port}/hook", webhook.url("json", "/up")]
    [failure] = send(triage_notice(report), urls, timeout_s=5)
    assert failure.channel.startswith("json://ops:") and failure.channel.endswith(f"@127.0.0.1:{port}/hook")
    assert "hunter2" not in failure.channel and "connection" in failure.reason.lower()
    assert [p.path for p in webhook.posts] == ["/up"]  # the next channel still got it


def test_a_url_apprise_does_not_know_shows_only_its_scheme() -> None:
    notice = Notice(title="t", body="b", kind="info")
    [bad, empty] = send(notice, ["nosuch://user:tok3n@host/x", "no url at all"])
    assert (bad.channel, empty.channel) == ("nosuch://…", "(not a URL)")
    assert "Apprise" in bad.reason


def test_a_batch_notice_holds_the_summary_tables_key_figures(report: Report) -> None:
    def job(job_id: str, gpus: int, failure_class: str) -> BatchResult:
        update = {"failure_class": FailureClass(failure_class), "faulty_nodes": ["node07"]}
        d = report.diagnosis.model_copy(update=update)
        return BatchResult(
            job=BatchJob(job_id=job_id, gpus=gpus, elapsed_s=3600), status="ok", diagnosis=d, logs_key=job_id
        )

    results = [job("1", 64, "gpu_hardware"), job("2", 64, "network"), job("3", 8, "code_bug")]
    results.append(BatchResult(job=BatchJob(job_id="4"), status="no_logs", error="no logs"))
    notice = notice_for(summarise(results))
    assert notice == batch_notice(summarise(results))
    assert notice.title == "crashcart batch: 4 failed jobs, 2 of them infrastructure (94% of GPU-hours)"
    lines = notice.body.splitlines()
    assert lines[0] == "4 jobs: 3 triaged, 0 errors, 1 without logs; 136.0 GPU-hours"
    assert lines[1] == "infrastructure: 2 jobs (67%), 128.0 GPU-hours (94%)"
    assert lines[2].startswith("jobs (GPU-hours) by class: ") and "code_bug 1 (8.0 h)" in lines[2]
    assert lines[3] == "repeat-offender nodes (drain): node07 (2 jobs)"


def test_a_watch_report_is_a_notice_with_its_kind_place_evidence_and_drain(report: Report) -> None:
    from crashcart.agent.watch_reports import RootCauseReport
    from crashcart.notify import watch_notice
    from crashcart.watch import final_report

    first = report.diagnosis.evidence[0]
    root = RootCauseReport(
        time=datetime.now(UTC),
        failure_class=report.diagnosis.failure_class,
        action=report.diagnosis.action,
        rule_id=first.rule_id or "",
        explanation="Xid 79, the GPU fell off the PCIe bus.",
        nodes=report.diagnosis.faulty_nodes,
        drain="scontrol update NodeName=node07 State=DRAIN Reason=x",
        evidence=[first],
    )
    notice = watch_notice(root)
    assert notice.title == "crashcart watch: root cause: gpu_hardware → drain_node_and_retry"
    assert notice.body.splitlines()[1:] == [
        f"where: {', '.join(report.diagnosis.faulty_nodes)}",
        f"evidence: {first.file}:{first.line}: {first.text}"[:300],
        "drain (not run): scontrol update NodeName=node07 State=DRAIN Reason=x",
    ]
    final = watch_notice(final_report(report, "slurm state FAILED"))
    assert final.title == "crashcart watch: job ended (slurm state FAILED): gpu_hardware → drain_node_and_retry"
    assert final.kind == "failure" and report.diagnosis.summary[:50] in final.body

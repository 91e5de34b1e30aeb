"""Notifications to any channel the operator names by URL (Slack and Teams webhooks, Discord, email, a generic JSON
webhook ... whatever Apprise speaks: https://github.com/caronc/apprise/wiki), from `triage`, `batch` and the bot.

A notice is a short summary built from the same records as the JSON output and sent through the outbound gate
(secrets redacted, cut to length). Sending never loses the result: each channel that fails becomes a
NotifyFailure naming it with its secrets masked, for the caller to report; nothing is raised. Apprise is imported
only when there is something to send.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from crashcart.agent.outbound import clip
from crashcart.agent.report import Report
from crashcart.agent.watch_reports import FinalReport, RootCauseReport, StallReport
from crashcart.batch.summary import BatchSummary
from crashcart.knowledge.records import LineRef, Strict
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.printable import counted, printable
from crashcart.render import where

TIMEOUT_S = 15.0  # per channel, every retry included: a dead receiver must not hold up a Slurm epilog
LINE_CHARS = 300
TOP_CLASSES = 5
TOP_OFFENDERS = 5


class Notice(Strict):
    """What every channel is sent: a title line and a few lines of body, already redacted."""

    title: str
    body: str
    kind: Literal["info", "warning", "failure"]  # Apprise's notify types: the colour or icon a channel shows


class NotifyFailure(Strict):
    """A channel that did not take the notice, and why (both safe to print: secrets masked)."""

    channel: str
    reason: str


# What makes a chat ping people: Slack's <!channel> and <@U123>, Discord's <@123>, and the bare broadcast words.
_MENTION = re.compile(r"<(?=[!@#])|@(?=(?:here|channel|everyone)\b)", re.IGNORECASE)


def _line(text: str) -> str:
    """One line of log or model text: redacted, cut, no control characters, and pinging nobody (a zero-width
    space after the `<` or `@` that would)."""
    quiet = _MENTION.sub(lambda m: m.group(0) + "\u200b", " ".join(text.split()))
    return printable(clip(quiet, LINE_CHARS))


def triage_notice(report: Report) -> Notice:
    """Class and action, the summary, where, and the first evidence line with its place."""
    d = report.diagnosis
    lines = [_line(d.summary), _line(f"where: {where(report)}")]
    if d.evidence:
        ev = d.evidence[0]
        more = f" (+{len(d.evidence) - 1} more)" if len(d.evidence) > 1 else ""
        lines.append(_line(f"evidence{more}: {ev.file}:{ev.line}: {ev.text}"))
    if report.paths:
        others = f" (+{len(report.paths) - 1} more)" if len(report.paths) > 1 else ""
        lines.append(_line(f"logs: {report.paths[0]}{others}"))
    unknown = d.failure_class is FailureClass.UNKNOWN
    return Notice(
        title=f"crashcart: {d.failure_class.value} → {d.action.value} (confidence {d.confidence:.2f})",
        body="\n".join(lines),
        kind="warning" if unknown else "failure",
    )


def batch_notice(summary: BatchSummary) -> Notice:
    """The summary table's key figures: jobs and GPU-hours, the infrastructure share, top classes, repeat nodes."""
    t, infra = summary.totals, summary.infrastructure
    lines = [
        f"{counted(t.jobs, 'job')}: {t.triaged} triaged, {counted(t.errors, 'error')}, {t.no_logs} without logs; "
        f"{t.gpu_hours:,.1f} GPU-hours",
        f"infrastructure: {counted(infra.jobs, 'job')} ({infra.job_share:.0%}), "
        f"{infra.gpu_hours:,.1f} GPU-hours ({infra.gpu_hour_share:.0%})",
    ]
    if summary.classes:
        top = [f"{c.failure_class.value} {c.jobs} ({c.gpu_hours:,.1f} h)" for c in summary.classes[:TOP_CLASSES]]
        lines.append("jobs (GPU-hours) by class: " + "; ".join(top))
    if summary.offenders:
        nodes = ", ".join(f"{o.node} ({counted(o.jobs, 'job')})" for o in summary.offenders[:TOP_OFFENDERS])
        lines.append(_line(f"repeat-offender nodes (drain): {nodes}"))
    hours = f" ({infra.gpu_hour_share:.0%} of GPU-hours)" if t.gpu_hours else ""  # 0: no job.json or sacct said
    return Notice(
        title=f"crashcart batch: {counted(t.jobs, 'failed job')}, {infra.jobs} of them infrastructure{hours}",
        body="\n".join(lines),
        kind="failure" if infra.jobs or t.errors else "info",
    )


def notice_for(result: Report | BatchSummary) -> Notice:
    """A job's notice or a batch's."""
    return triage_notice(result) if isinstance(result, Report) else batch_notice(result)


def watch_notice(report: RootCauseReport | StallReport | FinalReport) -> Notice:
    """A `crashcart watch` report as a notice: its kind, class and action, where, and its first evidence line."""
    evidence: Sequence[LineRef]
    drains: list[str]
    place = ", ".join(report.nodes) or (f"rank {report.rank}" if report.rank is not None else "-")
    if isinstance(report, FinalReport):
        head, lines = f"job ended ({report.ended})", [_line(report.summary)]
        evidence, drains = report.diagnosis.evidence[:1], report.drain
    elif isinstance(report, StallReport):
        head, lines = f"stalled {report.stalled_s:.0f}s", [_line(f"{place}: {report.why}")]
        evidence, drains = report.evidence[:1], []
    else:
        head, lines = "root cause", [_line(report.explanation)]
        evidence, drains = report.evidence[:1], [report.drain] if report.drain else []
    lines.append(_line(f"where: {place}"))
    lines += [_line(f"evidence: {ev.file}:{ev.line}: {ev.text}") for ev in evidence]
    lines += [_line(f"drain (not run): {command}") for command in drains]
    return Notice(
        title=f"crashcart watch: {head}: {report.failure_class.value} → {report.action.value}",
        body="\n".join(lines),
        kind="failure" if not isinstance(report, StallReport) else "warning",
    )


def send(notice: Notice, urls: Sequence[str], timeout_s: float = TIMEOUT_S) -> list[NotifyFailure]:
    """Send the notice to every URL, each on its own so one bad channel says which; the channels that failed."""
    if not urls:
        return []
    import apprise  # lazy: only a run that notifies pays for it

    failures = []
    for url in urls:
        sender = apprise.Apprise(asset=apprise.AppriseAsset(app_id="crashcart"))  # the sender a channel shows
        if not sender.add(url):
            failures.append(NotifyFailure(channel=_masked(url), reason="not a notification URL Apprise knows"))
            continue
        channel = _channel(sender[0].url(privacy=True))
        try:
            result = sender.notify(body=notice.body, title=notice.title, notify_type=notice.kind, timeout=timeout_s)
        except Exception as exc:  # a plugin's own bug: still one channel's failure, not the run's
            failures.append(NotifyFailure(channel=channel, reason=_line(f"{type(exc).__name__}: {exc}")))
            continue
        with result:
            if not result:
                said = [e.message for e in result.logs()]  # Apprise keeps warnings and errors: why it failed
                why = said[-1] if said else result.status.name.lower()
                failures.append(NotifyFailure(channel=channel, reason=_line(why)))
    return failures


def _channel(privacy_url: str) -> str:
    """Apprise's own masked form of the URL (passwords and tokens as ****, T...2), without its query."""
    return printable(clip(privacy_url.split("?", 1)[0].rstrip("/"), 120))


def _masked(url: str) -> str:
    """A URL Apprise could not read: only its scheme, since where its secrets sit is unknown."""
    scheme, sep, _ = url.partition("://")
    return printable(f"{scheme[:20]}://…") if sep else "(not a URL)"

"""What the buttons under a diagnosis do to the stores: confirm or correct it (an incident), confirm or reject a rule.

A button carries only a short report id (Slack caps a button's value at 2000 characters), so each reply's report
waits in a ReportCache on disk: a bot restarted between the ask and the click still finds it. Refusals are
InputErrors whose message is the one-line reply.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from crashcart.agent.cases import incident_from_report, teach_rules
from crashcart.agent.report import Report
from crashcart.bot.config import BotConfig
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.incident_store import IncidentStore
from crashcart.knowledge.incidents import Incident
from crashcart.knowledge.records import Strict
from crashcart.knowledge.rule_store import RuleProposal, RuleStore
from crashcart.knowledge.taxonomy import FailureClass

KEEP_REPORTS = 1000


class SavedReport(Strict):
    """A reply's report, the job's name in memory, and the incident once someone confirmed it."""

    report: Report
    job: str
    incident_id: str | None = None
    decided_by: str | None = None


class ReportCache:
    """Reports waiting for a click, one JSON file each; the oldest are dropped past KEEP_REPORTS."""

    def __init__(self, directory: Path, keep: int = KEEP_REPORTS) -> None:
        self.dir = directory
        self.keep = keep
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def _path(self, report_id: str) -> Path:
        if not report_id.isalnum():  # the id comes back from Slack: never a path
            raise InputError(f"{report_id!r} is not a report id: ask again")
        return self.dir / f"{report_id}.json"

    def save(self, report: Report, job: str) -> str:
        report_id = secrets.token_hex(8)
        self._path(report_id).write_text(SavedReport(report=report, job=job).model_dump_json(), encoding="utf-8")
        self._prune()
        return report_id

    def load(self, report_id: str) -> SavedReport:
        try:
            return SavedReport.model_validate_json(self._path(report_id).read_text(encoding="utf-8"))
        except (OSError, ValidationError) as exc:
            raise InputError("this diagnosis is no longer kept by the bot: ask again to confirm it") from exc

    def decide(self, report_id: str, build: Callable[[SavedReport], Incident], by: str) -> tuple[SavedReport, Incident]:
        """Store `build(saved)` once per report: a second click (or a second user) is refused."""
        with self._lock:
            saved = self.load(report_id)
            if saved.incident_id:
                raise InputError(
                    f"this diagnosis was already confirmed by {saved.decided_by} (incident {saved.incident_id})"
                )
            incident = build(saved)
            done = saved.model_copy(update={"incident_id": incident.id, "decided_by": by})
            self._path(report_id).write_text(done.model_dump_json(), encoding="utf-8")
            return done, incident

    def _prune(self) -> None:
        files = sorted(self.dir.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in files[: max(0, len(files) - self.keep)]:
            old.unlink(missing_ok=True)


def who(user_id: str) -> str:
    """How a Slack user is named in provenance."""
    return f"slack:{user_id}"


def confirm_diagnosis(
    cache: ReportCache, memory: IncidentStore, report_id: str, user_id: str, failure_class: FailureClass | None = None
) -> tuple[SavedReport, Incident]:
    """Store the reply's diagnosis (or the class the user picked instead) as a confirmed incident."""
    if failure_class is FailureClass.UNKNOWN:
        raise InputError("pick a class other than unknown to correct the diagnosis")

    def build(saved: SavedReport) -> Incident:
        incident = incident_from_report(
            saved.report, failure_class=failure_class, job=saved.job, confirmed_by=who(user_id)
        )
        return memory.add(incident)

    return cache.decide(report_id, build, who(user_id))


def propose_rule(saved: SavedReport, incident: Incident, rule_store: RuleStore) -> RuleProposal | None:
    """Like `crashcart cases add`: a confirmed class the rules missed queues a rule from its evidence line."""
    proposal = teach_rules(saved.report, incident.failure_class, rule_store)
    return proposal if proposal is not None and proposal.status == "pending" else None


def may_decide_rules(user_id: str, config: BotConfig, client: WebClient) -> bool:
    """A listed rule confirmer, or a member of the configured user group (read with usergroups.users.list)."""
    if user_id in config.rule_confirmers:
        return True
    if not config.rule_confirmer_group:
        return False
    try:
        members = client.usergroups_users_list(usergroup=config.rule_confirmer_group).get("users") or []
    except SlackApiError as exc:
        raise InputError(
            f"cannot read user group {config.rule_confirmer_group} ({exc.response.get('error')}): "
            "the bot needs the usergroups:read scope"
        ) from exc
    return user_id in members


def decide_rule(
    rule_store: RuleStore, config: BotConfig, client: WebClient, proposal_id: str, user_id: str, confirm: bool
) -> str:
    """Confirm or reject a proposed rule for an allowed user; the note that replaces the buttons."""
    if not may_decide_rules(user_id, config, client):
        raise InputError(
            f"user {user_id} may not confirm or reject rules: ask one of the rule confirmers "
            "(rule_confirmers / rule_confirmer_group in the bot config)"
        )
    if confirm:
        rule = rule_store.confirm(proposal_id, by=who(user_id))
        return f":white_check_mark: rule `{rule.id}` confirmed by <@{user_id}>: it joins the fast filter"
    rule_store.reject(proposal_id, by=who(user_id), reason=f"rejected in Slack by {who(user_id)}")
    return f":x: rule proposal `{proposal_id}` rejected by <@{user_id}>"

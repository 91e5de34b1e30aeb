"""The buttons' logic over the stores: the report cache, who may decide on rules, one confirmation per reply."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.slack_api import BOT_TOKEN
from slack_sdk import WebClient

from crashcart.agent.models import Diagnosis
from crashcart.agent.report import Report, ScanStats
from crashcart.bot.actions import ReportCache, confirm_diagnosis, may_decide_rules
from crashcart.bot.config import BotConfig
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.incident_store import MemoryIncidentStore
from crashcart.knowledge.taxonomy import Action, FailureClass


def _report(cls: FailureClass = FailureClass.STORAGE) -> Report:
    stats = ScanStats(files=1, lines=1, bytes=1, rule_hits=1, templates=1, seconds=0.1, mb_per_s=0.0)
    diagnosis = Diagnosis(failure_class=cls, action=Action.ESCALATE_INFRA, confidence=0.9, summary="disk full")
    return Report(paths=["/tmp/x"], diagnosis=diagnosis, stats=stats)


def test_group_members_and_listed_users_may_decide_rules(slack_api) -> None:
    client = WebClient(token=BOT_TOKEN, base_url=slack_api.base_url)
    slack_api.groups["S0OPS"] = ["UCAROL"]
    config = BotConfig(rule_confirmers=["UALICE"], rule_confirmer_group="S0OPS")
    assert may_decide_rules("UALICE", config, client)
    assert not slack_api.of("usergroups.users.list")  # a listed user needs no lookup
    assert may_decide_rules("UCAROL", config, client)
    assert not may_decide_rules("UBOB", config, client)
    assert [c.params["usergroup"] for c in slack_api.of("usergroups.users.list")] == ["S0OPS", "S0OPS"]
    assert not may_decide_rules("UCAROL", BotConfig(), client)  # nobody is configured: nobody may
    with pytest.raises(InputError, match=r"cannot read user group S0NONE \(no_such_subteam\): .*usergroups:read"):
        may_decide_rules("UBOB", BotConfig(rule_confirmer_group="S0NONE"), client)


def test_cache_round_trip_and_refusals(tmp_path: Path) -> None:
    cache = ReportCache(tmp_path / "reports", keep=2)
    first = cache.save(_report(), "job-1")
    assert cache.load(first).report == _report() and cache.load(first).job == "job-1"
    for bad in ("../../etc/passwd", "a/b", ""):
        with pytest.raises(InputError, match="is not a report id"):
            cache.load(bad)
    cache.save(_report(), "job-2")
    cache.save(_report(), "job-3")
    assert len(list((tmp_path / "reports").glob("*.json"))) == 2
    with pytest.raises(InputError, match="no longer kept by the bot: ask again"):
        cache.load("0123456789abcdef")


def test_a_diagnosis_is_confirmed_once(tmp_path: Path) -> None:
    cache, memory = ReportCache(tmp_path), MemoryIncidentStore()
    report_id = cache.save(_report(), "slurm:42")
    saved, incident = confirm_diagnosis(cache, memory, report_id, "UBOB")
    assert (incident.failure_class, incident.provenance.job, incident.provenance.confirmed_by) == (
        FailureClass.STORAGE,
        "slurm:42",
        "slack:UBOB",
    )
    assert saved.incident_id == incident.id and memory.get(incident.id) == incident
    with pytest.raises(InputError, match=f"already confirmed by slack:UBOB \\(incident {incident.id}\\)"):
        confirm_diagnosis(cache, memory, report_id, "UALICE", FailureClass.NETWORK)
    with pytest.raises(InputError, match="pick a class other than unknown"):
        confirm_diagnosis(cache, memory, cache.save(_report(), "j"), "UBOB", FailureClass.UNKNOWN)
    assert memory.count() == 1

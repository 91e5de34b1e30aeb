"""The Xid table: complete, internally consistent, and in step with the gpu.* signatures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.rules import Rule, load_rules
from crashcart.knowledge.taxonomy import FailureClass, Role
from crashcart.knowledge.xid import XID_FILE, Cause, load_xid_file, load_xids, xid_info

REFERENCE_CODES = {
    8,
    13,
    31,
    32,
    38,
    43,
    45,
    48,
    61,
    62,
    63,
    64,
    68,
    69,
    74,
    79,
    92,
    94,
    95,
    109,
    119,
    120,
    122,
    123,
    140,
    143,
    144,
    145,
    146,
    147,
    148,
    149,
    150,
}
ROLE_RANK = {Role.ROOT_CAUSE: 2, Role.SYMPTOM: 1, Role.CONTEXT: 0}


@pytest.fixture(scope="module")
def rules() -> list[Rule]:
    return load_rules()


def winner(rules: list[Rule], line: str) -> tuple[Rule, dict[str, str]]:
    hits = [(ROLE_RANK[r.role], r.priority, r) for r in rules if r.compiled().search(line)]
    assert hits, f"no rule matches {line!r}"
    rule = max(hits, key=lambda h: h[:2])[2]
    groups = {k: v for k, v in rule.compiled().search(line).groupdict().items() if v is not None}
    return rule, groups


def kernel_line(code: int) -> str:
    if code == 154:
        return (
            "NVRM: Xid (PCI:0000:1b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"
        )
    return f"kernel: NVRM: Xid (PCI:0000:3b:00): {code}, pid=4242, name=python3, Ch 00000008"


def test_table_covers_the_reference() -> None:
    assert set(load_xids()) >= REFERENCE_CODES


def test_key_entries() -> None:
    for code in (48, 74, 79, 94, 95, 119, 120, 149):
        info = xid_info(code)
        assert info.failure_class is FailureClass.GPU_HARDWARE and info.drain, code
    for code in (13, 31, 43):
        info = xid_info(code)
        assert info.failure_class is FailureClass.CUDA_ERROR and not info.drain, code
    assert Cause.APPLICATION in xid_info(13).causes
    sympathetic = xid_info(45)
    assert sympathetic.sympathetic and not sympathetic.drain
    assert [c for c, i in load_xids().items() if i.sympathetic] == [45]
    assert "reboot" in xid_info(79).action.lower()
    assert xid_info(1) is None


def test_every_xid_line_resolves_to_the_table_class(rules: list[Rule]) -> None:
    for code, info in load_xids().items():
        rule, groups = winner(rules, kernel_line(code))
        assert groups.get("xid") == str(code), (code, rule.id)
        if info.sympathetic:
            assert rule.role is Role.SYMPTOM, code
            continue
        assert rule.role is Role.ROOT_CAUSE, (code, rule.id)
        assert rule.failure_class is info.failure_class, (code, rule.id)
        if info.drain:
            assert rule.priority >= 80, (code, rule.id)


def test_caused_by_previous_xid_names_the_first_xid(rules: list[Rule]) -> None:
    for code, info in load_xids().items():
        if not info.drain:
            continue
        line = f"NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=python3, Ch 00000001 caused by previous Xid {code}"
        rule, groups = winner(rules, line)
        assert (rule.failure_class, rule.role, groups["xid"]) == (FailureClass.GPU_HARDWARE, Role.ROOT_CAUSE, str(code))


def test_every_xid_named_by_a_rule_is_in_the_table(rules: list[Rule]) -> None:
    table = load_xids()
    for rule in rules:
        for group in re.findall(r"\(\?P<xid>([0-9|]+)\)", rule.pattern):
            unknown = {int(c) for c in group.split("|")} - set(table)
            assert not unknown, (rule.id, unknown)


def _shipped() -> dict:
    return yaml.safe_load(XID_FILE.read_text(encoding="utf-8"))


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "xid.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _duplicate(data: dict) -> None:
    data["xids"].append(dict(data["xids"][0]))


def _drain_app_xid(data: dict) -> None:
    next(x for x in data["xids"] if x["code"] == 13)["drain"] = True


def _sympathetic_drain(data: dict) -> None:
    next(x for x in data["xids"] if x["code"] == 45)["drain"] = True


def _network_class(data: dict) -> None:
    next(x for x in data["xids"] if x["code"] == 79)["failure_class"] = "network"


def _extra_field(data: dict) -> None:
    data["xids"][0]["severity"] = "high"


def _bad_version(data: dict) -> None:
    data["version"] = 3


@pytest.mark.parametrize(
    "mutate", [_duplicate, _drain_app_xid, _sympathetic_drain, _network_class, _extra_field, _bad_version]
)
def test_loader_rejects_bad_tables_naming_the_file(tmp_path: Path, mutate) -> None:
    data = _shipped()
    mutate(data)
    with pytest.raises(KnowledgeError, match="xid.yaml"):
        load_xid_file(_write(tmp_path, data))


def test_shipped_table_round_trips(tmp_path: Path) -> None:
    assert load_xid_file(_write(tmp_path, _shipped())) == load_xids()

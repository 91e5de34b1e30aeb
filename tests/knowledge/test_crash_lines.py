"""Tests for knowledge/crash_lines.py: the lines every crash prints are data, each group saying where it was seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.knowledge.crash_lines import CRASH_LINES, crash_lines, load_crash_lines
from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.healthy import healthy_corpus
from crashcart.knowledge.rules import load_rules
from crashcart.knowledge.taxonomy import Role
from crashcart.parsers.rulefilter import RuleFilter


def test_the_shipped_file_loads_with_a_source_for_every_group() -> None:
    groups = load_crash_lines().groups
    assert len(groups) >= 4
    assert all(g.seen_in and all("#" in s for s in g.seen_in) for g in groups)  # owner/repo#thread
    lines = crash_lines()
    assert len(lines) == len(set(lines)) == len({line for g in groups for line in g.lines})
    assert "Traceback (most recent call last):" in lines
    assert crash_lines() == lines


def test_no_shipped_root_cause_rule_claims_a_line_every_crash_prints() -> None:
    """Such a line would be either a misfiring rule or a line of one class only: both mislead the proposal check."""
    rules = [r for r in load_rules() if r.role is Role.ROOT_CAUSE]
    hits = RuleFilter(rules).scan("\n".join(crash_lines()).encode())
    assert [(rules[h.rule_index].id, h.text) for h in hits] == []


def test_no_crash_line_is_in_the_healthy_corpus() -> None:
    assert set(crash_lines()).isdisjoint(healthy_corpus())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: 1\ngroups: []\n", "groups: List should have at least 1 item"),
        ("version: 2\ngroups: [{printed_by: python itself, seen_in: [a/b#1], lines: [x]}]\n", "has version 2"),
        ("version: 1\ngroups: [{printed_by: python itself, seen_in: [], lines: [x]}]\n", "groups.0.seen_in"),
    ],
)
def test_a_broken_file_is_one_knowledge_error_naming_it(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / CRASH_LINES.name
    path.write_text(text)
    with pytest.raises(KnowledgeError, match=r"crash-lines file") as err:
        load_crash_lines(path)
    assert str(path) in str(err.value) and message in str(err.value)

"""Loading a versioned knowledge file: YAML the first time, the validated model's JSON from the cache after."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from crashcart.knowledge import filecache
from crashcart.knowledge.context_lines import ContextLines
from crashcart.knowledge.crash_lines import CrashLines
from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.loading import CACHE_KIND, load_versioned
from crashcart.knowledge.rules import SIGNATURE_DIR, RuleFile
from crashcart.knowledge.runbooks import RunbookFile
from crashcart.knowledge.xid import XidFile

KNOWLEDGE = SIGNATURE_DIR.parent
SHIPPED = [
    *[(path, RuleFile, {"shipped": True}) for path in sorted(SIGNATURE_DIR.glob("*.yaml"))],
    (KNOWLEDGE / "context_lines.yaml", ContextLines, None),
    (KNOWLEDGE / "crash_lines.yaml", CrashLines, None),
    (KNOWLEDGE / "runbooks.yaml", RunbookFile, None),
    (KNOWLEDGE / "xid.yaml", XidFile, None),
]


def _entries() -> list[Path]:
    return sorted(filecache.cache_dir(CACHE_KIND).glob("*.json"))


def _no_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("the YAML was parsed again")

    monkeypatch.setattr(yaml, "load", refuse)


@pytest.mark.parametrize(("path", "model", "context"), SHIPPED, ids=[p.name for p, _, _ in SHIPPED])
def test_every_shipped_file_reads_the_same_from_the_cache(
    path: Path, model: type[RuleFile], context: dict[str, object] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = load_versioned(path, model, "file", 1, context)
    assert len(_entries()) == 1
    _no_yaml(monkeypatch)
    assert load_versioned(path, model, "file", 1, context) == fresh


def _rules_file(tmp_path: Path, explanation: str = "A line of a real program, for the cache tests.") -> Path:
    path = tmp_path / "mine.yaml"
    rule = {
        "id": "mine.segfault",
        "pattern": "Segmentation fault",
        "failure_class": "code_bug",
        "role": "root_cause",
        "priority": 40,
        "explanation": explanation,
        "examples": ["Segmentation fault (core dumped)"],  # bash's report of a SIGSEGV child
    }
    path.write_text(yaml.safe_dump({"version": 1, "rules": [rule]}))
    return path


def test_a_changed_file_is_read_again_and_filed_anew(tmp_path: Path) -> None:
    path = _rules_file(tmp_path)
    first = load_versioned(path, RuleFile, "rule file", 1)
    _rules_file(tmp_path, explanation="Another explanation, so other bytes.")
    second = load_versioned(path, RuleFile, "rule file", 1)
    assert first.rules[0].explanation != second.rules[0].explanation
    assert len(_entries()) == 2


def test_a_damaged_entry_means_reading_the_yaml_again(tmp_path: Path) -> None:
    path = _rules_file(tmp_path)
    fresh = load_versioned(path, RuleFile, "rule file", 1)
    (entry,) = _entries()
    entry.write_text('{"version": 1, "rules": [{"id": ')
    assert load_versioned(path, RuleFile, "rule file", 1) == fresh


def test_an_unwritable_cache_still_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv(filecache.CACHE_DIR_ENV, str(blocker))
    path = _rules_file(tmp_path)
    assert load_versioned(path, RuleFile, "rule file", 1).rules[0].id == "mine.segfault"


def test_a_bad_file_is_one_error_naming_it_cached_or_not(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(b"version: 1\nrules: [\xff\n")
    with pytest.raises(KnowledgeError, match=r"invalid rule file .*bad\.yaml"):
        load_versioned(path, RuleFile, "rule file", 1)
    assert _entries() == []

"""Failure signatures: strict records loaded from the YAML files in knowledge/signatures/.

A rule is a regex in the common subset of Hyperscan and RE2 (no backreferences, no lookaround), so the
fast filter can scan whole blocks with Hyperscan and confirm each candidate line with RE2, never with a
backtracking engine on log text.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated

import re2
from pydantic import Field, ValidationInfo, field_validator, model_validator

from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.loading import load_versioned
from crashcart.knowledge.records import Frozen, Strict
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, Action, FailureClass, Role, Stage

SIGNATURE_DIR = Path(__file__).parent / "signatures"
SCHEMA_VERSION = 1
SOURCE_PATTERN = r"^(?:[\w.-]+/[\w.-]+(?:#\d+|:[^\s:#]+)|https?://[^\s]+)$"


class Rule(Frozen):
    """One failure signature."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    pattern: str
    failure_class: FailureClass
    action: Action | None = None
    role: Role
    priority: int = Field(ge=0, le=100)
    explanation: str = Field(min_length=8)
    ignore_case: bool = False
    stage: Stage | None = None
    examples: list[str] = Field(min_length=1)
    counter_examples: list[str] = []
    source: str = "shipped"
    # Where the examples were seen: an issue thread (owner/repo#N), a page (https://...), or the source file of the
    # program that prints the message (owner/repo:path). Every shipped rule names one (tests/knowledge/test_rules.py);
    # a rule an operator confirmed has its provenance in `source` instead.
    sources: list[Annotated[str, Field(pattern=SOURCE_PATTERN)]] = []
    # The pattern names only an exception's type (python.yaml's per-exception rules): a reading of the whole
    # exception (its message, frames and where it was raised) outranks it (agent/tracebacks.py).
    generic: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles_in_re2(cls, pattern: str, info: ValidationInfo) -> str:
        if _shipped(info):
            return pattern
        options = re2.Options()
        options.log_errors = False  # the reason is raised; RE2's own stderr line would be a second copy
        try:
            re2.compile(pattern, options)
        except re2.error as exc:
            arg = exc.args[0] if exc.args else exc
            text = arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)
            raise ValueError(f"pattern does not compile in RE2: {text}") from exc
        return pattern

    @model_validator(mode="after")
    def _examples_agree(self, info: ValidationInfo) -> Rule:
        if _shipped(info):
            return self
        regex = self.compiled()
        for line in self.examples:
            if not regex.search(line):
                raise ValueError(f"rule {self.id}: example does not match: {line!r}")
        for line in self.counter_examples:
            if regex.search(line):
                raise ValueError(f"rule {self.id}: counter-example matches: {line!r}")
        return self

    @property
    def resolved_action(self) -> Action:
        return self.action or DEFAULT_ACTION[self.failure_class]

    def compiled(self) -> re2._Regexp:
        """The RE2 form used to confirm a candidate line and read its named groups."""
        return _compile(self.pattern, self.ignore_case)


def _shipped(info: ValidationInfo) -> bool:
    """The library shipped with the package: tests/knowledge/test_rules.py checks every pattern compiles and agrees
    with its examples, so a start does not check 300 rules again (a rule file of the user's is checked)."""
    return bool(info.context and info.context.get("shipped"))


@lru_cache(maxsize=4096)
def _compile(pattern: str, ignore_case: bool) -> re2._Regexp:
    options = re2.Options()
    options.case_sensitive = not ignore_case
    return re2.compile(pattern, options)


class RuleFile(Strict):
    """The shape of one signatures YAML file."""

    version: int = SCHEMA_VERSION
    rules: list[Rule]


def load_rule_file(path: Path, *, shipped: bool = False) -> list[Rule]:
    """Load and validate one signatures file; any problem is a KnowledgeError naming the file."""
    parsed = load_versioned(path, RuleFile, "rule file", SCHEMA_VERSION, context={"shipped": shipped})
    return parsed.rules


def load_rules(paths: list[Path] | None = None) -> list[Rule]:
    """All shipped signatures (or those in `paths`), with ids checked to be unique."""
    if paths is None:
        return list(_shipped_rules())
    return _load_files(paths)


@lru_cache(maxsize=1)
def _shipped_rules() -> tuple[Rule, ...]:
    """The shipped library, parsed and validated once per process (rules are frozen records)."""
    return tuple(_load_files(sorted(SIGNATURE_DIR.glob("*.yaml")), shipped=True))


@lru_cache(maxsize=1)
def generic_rule_ids() -> frozenset[str]:
    """The shipped rules that know an exception by its type alone (asked once per file of a job)."""
    return frozenset(rule.id for rule in _shipped_rules() if rule.generic)


def _load_files(files: list[Path], *, shipped: bool = False) -> list[Rule]:
    rules: list[Rule] = []
    seen: dict[str, Path] = {}
    for path in files:
        for rule in load_rule_file(path, shipped=shipped):
            if rule.id in seen:
                raise KnowledgeError(f"duplicate rule id {rule.id!r} in {path} and {seen[rule.id]}")
            seen[rule.id] = path
            rules.append(rule)
    return rules

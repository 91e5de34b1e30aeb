"""Lines that are context, never the cause: the hints a crash prints under its message, and the launcher lines
that start tearing the group down.

PyTorch prints `For debugging consider passing CUDA_LAUNCH_BLOCKING=1` under every CUDA error, so a rule that
fires on it names no failure; once torchrun sends SIGTERM to a group, what the other ranks print is the shutdown.
Both are data in context_lines.yaml, each family with the program that prints it and real examples with their
sources, checked against the family's pattern when the file loads.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from crashcart.knowledge.loading import load_versioned
from crashcart.knowledge.records import Frozen, Strict

CONTEXT_LINES = Path(__file__).parent / "context_lines.yaml"
SCHEMA_VERSION = 1
_SOURCE = r"^[\w.-]+/[\w.-]+(?:#\d+| \S.*)$"  # owner/repo#N, or owner/repo and the source file that prints it


class SeenLine(Frozen):
    """A real line and where it was seen."""

    line: str = Field(min_length=1)
    seen_in: str = Field(pattern=_SOURCE)


class _Family(Frozen):
    id: str = Field(pattern=r"^[a-z]+\.[a-z0-9_]+$")
    printed_by: str = Field(min_length=8)
    pattern: str
    examples: list[SeenLine] = Field(min_length=1)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"pattern does not compile: {exc}") from exc
        return pattern


class HintFamily(_Family):
    """A note printed under an error; it matches at the start of a message (after launcher prefixes)."""

    @model_validator(mode="after")
    def _examples_match(self) -> HintFamily:
        for example in self.examples:
            if not re.match(self.pattern, example.line.lstrip()):
                raise ValueError(f"{self.id}: pattern does not match its example {example.line!r} at its start")
        return self


class TeardownFamily(_Family):
    """A launcher line that starts stopping the group: its own node's workers, or every task of the job."""

    scope: Literal["node", "job"]
    words: list[str] = Field(min_length=1)  # literals one of which every line of the family holds

    @model_validator(mode="after")
    def _examples_match(self) -> TeardownFamily:
        for example in self.examples:
            if not re.search(self.pattern, example.line):
                raise ValueError(f"{self.id}: pattern does not match its example {example.line!r}")
            if not any(word in example.line for word in self.words):
                raise ValueError(f"{self.id}: its example {example.line!r} holds none of its words")
        return self


class ContextLines(Strict):
    """The shape of context_lines.yaml."""

    version: int = SCHEMA_VERSION
    hints: list[HintFamily] = Field(min_length=1)
    not_hints: list[SeenLine] = []  # lines holding a hint after the message that names the failure
    teardown: list[TeardownFamily] = Field(min_length=1)

    @model_validator(mode="after")
    def _not_hints_stay_messages(self) -> ContextLines:
        for seen in self.not_hints:
            for family in self.hints:
                if re.match(family.pattern, seen.line.lstrip()):
                    raise ValueError(f"{family.id} matches {seen.line!r}, listed under not_hints")
        return self


def load_context_lines(path: Path = CONTEXT_LINES) -> ContextLines:
    """The file validated; any problem is a KnowledgeError naming it."""
    return load_versioned(path, ContextLines, "context-lines file", SCHEMA_VERSION)


@lru_cache(maxsize=1)
def hint_pattern() -> re.Pattern[str]:
    """One pattern for every shipped hint family: match it on a message with its launcher prefixes peeled off."""
    return re.compile("|".join(f"(?:{family.pattern})" for family in load_context_lines_cached().hints))


@lru_cache(maxsize=1)
def _teardown_checks() -> tuple[tuple[str, re.Pattern[str], Literal["node", "job"]], ...]:
    """(word, pattern, scope), one row per word of each family."""
    return tuple(
        (word, re.compile(family.pattern), family.scope)
        for family in load_context_lines_cached().teardown
        for word in family.words
    )


def teardown_scope(text: str) -> Literal["node", "job"] | None:
    """The scope of the teardown the line starts, or None. A family's pattern runs only on a line that holds
    one of its words: this is asked of every template of the job."""
    for word, pattern, scope in _teardown_checks():
        if word in text and pattern.search(text):
            return scope
    return None


@lru_cache(maxsize=1)
def load_context_lines_cached() -> ContextLines:
    """The shipped file, read once per process."""
    return load_context_lines()

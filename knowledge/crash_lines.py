"""Lines every crash prints whatever its class (tracebacks, CUDA notes, launcher summaries), which no rule may match.

A proposed rule is tried on these lines and on the shipped rules' examples of other classes before anyone confirms
it (agent/proposals.py): a rule that fires on `Traceback (most recent call last):` would name one class for every
crash. The lines are data in crash_lines.yaml, each group with the program that prints it and where it was seen.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field

from crashcart.knowledge.loading import load_versioned
from crashcart.knowledge.records import Frozen, Strict

CRASH_LINES = Path(__file__).parent / "crash_lines.yaml"
SCHEMA_VERSION = 1


class CrashLineGroup(Frozen):
    """Lines one program prints on any crash, and the public threads where lines in that format were seen."""

    printed_by: str = Field(min_length=8)
    seen_in: list[str] = Field(min_length=1)
    lines: list[str] = Field(min_length=1)


class CrashLines(Strict):
    """The shape of crash_lines.yaml."""

    version: int = SCHEMA_VERSION
    groups: list[CrashLineGroup] = Field(min_length=1)


def load_crash_lines(path: Path = CRASH_LINES) -> CrashLines:
    """The file validated; any problem is a KnowledgeError naming it."""
    return load_versioned(path, CrashLines, "crash-lines file", SCHEMA_VERSION)


def crash_lines() -> list[str]:
    """Every distinct line of the shipped file, in file order, read once per process."""
    return list(_lines())


@lru_cache(maxsize=1)
def _lines() -> tuple[str, ...]:
    return tuple(dict.fromkeys(line for group in load_crash_lines().groups for line in group.lines))

"""Runbooks: the concrete next steps an operator takes for each failure class, loaded from runbooks.yaml.

Steps are data, not code, so operators can edit them without touching the diagnosis. A step may name the
faulty nodes with `{nodes}` (comma-joined, as Slurm takes them) or `{nodes_space}` (space-separated, as
kubectl takes them); when no node is known those render as "<the faulty node>".
"""

from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from crashcart.knowledge.loading import load_versioned
from crashcart.knowledge.records import Frozen, Strict, is_host
from crashcart.knowledge.taxonomy import FailureClass

RUNBOOK_FILE = Path(__file__).parent / "runbooks.yaml"
SCHEMA_VERSION = 1
PLACEHOLDERS = frozenset({"nodes", "nodes_space"})
UNKNOWN_NODE = "<the faulty node>"


class Runbook(Frozen):
    """What to do about one failure class."""

    title: str = Field(min_length=4)
    summary: str = Field(min_length=8)
    steps: list[str] = Field(min_length=1)
    escalate_to: str | None = None

    @field_validator("steps")
    @classmethod
    def _placeholders_known(cls, steps: list[str]) -> list[str]:
        for step in steps:
            try:
                fields = {name for _, name, _, _ in string.Formatter().parse(step) if name is not None}
            except ValueError as exc:
                raise ValueError(f"step has a malformed placeholder: {step!r}: {exc}") from exc
            unknown = fields - PLACEHOLDERS
            if unknown:
                raise ValueError(f"step uses unknown placeholder(s) {sorted(unknown)}: {step!r}")
        return steps

    @property
    def needs_nodes(self) -> bool:
        """True when some step names the faulty node(s)."""
        return any("{nodes" in step for step in self.steps)

    def render(self, nodes: list[str]) -> list[str]:
        """The steps with the faulty nodes filled in."""
        joined = ",".join(nodes) if nodes else UNKNOWN_NODE
        spaced = " ".join(nodes) if nodes else UNKNOWN_NODE
        return [step.format(nodes=joined, nodes_space=spaced) for step in self.steps]


class RunbookFile(Strict):
    """The shape of runbooks.yaml: one runbook per taxonomy class, no more, no less."""

    version: int = SCHEMA_VERSION
    runbooks: dict[FailureClass, Runbook]

    @model_validator(mode="after")
    def _every_class(self) -> RunbookFile:
        missing = sorted(c.value for c in FailureClass if c not in self.runbooks)
        if missing:
            raise ValueError(f"runbooks missing for: {', '.join(missing)}")
        return self


def load_runbook_file(path: Path) -> dict[FailureClass, Runbook]:
    """Load and validate a runbooks file; any problem is a KnowledgeError naming the file."""
    parsed = load_versioned(path, RunbookFile, "runbook file", SCHEMA_VERSION)
    return dict(parsed.runbooks)


@lru_cache(maxsize=1)
def load_runbooks() -> dict[FailureClass, Runbook]:
    """The shipped runbooks, one per failure class (cached: the file does not change at run time)."""
    return load_runbook_file(RUNBOOK_FILE)


def mitigation_steps(failure_class: FailureClass, nodes: list[str]) -> list[str]:
    """The runbook steps for `failure_class`, with the faulty hosts (deduplicated, in order) filled in; a rank
    standing in for an unknown host ("rank 12") is no node a command can name."""
    unique = list(dict.fromkeys(n for n in nodes if is_host(n)))
    return load_runbooks()[failure_class].render(unique)

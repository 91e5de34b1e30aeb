"""The records every layer shares: the strict base models, and a log line with where it came from.

They sit at the bottom of the house so that the stores (knowledge), the parsers and the agent all speak of
a line, and of the evidence for a diagnosis, in one way.
"""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from crashcart.knowledge.taxonomy import Role


class Strict(BaseModel):
    """Base for records that cross a module boundary: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")


class Frozen(Strict):
    """A strict record that cannot change once made: loaded knowledge, keys, settings shared across threads."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class LineRef(Strict):
    """One log line, with where it came from and who printed it."""

    file: str
    line: int  # 1-based
    text: str
    node: str | None = None
    rank: int | None = None
    time: datetime | None = None


def shift_ref(ref: LineRef, offset: int) -> LineRef:
    """The line `offset` lines further down (a byte range scanned apart is merged back into its file)."""
    return ref.model_copy(update={"line": ref.line + offset}) if offset else ref


class Evidence(LineRef):
    """A log line that supports a diagnosis, with the rule that fired on it."""

    rule_id: str | None = None
    role: Role | None = None


RANK_PLACE = "rank "  # a faulty place named by its rank when the logs name no host: "rank 12"


def rank_place(rank: int) -> str:
    """A rank as a place in `faulty_nodes`, for a job whose logs name no host for it."""
    return f"{RANK_PLACE}{rank}"


_RANK_WRITTEN = re.compile(r"(?i)(?:rank[ _-]?)?(\d{1,7})")  # a bare number is a rank: no host is named so


def as_place(written: str) -> str:
    """A place as a model or an operator may write it: "rank3", "Rank 3", "rank_3" and "3" are the rank place
    "rank 3"; anything else is a host name, kept as written."""
    m = _RANK_WRITTEN.fullmatch(written.strip())
    return rank_place(int(m.group(1))) if m else written


def rank_of(place: str) -> int | None:
    """The rank a rank place names ("rank 12" -> 12), None for a host."""
    return (
        int(place.removeprefix(RANK_PLACE))
        if place.startswith(RANK_PLACE) and place[len(RANK_PLACE) :].isdigit()
        else None
    )


def is_host(place: str) -> bool:
    """A place that is a host, which a drain command or a runbook may name (not a rank standing in for one)."""
    return bool(place) and not place.startswith(RANK_PLACE)

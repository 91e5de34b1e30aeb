"""The records every layer shares: the strict base models, and a log line with where it came from.

They sit at the bottom of the house so that the stores (knowledge), the parsers and the agent all speak of
a line, and of the evidence for a diagnosis, in one way.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from crashcart.knowledge.taxonomy import Role


class Strict(BaseModel):
    """Base for records that cross a module boundary: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")


class Frozen(Strict):
    """A strict record that cannot change once made: loaded knowledge, keys, settings shared across threads."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Record = TypeVar("Record", bound=BaseModel)
_new, _set = object.__new__, object.__setattr__


def trusted(cls: type[Record], fields: dict[str, Any]) -> Record:
    """A record holding `fields` (the dict itself), values this program made and typed itself, given for every
    field of `cls`, not validated.

    For the scan's hot path, where a record is made per rule hit, template, line and progress point (120k on a
    1,024-rank-file job) and validating took most of each one's cost; values read from outside (files, users,
    a model's answers) are validated as ever. What pydantic's model_construct does for such values, without its
    per-field look for defaults and aliases, which made it slower than validating.
    """
    record = _new(cls)
    _set(record, "__dict__", fields)
    _set(record, "__pydantic_fields_set__", set(fields))
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


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


# A rank as labels, operators and models write it: "rank12", "Rank 1", "[rank3]", "rank_3", or a bare "290" (a
# number names no host). Seven digits at most: a longer number is no rank anyone runs.
_RANK_WRITTEN = re.compile(r"\[?\s*(?:rank[\s_-]*)?(\d{1,7})\s*\]?", re.IGNORECASE)


def rank_written(text: str) -> int | None:
    """The rank a rank-like text names, however it is written; None for a host name."""
    m = _RANK_WRITTEN.fullmatch(text.strip())
    return int(m.group(1)) if m else None


def as_place(written: str) -> str:
    """A place as written, with a rank written any way made the rank place ("Rank 3" -> "rank 3")."""
    rank = rank_written(written)
    return rank_place(rank) if rank is not None else written


def is_host(place: str) -> bool:
    """A place that is a host, which a drain command or a runbook may name (not a rank standing in for one)."""
    return bool(place) and not place.startswith(RANK_PLACE)

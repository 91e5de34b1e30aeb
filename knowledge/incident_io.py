"""Incident records in and out of stores: fresh ids, sortable times and the JSONL exchange format."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import IO

from pydantic import ValidationError

from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.incidents import Incident, Provenance


def new_id() -> str:
    """A fresh incident id: 48 random bits are plenty for a memory of millions."""
    return f"inc-{secrets.token_hex(6)}"


def sort_time(dt: datetime) -> str:
    """A created_at as a string that sorts in time order (aware times converted to naive UTC)."""
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC).replace(tzinfo=None)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%f")


def with_source(incident: Incident, source: str) -> Incident:
    """The incident with provenance.source replaced, validated (model_copy alone would not check it)."""
    provenance = Provenance.model_validate({**incident.provenance.model_dump(), "source": source})
    return incident.model_copy(update={"provenance": provenance})


def read_jsonl(fh: IO[str], source: str) -> list[Incident]:
    """Every incident of a JSONL stream, provenance.source set; a bad line is an error naming its number."""
    name = getattr(fh, "name", "<stream>")
    out: list[Incident] = []
    for lineno, line in enumerate(fh, 1):
        if not line.strip():
            continue
        try:
            out.append(with_source(Incident.model_validate_json(line), source))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "line"
            raise KnowledgeError(
                f"{name}:{lineno}: not an incident record ({where}: {first['msg']}); "
                "fix or drop that line (one Incident JSON object per line, as `export_jsonl` writes)"
            ) from exc
    return out


def write_jsonl(incidents: Iterable[Incident], fh: IO[str]) -> int:
    n = 0
    for incident in incidents:
        fh.write(incident.model_dump_json() + "\n")
        n += 1
    return n

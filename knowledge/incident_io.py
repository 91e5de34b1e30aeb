"""Incident records in and out of stores: content ids, sortable times and the JSONL exchange format."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import IO, Literal

from pydantic import ValidationError

from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.incidents import Incident, Provenance


def content_key(incident: Incident) -> str:
    """What makes two records the same incident: its fingerprint, class, action and provenance.job.

    Not created_at, confirmed_by, source or resolution: the same failure imported twice, added again from the same
    logs or confirmed by a second person is still one incident (and counted once in memory's vote).
    """
    what = {
        "fingerprint": incident.fingerprint.model_dump(mode="json"),
        "failure_class": incident.failure_class.value,
        "action": incident.action.value,
        "job": incident.provenance.job,
    }
    # ensure_ascii: a job named by a non-UTF-8 path holds surrogates, which only an escape can hash.
    return hashlib.sha256(json.dumps(what, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def content_ids(incident: Incident) -> Iterator[str]:
    """The ids an incident without one may take, in order: a digest of its content key, then (only when another
    incident already holds that id: a 48-bit clash, about 1 in 10^5 for a memory of 100k) digests salted 1, 2, ...
    Deterministic, so the same incident always lands on the same id in any store, whatever was stored before."""
    key = content_key(incident)
    attempt = 0
    while True:
        salted = key if attempt == 0 else f"{key}#{attempt}"
        yield f"inc-{hashlib.sha256(salted.encode()).hexdigest()[:12]}"
        attempt += 1


def same_incident(a: Incident, b: Incident) -> bool:
    return content_key(a) == content_key(b)


def completed(stored: Incident, new: Incident) -> Incident:
    """The stored incident with what a second record of it adds: its resolution and who confirmed it, where the
    stored one has none. What is already stored stands (the first operator's words are not overwritten), and so do
    its id, created_at and source: only blanks are filled."""
    update: dict[str, object] = {}
    if stored.resolution is None and new.resolution:
        update["resolution"] = new.resolution
    if stored.provenance.confirmed_by is None and new.provenance.confirmed_by:
        update["provenance"] = stored.provenance.model_copy(update={"confirmed_by": new.provenance.confirmed_by})
    return stored.model_copy(update=update) if update else stored


Placement = Literal["insert", "update", "same", "clash"]


def place(incident: Incident, lookup: Callable[[str], Incident | None], renew: bool) -> tuple[Placement, Incident]:
    """Where an incident goes in a store that holds `lookup(id)`, and the record to store or return there.

    - no id: its content id (`content_ids`); a store that already holds it there gets "same" or "update";
    - an id that is free: "insert", id kept;
    - an id held by the same incident (`same_incident`): "same" (nothing to do: returns the stored one) or
      "update" (the stored one completed with a resolution or confirmation it lacked, see `completed`);
    - an id held by another incident: "clash" (returns the stored one) unless renew, when it takes its content id
      instead, so importing the same clashing record twice still stores it once.
    Both stores call this, so they agree on every case.
    """
    if incident.id:
        stored = lookup(incident.id)
        if stored is None:
            return "insert", incident
        if same_incident(stored, incident):
            return _settle(stored, incident)
        if not renew:
            return "clash", stored
    for candidate in content_ids(incident):
        stored = lookup(candidate)
        if stored is None:
            return "insert", incident.model_copy(update={"id": candidate})
        if same_incident(stored, incident):
            return _settle(stored, incident)
    raise AssertionError("unreachable: content_ids never ends")


def _settle(stored: Incident, incident: Incident) -> tuple[Placement, Incident]:
    done = completed(stored, incident)
    return ("same", stored) if done is stored else ("update", done)


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

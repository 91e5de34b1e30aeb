"""`crashcart cases ...`: the incident memory from the command line (thin: parse, call, render)."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from crashcart.cli_help import CLASSES
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.taxonomy import Action, FailureClass
from crashcart.printable import counted, printable, printable_name

cases_app = typer.Typer(
    help="Incident memory: confirmed past failures, found again by similarity.", no_args_is_help=True
)

MemoryOpt = Annotated[
    Path | None,
    typer.Option(
        "--memory", help="incident store (default: $CRASHCART_MEMORY, else incidents.db in ~/.local/share/crashcart)"
    ),
]


class ListFormat(str, Enum):
    text = "text"
    json = "json"


class NoSuchIncident(InputError):
    """No stored incident has that id or id prefix: exit 1, like grep finding nothing (a bad store path is 2)."""

    exit_code = 1


def _store(path: Path | None, create: bool = False):
    from crashcart.stores import default_memory_path, open_memory

    store = open_memory(path, create=create)
    if store is None:
        where = path or default_memory_path()
        raise InputError(f"no incident store at {where}: add incidents first with `crashcart cases add`")
    return store


SHOWN_CANDIDATES = 10


def resolve_id(store, given: str) -> str:
    """The stored id that `given` names: itself, else the one id it is a prefix of (as `git show` takes a short
    hash). No match raises NoSuchIncident (exit 1); several raise InputError naming them (exit 2)."""
    if store.get(given) is not None:
        return given
    found = store.ids_with_prefix(given, limit=SHOWN_CANDIDATES + 1)
    if not found:
        raise NoSuchIncident(f"no incident {given!r}: see `crashcart cases list`")
    if len(found) > 1:
        more = ", ..." if len(found) > SHOWN_CANDIDATES else ""
        raise InputError(
            f"incident id prefix {given!r} is ambiguous: {', '.join(found[:SHOWN_CANDIDATES])}{more}; "
            "give more of the id"
        )
    return found[0]


@cases_app.command("add")
def add(
    paths: Annotated[list[str] | None, typer.Argument(help="the failed job's logs (omit with --labels)")] = None,
    failure_class: Annotated[
        FailureClass | None, typer.Option("--class", metavar="CLASS", help=f"the confirmed class: {CLASSES}")
    ] = None,
    confirm: Annotated[bool, typer.Option("--confirm", help="accept the diagnosed class as confirmed")] = False,
    action: Annotated[Action | None, typer.Option(help="the action taken (default: from the class)")] = None,
    resolution: Annotated[str | None, typer.Option(help="how it was resolved, in your words")] = None,
    by: Annotated[str | None, typer.Option(help="who confirmed it")] = None,
    job: Annotated[str | None, typer.Option(help="job id (default: the paths)")] = None,
    labels: Annotated[Path | None, typer.Option(help="add every case of DIR/labels.jsonl instead")] = None,
    memory: MemoryOpt = None,
) -> None:
    """Store a confirmed incident: a job's logs with its class, or a whole labeled set."""
    from crashcart.agent.cases import add_from_paths
    from crashcart.evals.incidents import add_from_evalset
    from crashcart.stores import open_rule_store

    store = _store(memory, create=True)
    before = store.count()  # storing is idempotent: what is already stored is not added again
    if labels is not None:
        added = add_from_evalset(store, labels)
        new = store.count() - before
        again = f" ({len(added) - new} already stored)" if new < len(added) else ""
        print(f"added {counted(new, 'incident')} from {labels / 'labels.jsonl'}{again}")
        return
    if not paths:
        raise InputError("give the job's log paths, or --labels DIR for a labeled set")
    if failure_class is None and not confirm:
        raise InputError("say what the failure was: --class CLASS, or --confirm to accept the diagnosis")
    incident, proposal = add_from_paths(
        store,
        paths,
        failure_class=failure_class,
        action=action,
        job=job,
        confirmed_by=by,
        resolution=resolution,
        rule_store=open_rule_store(create=True),
    )
    verb = "added" if store.count() > before else "already stored as"
    print(f"{verb} {incident.id}: {incident.failure_class.value} -> {incident.action.value}")
    if proposal is not None:  # the rules missed it: the fast filter learns too, once an operator agrees
        verdict = "queued rule proposal" if proposal.status == "pending" else "no rule proposed"
        print(f"{verdict} {proposal.id or ''}: {proposal.pattern} ({'; '.join(proposal.validation[:2])})")


@cases_app.command("list")
def list_(
    failure_class: Annotated[
        FailureClass | None, typer.Option("--class", metavar="CLASS", help=f"only this class: {CLASSES}")
    ] = None,
    limit: int = 50,
    offset: int = 0,
    fmt: Annotated[
        ListFormat, typer.Option("--format", "-f", help='json: {"incidents": [...], "count": N, "total": T}')
    ] = ListFormat.text,
    memory: MemoryOpt = None,
) -> None:
    """The stored incidents, newest first. No store yet at the default place lists 0 incidents; a --memory
    path that does not exist is an error (a typo must not look like an empty memory)."""
    from crashcart.stores import default_memory_path, open_memory

    store = open_memory(memory) if memory is None else _store(memory)
    if store is None:
        if fmt is ListFormat.json:
            sys.stdout.write(json.dumps({"incidents": [], "count": 0, "total": 0}) + "\n")
        else:
            print(f"0 incidents (no store yet at {default_memory_path()}: add some with `crashcart cases add`)")
        return
    listed = store.list(limit=limit, offset=offset, failure_class=failure_class.value if failure_class else None)
    if fmt is ListFormat.json:  # count: the incidents listed here (one page); total: all in the store
        page = [inc.model_dump(mode="json") for inc in listed]
        sys.stdout.write(json.dumps({"incidents": page, "count": len(page), "total": store.count()}) + "\n")
        return
    for inc in listed:  # plain lines, not a table: a terminal soft-wraps them, and the id is never cut
        p = inc.provenance
        who = printable(p.confirmed_by or p.source)
        print(
            f"{inc.id}  {inc.failure_class.value} -> {inc.action.value}  {p.created_at:%Y-%m-%d %H:%M}  "
            f"by {who}  job {printable_name(p.job)}"
        )
    print(f"{counted(store.count(), 'incident')} in {store.path}")


@cases_app.command("show")
def show(
    incident_id: Annotated[str, typer.Argument(help="the id, or a unique prefix of it")], memory: MemoryOpt = None
) -> None:
    """One incident as JSON."""
    store = _store(memory)
    incident = store.get(resolve_id(store, incident_id))
    if incident is None:  # removed by another process in between
        raise NoSuchIncident(f"no incident {incident_id!r}: see `crashcart cases list`")
    sys.stdout.write(incident.model_dump_json(indent=2) + "\n")


@cases_app.command("remove")
def remove(
    incident_id: Annotated[str, typer.Argument(help="the id, or a unique prefix of it")], memory: MemoryOpt = None
) -> None:
    """Forget one incident."""
    store = _store(memory)
    found = resolve_id(store, incident_id)
    if not store.remove(found):
        raise NoSuchIncident(f"no incident {incident_id!r}: see `crashcart cases list`")
    print(f"removed {found}")


@cases_app.command("search")
def search(
    paths: list[str],
    k: Annotated[int, typer.Option("-k", "--top", help="how many incidents to show")] = 5,
    memory: MemoryOpt = None,
) -> None:
    """The stored incidents most similar to a new job's logs."""
    from crashcart.agent.cases import search_paths

    for item in search_paths(_store(memory), paths, k):  # plain lines: ids whole, resolutions not squeezed
        print(
            f"{item.similarity:.2f}  {item.id}  {item.failure_class.value} -> {item.action.value}  "
            f"job {printable_name(item.job)}"
        )
        if item.resolution:
            print(f"      resolved: {printable(item.resolution)}")


@cases_app.command("export")
def export(
    out: Annotated[Path, typer.Argument(help="JSONL file to write, or - for stdout")], memory: MemoryOpt = None
) -> None:
    """Write every incident as JSON lines, to share a team's memory."""
    store = _store(memory)
    if str(out) == "-":
        store.export_jsonl(sys.stdout)
        return
    with out.open("w", encoding="utf-8") as fh:
        n = store.export_jsonl(fh)
    print(f"exported {n} incidents to {out}")


@cases_app.command("import")
def import_(src: Annotated[Path, typer.Argument(help="JSONL from `cases export`")], memory: MemoryOpt = None) -> None:
    """Add the incidents of an export (ids kept unless another incident holds one); importing it again adds
    nothing."""
    if not src.is_file():
        raise InputError(f"no such file: {src}")
    with src.open(encoding="utf-8") as fh:
        records = sum(1 for line in fh if line.strip())
        fh.seek(0)
        n = _store(memory, create=True).import_jsonl(fh)
    again = f" ({records - n} already stored)" if n < records else ""
    print(f"imported {counted(n, 'incident')} from {src}{again}")

"""`crashcart cases ...`: the incident memory from the command line (thin: parse, call, render)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from crashcart.knowledge.errors import InputError
from crashcart.knowledge.taxonomy import Action, FailureClass
from crashcart.printable import printable, printable_name

cases_app = typer.Typer(
    help="Incident memory: confirmed past failures, found again by similarity.", no_args_is_help=True
)

MemoryOpt = Annotated[
    Path | None,
    typer.Option(
        "--memory", help="incident store (default: $CRASHCART_MEMORY or ~/.local/share/crashcart/incidents.db)"
    ),
]


def _store(path: Path | None, create: bool = False):
    from crashcart.stores import default_memory_path, open_memory

    store = open_memory(path, create=create)
    if store is None:
        where = path or default_memory_path()
        raise InputError(f"no incident store at {where}: add incidents first with `crashcart cases add`")
    return store


@cases_app.command("add")
def add(
    paths: Annotated[list[str] | None, typer.Argument(help="the failed job's logs (omit with --labels)")] = None,
    failure_class: Annotated[FailureClass | None, typer.Option("--class", help="the confirmed class")] = None,
    confirm: Annotated[bool, typer.Option(help="accept the diagnosed class as confirmed")] = False,
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
    if labels is not None:
        added = add_from_evalset(store, labels)
        print(f"added {len(added)} incidents from {labels / 'labels.jsonl'}")
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
    print(f"added {incident.id}: {incident.failure_class.value} -> {incident.action.value}")
    if proposal is not None:  # the rules missed it: the fast filter learns too, once an operator agrees
        verdict = "queued rule proposal" if proposal.status == "pending" else "no rule proposed"
        print(f"{verdict} {proposal.id or ''}: {proposal.pattern} ({'; '.join(proposal.validation[:2])})")


@cases_app.command("list")
def list_(
    failure_class: Annotated[FailureClass | None, typer.Option("--class")] = None,
    limit: int = 50,
    offset: int = 0,
    memory: MemoryOpt = None,
) -> None:
    """The stored incidents, newest first."""
    store = _store(memory)
    table = Table("id", "class", "action", "job", "when", "by", box=None)
    for inc in store.list(limit=limit, offset=offset, failure_class=failure_class.value if failure_class else None):
        p = inc.provenance
        table.add_row(
            inc.id,
            inc.failure_class.value,
            inc.action.value,
            Text(printable_name(p.job)),  # the job defaults to its paths: plain text, never markup
            f"{p.created_at:%Y-%m-%d %H:%M}",
            Text(printable(p.confirmed_by or p.source)),
        )
    Console().print(table)
    print(f"{store.count()} incident(s) in {store.path}")


@cases_app.command("show")
def show(incident_id: str, memory: MemoryOpt = None) -> None:
    """One incident as JSON."""
    incident = _store(memory).get(incident_id)
    if incident is None:
        raise InputError(f"no incident {incident_id!r}: see `crashcart cases list`")
    sys.stdout.write(incident.model_dump_json(indent=2) + "\n")


@cases_app.command("remove")
def remove(incident_id: str, memory: MemoryOpt = None) -> None:
    """Forget one incident."""
    if not _store(memory).remove(incident_id):
        raise InputError(f"no incident {incident_id!r}: see `crashcart cases list`")
    print(f"removed {incident_id}")


@cases_app.command("search")
def search(
    paths: list[str],
    k: Annotated[int, typer.Option("-k", "--top", help="how many incidents to show")] = 5,
    memory: MemoryOpt = None,
) -> None:
    """The stored incidents most similar to a new job's logs."""
    from crashcart.agent.cases import search_paths

    table = Table("similarity", "id", "class", "action", "job", "resolution", box=None)
    for item in search_paths(_store(memory), paths, k):
        table.add_row(
            f"{item.similarity:.2f}",
            item.id,
            item.failure_class.value,
            item.action.value,
            Text(printable_name(item.job)),
            Text(printable(item.resolution or "")),
        )
    Console().print(table)


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
    """Add the incidents of an export (ids kept unless they clash)."""
    if not src.is_file():
        raise InputError(f"no such file: {src}")
    with src.open(encoding="utf-8") as fh:
        n = _store(memory, create=True).import_jsonl(fh)
    print(f"imported {n} incidents from {src}")

"""`crashcart rules ...`: the queue of proposed rules, and the operator's confirm / reject."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from crashcart.knowledge.errors import InputError
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.printable import printable, printable_name

rules_app = typer.Typer(help="Proposed fast-filter rules: review, confirm, reject.", no_args_is_help=True)

StoreOpt = Annotated[
    Path | None,
    typer.Option("--store", help="rule store (default: $CRASHCART_RULES or ~/.local/share/crashcart/rules.db)"),
]


def _store(path: Path | None, create: bool = False):
    from crashcart.stores import default_rules_path, open_rule_store

    store = open_rule_store(path, create=create)
    if store is None:
        raise InputError(f"no rule store at {path or default_rules_path()}: nothing has been proposed yet")
    return store


def _show(proposals) -> None:
    """One block per proposal: the pattern in full (a table would wrap it out of reach of copy and paste)."""
    if not proposals:
        print("no proposals")
    for p in proposals:  # jobs, reasons and examples come from logs: escaped for the terminal
        origin = printable(p.model or p.origin)
        print(f"{p.id}  {p.status}  {p.failure_class.value}  (from {origin}, job {printable_name(p.job)})")
        print(f"  pattern: {printable(p.pattern)}")
        print(f"  why:     {printable(p.reason if p.status == 'rejected' else p.explanation)}")
        for example in p.examples[:2]:
            print(f"  matches: {printable(example[:200])}")


@rules_app.command("pending")
def pending(store: StoreOpt = None) -> None:
    """Proposals waiting for an operator."""
    _show(_store(store).list(status="pending"))


@rules_app.command("list")
def list_(
    status: Annotated[str | None, typer.Option(help="pending, confirmed or rejected")] = None, store: StoreOpt = None
) -> None:
    """Every proposal (or those with one status)."""
    if status not in (None, "pending", "confirmed", "rejected"):
        raise InputError(f"--status must be pending, confirmed or rejected, not {status!r}")
    _show(_store(store).list(status=status))


@rules_app.command("show")
def show(proposal_id: str, store: StoreOpt = None) -> None:
    """One proposal as JSON, with its examples and validation notes."""
    proposal = _store(store).get(proposal_id)
    if proposal is None:
        raise InputError(f"no proposal {proposal_id!r}: see `crashcart rules pending`")
    sys.stdout.write(proposal.model_dump_json(indent=2) + "\n")


@rules_app.command("confirm")
def confirm(
    proposal_id: str, by: Annotated[str, typer.Option(help="who confirms it")] = "", store: StoreOpt = None
) -> None:
    """Make a proposal a rule of the fast filter (from the next triage on)."""
    rule = _store(store).confirm(proposal_id, by=by or os.environ.get("USER", "operator"))
    print(f"confirmed {proposal_id}: rule {rule.id} ({rule.failure_class.value}) joins the fast filter")


@rules_app.command("reject")
def reject(
    proposal_id: str,
    reason: Annotated[str, typer.Option(help="why it is wrong")] = "rejected by operator",
    by: Annotated[str, typer.Option(help="who rejects it")] = "",
    store: StoreOpt = None,
) -> None:
    """Refuse a proposal."""
    _store(store).reject(proposal_id, by=by or os.environ.get("USER", "operator"), reason=reason)
    print(f"rejected {proposal_id}")


@rules_app.command("propose")
def propose(
    paths: list[str],
    failure_class: Annotated[FailureClass, typer.Option("--class", help="the confirmed class of this failure")],
    line: Annotated[
        int | None,
        typer.Option(help="the evidence line number to derive from (default: the diagnosis' first evidence line)"),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Derive a rule, without any model, from the Drain3 template of a confirmed failure's evidence line."""
    from crashcart.agent.cases import propose_from_triage

    proposal = propose_from_triage(paths, failure_class, line=line, store=_store(store, create=True))
    verdict: Literal["queued", "rejected"] = "queued" if proposal.status == "pending" else "rejected"
    print(f"{verdict} {proposal.id}: {proposal.pattern}")
    for note in proposal.validation:
        print(f"  - {note}")

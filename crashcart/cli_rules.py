"""`crashcart rules ...`: the queue of proposed rules, and the operator's confirm / reject."""

from __future__ import annotations

import getpass
import json
import shutil
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from crashcart.cli_help import CLASSES
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.printable import printable, printable_name

rules_app = typer.Typer(
    help="Fast-filter rules: the shipped ones, and proposed ones to review, confirm, reject or retire.",
    no_args_is_help=True,
)
STATUSES = ("pending", "confirmed", "rejected", "retired")

StoreOpt = Annotated[
    Path | None,
    typer.Option("--rules", "--store", help="rule store (default: $CRASHCART_RULES, else the data folder)"),
]


def _store(path: Path | None, create: bool = False):
    from crashcart.stores import default_rules_path, open_rule_store

    store = open_rule_store(path, create=create)
    if store is None:
        raise InputError(f"no rule store at {path or default_rules_path()}: nothing has been proposed yet")
    return store


def _operator(by: str) -> str:
    """Who decides: --by, else the OS user (so the history names a person, not a placeholder)."""
    if by.strip():
        return by.strip()
    try:
        return getpass.getuser() or "unknown"
    except (OSError, KeyError, ImportError):  # no login name, no passwd entry, no pwd module
        return "unknown"


def _show(proposals) -> None:
    """One block per proposal: the pattern in full (a table would wrap it out of reach of copy and paste)."""
    if not proposals:
        print("no proposals")
    for p in proposals:  # jobs, reasons and examples come from logs: escaped for the terminal
        origin = printable(p.model or p.origin)
        print(f"{p.id}  {p.status}  {p.failure_class.value}  (from {origin}, job {printable_name(p.job)})")
        print(f"  pattern: {printable(p.pattern)}")
        print(f"  why:     {printable(p.reason if p.status == 'rejected' else p.explanation)}")
        if p.status == "retired":
            when = f"{p.retired_at:%Y-%m-%d}" if p.retired_at else "?"
            print(f"  retired: by {printable(p.retired_by or '?')} {when}: {printable(p.retired_reason or '')}")
        for example in p.examples[:2]:
            print(f"  matches: {printable(example[:200])}")


@rules_app.command("pending")
def pending(store: StoreOpt = None) -> None:
    """Proposals waiting for an operator."""
    _show(_store(store).list(status="pending"))


@rules_app.command("list")
def list_(
    status: Annotated[str | None, typer.Option(help="pending, confirmed, rejected or retired")] = None,
    shipped: Annotated[bool, typer.Option("--shipped", help="the signatures crashcart ships instead")] = False,
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
    store: StoreOpt = None,
) -> None:
    """Every proposal (or those with one status; retired ones are marked), or with --shipped the shipped rules."""
    if status not in (None, *STATUSES):
        raise InputError(f"--status must be {', '.join(STATUSES[:-1])} or {STATUSES[-1]}, not {status!r}")
    if fmt not in ("text", "json"):
        raise InputError(f"--format must be text or json, not {fmt!r}")
    if shipped:
        _list_shipped(fmt == "json")
        return
    proposals = _store(store).list(status=status)
    if fmt == "json":
        items = [json.loads(p.model_dump_json()) for p in proposals]
        sys.stdout.write(json.dumps({"proposals": items, "count": len(items)}, indent=2) + "\n")
    else:
        _show(proposals)


def _list_shipped(as_json: bool) -> None:
    """The shipped signatures: id and class on one line, the explanation cut to the terminal's width below it."""
    from crashcart.knowledge.rules import load_rules

    rules = load_rules()
    if as_json:
        items = [
            {
                "id": r.id,
                "failure_class": r.failure_class.value,
                "action": r.resolved_action.value,
                "role": r.role.value,
                "priority": r.priority,
                "explanation": r.explanation,
                "pattern": r.pattern,
            }
            for r in rules
        ]
        sys.stdout.write(json.dumps({"rules": items, "count": len(items)}, indent=2) + "\n")
        return
    width = max(40, shutil.get_terminal_size((80, 24)).columns)
    for r in rules:
        print(f"{r.id}  {r.failure_class.value}  {r.role.value}")
        print(_cut(f"  {r.explanation}", width))
    print(f"{len(rules)} shipped rules (full patterns: crashcart rules list --shipped --format json)")


def _cut(text: str, width: int) -> str:
    """One line of at most `width` characters, with an ellipsis where it was cut."""
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


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
    rule = _store(store).confirm(proposal_id, by=_operator(by))
    print(f"confirmed {proposal_id}: rule {rule.id} ({rule.failure_class.value}) joins the fast filter")


@rules_app.command("reject")
def reject(
    proposal_id: str,
    reason: Annotated[str, typer.Option(help="why it is wrong")] = "rejected by operator",
    by: Annotated[str, typer.Option(help="who rejects it")] = "",
    store: StoreOpt = None,
) -> None:
    """Refuse a proposal."""
    _store(store).reject(proposal_id, by=_operator(by), reason=reason)
    print(f"rejected {proposal_id}")


@rules_app.command("retire")
def retire(
    proposal_id: str,
    reason: Annotated[str, typer.Option(help="why the rule must stop firing")],
    by: Annotated[str, typer.Option(help="who retires it (default: the OS user)")] = "",
    store: StoreOpt = None,
) -> None:
    """Take a confirmed rule out of the fast filter (from the next triage on); its history stays."""
    _store(store).retire(proposal_id.removeprefix("user."), by=_operator(by), reason=reason)
    print(f"retired {proposal_id}: it leaves the fast filter; `crashcart rules list --status retired` shows it")


@rules_app.command("propose")
def propose(
    paths: list[str],
    failure_class: Annotated[
        FailureClass, typer.Option("--class", metavar="CLASS", help=f"the confirmed class of this failure: {CLASSES}")
    ],
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

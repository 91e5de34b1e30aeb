"""What `triage` and `batch` do once the result is written: notify the channels named, then pick the exit code.

The order is the promise: the report is out (stdout or -o) before any channel is tried, a channel that fails is one
line on stderr, and only --fail-on decides the exit code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from crashcart.fail_on import FAIL_EXIT, fails
from crashcart.fail_on import HELP as FAIL_ON_HELP

if TYPE_CHECKING:
    from crashcart.agent.report import Report
    from crashcart.batch.summary import BatchSummary
    from crashcart.knowledge.taxonomy import FailureClass

NOTIFY_ENV = "CRASHCART_NOTIFY"  # whitespace-separated URLs, for triage and batch when no --notify is given

NotifyOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--notify",
        metavar="URL",
        help="also send a short redacted summary to this Apprise URL (repeatable): json://host/path, "
        "slack://T/B/C or https://hooks.slack.com/..., msteams://..., discord://..., mailto://... "
        "(default: $CRASHCART_NOTIFY, space-separated); a channel that fails is one line on stderr",
    ),
]
FailOnOpt = Annotated[str | None, typer.Option("--fail-on", metavar="CLASSES|infra|any", help=FAIL_ON_HELP)]


def notify_urls(given: Sequence[str] | None) -> list[str]:
    """The URLs of --notify, else of $CRASHCART_NOTIFY (the bot's come from its config); empty when none."""
    if given:
        return [u.strip() for u in given if u.strip()]
    return os.environ.get(NOTIFY_ENV, "").split()


def finish(
    result: Report | BatchSummary,
    urls: list[str],
    fail_on: frozenset[FailureClass],
    found: Iterable[FailureClass],
) -> None:
    """Send the result's notice to `urls` (one stderr line per channel that fails), then exit 1 if --fail-on
    matched one of the classes `found`."""
    if urls:
        from crashcart.notify import notice_for, send  # lazy: only a run that notifies loads the outbound gate

        for failure in send(notice_for(result), urls):
            print(f"crashcart: warning: notify {failure.channel} failed: {failure.reason}", file=sys.stderr)
    if fails(fail_on, found):
        raise typer.Exit(FAIL_EXIT)

"""`crashcart watch`: follow a running job's logs and report root causes, stalls and the end (thin: parse, call,
render). The library is crashcart.watch; each report is one JSON line on stdout, flushed as it is made, and a
notice to the channels of --notify / $CRASHCART_NOTIFY, sent from a thread so a slow channel delays no line."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crashcart.cli_outcome import NotifyOpt, notify_urls
from crashcart.printable import printable

if TYPE_CHECKING:
    from crashcart.agent.watch_reports import WatchReport
    from crashcart.parsers.follow import Note

INTERRUPTED = 130  # as the shell reports a command stopped by Ctrl-C (crashcart.cli.main does the same)


class WatchFormat(str, Enum):
    json = "json"
    text = "text"


def watch(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="PATHS",
            help="log files or folders to follow (new files in a folder are picked up); with --slurm, instead of "
            "the job's own",
        ),
    ] = None,
    slurm: Annotated[
        str | None, typer.Option("--slurm", metavar="JOBID", help="follow this Slurm job's logs until it ends")
    ] = None,
    stall_after: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            min=0.1,
            help="report a stall after this long without progress on any rank "
            "(default: 10 of the job's own intervals between progress lines, at least 5 minutes)",
        ),
    ] = None,
    idle: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            min=0.1,
            help="without --slurm: the job has ended when its files stop growing this long after a terminal line",
        ),
    ] = 30.0,
    poll: Annotated[float, typer.Option(metavar="SECONDS", min=0.05, help="how often the files are looked at")] = 0.25,
    fmt: Annotated[
        WatchFormat, typer.Option("--format", "-f", help="json: one object per line; text: for people")
    ] = WatchFormat.json,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="also tell on stderr of files found, rotated or skipped, and each report as text"
        ),
    ] = False,
    notify: NotifyOpt = None,
    drain_exec: Annotated[
        str | None,
        typer.Option(
            "--drain-exec",
            metavar="COMMAND",
            help="run this command (no shell) for each node a report says to drain, once per node: {node} and "
            "{reason} are filled in, e.g. 'scontrol update NodeName={node} State=DRAIN Reason={reason}' "
            "(default: the command is only printed)",
        ),
    ] = None,
) -> None:
    """Follow a running job's logs: report each root cause and stall once as it happens, then the final diagnosis
    (on Ctrl-C too: of the lines so far, then exit 130).

    Nothing a log says is run: drain commands are printed, and run only with --drain-exec.
    """
    from crashcart.drain_exec import drain_argv
    from crashcart.watch import WatchOptions
    from crashcart.watch import watch as run_watch

    urls = notify_urls(notify)
    sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="notify") if urls else None

    def emit(report: WatchReport) -> None:
        sys.stdout.write(_rendered(report, fmt) + "\n")
        sys.stdout.flush()
        if verbose and fmt is WatchFormat.json:  # the JSON line for machines, its text for the person watching
            print(_rendered(report, WatchFormat.text), file=sys.stderr, flush=True)
        if sender is not None:
            sender.submit(_send, report, urls)

    def tell(note: Note) -> None:
        if verbose:
            detail = f": {note.detail}" if note.detail else ""
            print(f"crashcart: {note.what} {printable(note.file)}{detail}", file=sys.stderr, flush=True)

    def say(text: str) -> None:
        print(f"crashcart: {printable(text)}", file=sys.stderr, flush=True)

    options = WatchOptions(
        paths=paths or [],
        slurm_job=slurm,
        stall_after=stall_after,
        idle_s=idle,
        poll_s=poll,
        drain_exec=drain_argv(drain_exec) if drain_exec is not None else None,
    )
    try:
        final = run_watch(options, emit, tell, say=say)
    except KeyboardInterrupt:
        if sender is not None:
            sender.shutdown(wait=False, cancel_futures=True)
        print("crashcart: interrupted", file=sys.stderr)
        raise typer.Exit(INTERRUPTED) from None
    if sender is not None:
        sender.shutdown(wait=True)  # each channel is bounded by notify.TIMEOUT_S
    if final.interrupted:  # the diagnosis so far is out; the exit still says the watch was stopped
        print("crashcart: interrupted", file=sys.stderr)
        raise typer.Exit(INTERRUPTED)


def _rendered(report: WatchReport, fmt: WatchFormat) -> str:
    if fmt is WatchFormat.json:
        return report.model_dump_json()
    from crashcart.notify import watch_notice

    notice = watch_notice(report)
    return "\n".join([notice.title, *("  " + line for line in notice.body.splitlines())])


def _send(report: WatchReport, urls: list[str]) -> None:
    from crashcart.notify import send, watch_notice

    for failure in send(watch_notice(report), urls):
        print(f"crashcart: warning: notify {failure.channel} failed: {failure.reason}", file=sys.stderr, flush=True)

"""`crashcart batch`: triage every failed job of a tree or of Slurm, and summarise by cost (thin: parse, call,
render). The library is crashcart.batch: tree/slurm find the jobs, runner triages them, summary weighs them."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crashcart.cli_outcome import FailOnOpt, NotifyOpt, finish, notify_urls
from crashcart.fail_on import parse_fail_on
from crashcart.knowledge.errors import InputError

if TYPE_CHECKING:
    from crashcart.batch.engines import Engine
    from crashcart.batch.models import BatchJob, BatchResult, JobPages
    from crashcart.batch.summary import BatchSummary


class EngineName(str, Enum):
    dask = "dask"


class BatchFormat(str, Enum):
    text = "text"
    json = "json"
    csv = "csv"
    md = "md"
    html = "html"


def batch(
    root: Annotated[
        Path | None,
        typer.Argument(
            metavar="ROOT",
            help="a tree of job folders: each holds its logs (or a logs/ folder) and optionally "
            "job.json with gpus, elapsed_s, state",
        ),
    ] = None,
    slurm: Annotated[bool, typer.Option("--slurm", help="ask Slurm (sacct) for failed jobs instead of a tree")] = False,
    since: Annotated[str | None, typer.Option(help="with --slurm: jobs that ended after this (sacct time)")] = None,
    until: Annotated[str | None, typer.Option(help="with --slurm: jobs that ended before this (sacct time)")] = None,
    states: Annotated[
        str | None, typer.Option(help="with --slurm: comma-separated Slurm states (default: the failed ones)")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="jobs triaged at once, one process each (default: CPUs); with --engine and no "
            "--address, the local cluster's workers"
        ),
    ] = None,
    engine: Annotated[
        EngineName | None,
        typer.Option(
            "--engine",
            help="triage on a Dask cluster instead of a process pool here (needs crashcart's dask extra); its "
            "workers read the logs at the same paths, the results come back here",
        ),
    ] = None,
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            help="with --engine: the scheduler to join, e.g. tcp://head:8786 (default: $DASK_SCHEDULER_ADDRESS, "
            "else a local cluster of --workers processes)",
        ),
    ] = None,
    results: Annotated[
        Path | None,
        typer.Option(
            "--results",
            help="result store: a rerun skips jobs whose logs are unchanged (default: "
            "$CRASHCART_BATCH_RESULTS, else batch.db in ~/.local/share/crashcart)",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="triage every job again, changed or not")] = False,
    fmt: Annotated[
        BatchFormat,
        typer.Option(
            "--format",
            "-f",
            help="text (tables), json (summary and every result), csv (one row per job), md (Markdown), html (one "
            "self-contained page; with -o OUT.html each job's own page is written to OUT-jobs/ beside it and linked)",
        ),
    ] = BatchFormat.text,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="write the output here instead of stdout")] = None,
    memory: Annotated[
        Path | None,
        typer.Option(
            help="incident store to consult (default: $CRASHCART_MEMORY, else incidents.db in "
            "~/.local/share/crashcart, when it exists)"
        ),
    ] = None,
    no_memory: Annotated[bool, typer.Option("--no-memory", help="do not consult incident memory")] = False,
    rules: Annotated[
        Path | None,
        typer.Option(
            "--rules",
            help="rule store whose confirmed rules join the filter (default: $CRASHCART_RULES when it exists)",
        ),
    ] = None,
    notify: NotifyOpt = None,
    fail_on: FailOnOpt = None,
) -> None:
    """Triage every failed job under ROOT (or from Slurm) in parallel; summarise by class, GPU-hours and node.

    Results are stored as each job completes: a rerun triages only the jobs whose logs changed.

    A job that cannot be triaged is reported and the batch goes on.
    """
    from crashcart.batch.render import drain_lines, headline, to_csv, to_json, to_markdown, to_table
    from crashcart.batch.results import ResultStore, default_results_path
    from crashcart.batch.runner import run_batch
    from crashcart.batch.summary import summarise

    failing, urls = parse_fail_on(fail_on), notify_urls(notify)
    jobs = _jobs(root, slurm, since, until, states)
    memory_path, rules_path = _store_paths(memory, no_memory, rules)
    pages = _job_pages(out) if fmt is BatchFormat.html and out is not None else None
    _warn_skipped_rules(rules_path)
    began, started = datetime.now(UTC), time.perf_counter()
    with (
        ResultStore(results or default_results_path()) as store,
        _engine(engine, address, workers) as where,
        _progress_bar() as progress,
    ):
        found = run_batch(
            jobs,
            results=store,
            workers=workers,
            memory_path=memory_path,
            rules_path=rules_path,
            progress=progress,
            force=force,
            pages=pages,
            engine=where,
        )
    summary = summarise(found, since=began, wall_s=time.perf_counter() - started)
    if fmt is BatchFormat.text:
        _emit_table(to_table(summary, drains=False), out, drain_lines(summary))
    elif fmt is BatchFormat.html:
        _emit(_html(summary, found, pages), out)
    else:
        text = {
            BatchFormat.json: lambda: to_json(summary, found) + "\n",
            BatchFormat.csv: lambda: to_csv(found),
            BatchFormat.md: lambda: to_markdown(summary),
        }[fmt]()
        _emit(text, out)
    if fmt is not BatchFormat.text or out is not None:
        print(headline(summary.totals), file=sys.stderr)
    finish(summary, urls, failing, [r.diagnosis.failure_class for r in found if r.diagnosis is not None])


def _engine(name: EngineName | None, address: str | None, workers: int | None) -> AbstractContextManager[Engine | None]:
    """The engine --engine names (joined on the first job to triage), or None: the local process pool."""
    if name is None:
        if address is not None:
            raise InputError("--address names an engine's scheduler: give --engine dask with it")
        return nullcontext()
    from crashcart.batch.engines import DaskEngine  # lazy: Dask is an optional extra

    return DaskEngine(address, workers)


def _job_pages(out: Path) -> JobPages:
    """OUT-jobs/ beside OUT: the folder of the per-job pages, made now so a worker only writes its file."""
    from crashcart.batch.models import JobPages

    folder = out.with_name(out.stem + "-jobs")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot make {folder} for the jobs' pages: {exc.strerror or exc}; fix --out") from exc
    return JobPages(folder=folder, batch_page=out.name)


def _html(summary: BatchSummary, found: list[BatchResult], pages: JobPages | None) -> str:
    """The batch page, linking each job whose page is there; a triaged job without one is named on stderr."""
    from crashcart.htmlreport.batch import page_name, to_html
    from crashcart.printable import printable_name

    links: dict[str, str] = {}
    for r in found if pages is not None else []:
        assert pages is not None
        name = page_name(r.job.job_id)
        if (pages.folder / name).is_file():
            links[r.job.job_id] = f"{pages.folder.name}/{name}"
        elif r.status == "ok":
            print(
                f"crashcart: warning: no page for job {printable_name(r.job.job_id)}: it could not be written",
                file=sys.stderr,
            )
    return to_html(summary, found, links)


def _jobs(root: Path | None, slurm: bool, since: str | None, until: str | None, states: str | None) -> list[BatchJob]:
    if slurm == (root is not None):
        raise InputError("give a ROOT folder of job folders, or --slurm to ask Slurm for failed jobs (not both)")
    if root is None:
        from crashcart.batch.slurm import DEFAULT_STATES, slurm_jobs  # lazy: only --slurm needs sacct

        wanted = [s.strip() for s in states.split(",") if s.strip()] if states else []
        return slurm_jobs(since=since, until=until, states=wanted or DEFAULT_STATES)
    if since or until or states:
        raise InputError("--since, --until and --states go with --slurm; a tree takes every job under ROOT")
    from crashcart.batch.tree import discover_jobs

    return discover_jobs(root)


def _store_paths(memory: Path | None, no_memory: bool, rules: Path | None) -> tuple[Path | None, Path | None]:
    """The stores each worker opens: the ones named, else the defaults that exist, else none."""
    from crashcart.stores import default_memory_path, default_rules_path

    for given, flag in ((memory, "--memory"), (rules, "--rules")):
        if given is not None and not given.is_file():
            raise InputError(
                f"no store at {given}: fix {flag} (create one with `crashcart cases add` or `crashcart rules propose`)"
            )
    memory_path = memory or (default_memory_path() if default_memory_path().is_file() else None)
    rules_path = rules or (default_rules_path() if default_rules_path().is_file() else None)
    return None if no_memory else memory_path, rules_path


def _warn_skipped_rules(rules_path: Path | None) -> None:
    """Say once, before the workers start, which confirmed rules every job will run without (each worker's
    triage leaves them out on its own, and a batch result carries no warnings)."""
    from crashcart.knowledge.rule_store import loadable_rules
    from crashcart.printable import printable
    from crashcart.stores import open_rule_store

    store = open_rule_store(rules_path) if rules_path is not None else None
    if store is None:
        return
    with store:
        for skipped in loadable_rules(store)[1]:
            print(f"crashcart: warning: {printable(skipped.warning)}", file=sys.stderr)


@contextmanager
def _progress_bar() -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar on stderr (stdout stays clean for json/csv); silent when stderr is not a terminal."""
    from rich.console import Console  # rich is imported when a batch runs, not by every crashcart start
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    bar = Progress(
        TextColumn("triaging"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not console.is_terminal,
        transient=True,
    )
    task = bar.add_task("triage", total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield update


def _emit(text: str, out: Path | None) -> None:
    if out is None:
        sys.stdout.write(text)
        return
    try:
        out.write_text(text)
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror or exc}; fix --out") from exc


def _emit_table(table, out: Path | None, plain: list[str] | None = None) -> None:
    """The tables, then `plain` lines printed as they are (commands to copy: never wrapped at the width)."""
    from rich.console import Console

    if out is None:
        Console().print(table)
        for line in plain or []:
            print(line)
        return
    try:
        with out.open("w") as fh:
            Console(file=fh, width=160).print(table)
            fh.write("".join(line + "\n" for line in plain or []))
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror or exc}; fix --out") from exc

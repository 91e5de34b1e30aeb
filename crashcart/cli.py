"""The `crashcart` command: parse arguments, call one library function, render its result.

Errors a user can fix become one line on stderr and exit code 2; CRASHCART_DEBUG=1 shows the traceback.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from crashcart.cli_batch import batch
from crashcart.cli_bot import bot
from crashcart.cli_cases import cases_app
from crashcart.cli_generate import generate
from crashcart.cli_help import install as install_help
from crashcart.cli_mcp import mcp
from crashcart.cli_outcome import FailOnOpt, NotifyOpt, finish, notify_urls
from crashcart.cli_rules import rules_app
from crashcart.cli_watch import watch
from crashcart.fail_on import EXIT_CODES, parse_fail_on
from crashcart.knowledge.errors import CrashcartError
from crashcart.printable import printable, printable_name

if TYPE_CHECKING:
    from rich.console import RenderableType

TIMEOUT_S = 30.0  # crashcart.agent.consult.TIMEOUT_S (a test keeps them equal), not imported at start-up

install_help()
HELP = {"help_option_names": ["-h", "--help"]}  # click hands it down to every subcommand's context

app = typer.Typer(
    help="Diagnose failed training jobs from their logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings=HELP,
)


def _version(show: bool) -> None:
    """--version: print the installed distribution's version and stop (eager, so it needs no command)."""
    if show:
        from importlib.metadata import version

        print(f"crashcart {version('crashcart')}")
        raise typer.Exit()


@app.callback()
def _main(
    show_version: Annotated[
        bool, typer.Option("--version", "-V", is_eager=True, callback=_version, help="print the version and exit")
    ] = False,
) -> None:
    """Diagnose failed training jobs from their logs."""


app.add_typer(cases_app, name="cases")
app.add_typer(rules_app, name="rules")
app.command("batch", epilog=EXIT_CODES)(batch)
app.command("bot")(bot)
app.command("generate")(generate)
app.command("mcp")(mcp)
app.command("watch")(watch)


class Format(str, Enum):
    text = "text"
    json = "json"
    md = "md"


class TriageFormat(str, Enum):
    text = "text"
    json = "json"
    md = "md"
    html = "html"


FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="text for people, json for machines, md for chat")]
TriageFormatOpt = Annotated[
    TriageFormat,
    typer.Option(
        "--format",
        "-f",
        help="text for people, json for machines, md for chat, html: one self-contained page with a timeline "
        "and a heatmap (use with -o report.html)",
    ),
]


LlmOpt = Annotated[
    str | None,
    typer.Option(
        "--llm",
        help="consult a model when rules and memory are unsure: "
        "openai:gpt-4.1, ollama:llama3.1, vllm:NAME (with --llm-base-url) ... "
        "(default: $CRASHCART_LLM; off when unset)",
    ),
]
LlmUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--llm-base-url", help="an OpenAI-compatible server (vLLM, llama.cpp, Ollama), e.g. http://gpu-box:8000/v1"
    ),
]
LlmTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--llm-timeout",
        min=0.1,
        max=3600,
        help="seconds the model may take per diagnosis, all samples and retries included; then the rules decide",
    ),
]


@app.command(epilog=EXIT_CODES)
def triage(
    paths: Annotated[list[str], typer.Argument(help="log files, folders of logs, .gz/.zst, or - for stdin")],
    fmt: TriageFormatOpt = TriageFormat.text,
    workers: Annotated[int | None, typer.Option(help="processes for multi-file jobs (default: CPUs)")] = None,
    memory: Annotated[
        Path | None,
        typer.Option(
            help="incident store to compare with (default: $CRASHCART_MEMORY, else incidents.db in "
            "~/.local/share/crashcart)"
        ),
    ] = None,
    no_memory: Annotated[bool, typer.Option("--no-memory", help="do not consult incident memory")] = False,
    llm: LlmOpt = None,
    llm_base_url: LlmUrlOpt = None,
    llm_samples: Annotated[int, typer.Option(help="answers to sample; the class is their majority vote")] = 1,
    llm_budget: Annotated[int, typer.Option(help="token budget for the whole diagnosis")] = 20_000,
    llm_always: Annotated[
        bool, typer.Option("--llm-always", help="consult the model even when the rules are sure")
    ] = False,
    llm_timeout: LlmTimeoutOpt = TIMEOUT_S,
    redact_hosts: Annotated[
        bool, typer.Option("--redact-hosts", help="also pseudonymise node names and IPs sent to the model")
    ] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="write the report here instead of stdout")] = None,
    notify: NotifyOpt = None,
    fail_on: FailOnOpt = None,
) -> None:
    """Diagnose one failed job: what failed, where, the proving lines, and what to do next."""
    from crashcart.agent.consult import LLMOptions
    from crashcart.api import triage as run_triage
    from crashcart.progress import TriageProgress
    from crashcart.render import empty_note, to_json, to_markdown, to_terminal
    from crashcart.stores import open_memory, open_rule_store

    failing, urls = parse_fail_on(fail_on), notify_urls(notify)
    store = None if no_memory else open_memory(memory)
    if memory is not None and store is None:
        raise CrashcartError(f"no incident store at {memory}: create one with `crashcart cases add --memory {memory}`")
    settings = _llm_settings(llm, llm_base_url)
    options = LLMOptions(
        samples=llm_samples,
        token_budget=llm_budget,
        timeout_s=llm_timeout,
        always=llm_always,
        redact_hosts=redact_hosts,
    )
    rule_store = open_rule_store(create=settings is not None)
    with TriageProgress(sys.stderr) as progress:
        report = run_triage(
            paths,
            workers=workers,
            memory=store,
            rule_store=rule_store,
            llm=settings,
            llm_options=options,
            progress=progress,
        )
    for warning in report.warnings:
        print(f"crashcart: warning: {printable(warning)}", file=sys.stderr)
    note = empty_note(report)
    if fmt is TriageFormat.json and note:  # the other reports carry it themselves
        print(f"crashcart: note: {note}", file=sys.stderr)
    if fmt is TriageFormat.json:
        write_out(to_json(report) + "\n", out)
    elif fmt is TriageFormat.md:
        write_out(to_markdown(report), out)
    elif fmt is TriageFormat.html:
        from crashcart.htmlreport.job import to_html

        write_out(to_html(report), out)
    else:
        write_out(to_terminal(report), out)
    finish(report, urls, failing, [report.diagnosis.failure_class])


def write_out(report: str | RenderableType, out: Path | None) -> None:
    """The report on stdout, or in OUT (a rich renderable as plain text, 100 columns); an unwritable OUT is the
    user's to fix."""
    if out is None:
        if isinstance(report, str):
            sys.stdout.write(report)
        else:
            _print(report)
        return
    try:
        with out.open("w", encoding="utf-8") as fh:
            if isinstance(report, str):
                fh.write(report)
            else:
                _print(report, file=fh, width=100, color_system=None)
    except OSError as exc:
        raise CrashcartError(f"cannot write {out}: {exc.strerror or exc}; fix --out") from exc


def _print(renderable: RenderableType, **console: Any) -> None:
    """A rich renderable through a rich Console made here: a JSON run never imports rich."""
    from rich.console import Console

    Console(**console).print(renderable)


def _llm_settings(spec: str | None, base_url: str | None):
    """LLM settings from the flags, else from $CRASHCART_LLM...; None when no model is configured."""
    if not spec and not os.environ.get("CRASHCART_LLM"):
        return None
    from crashcart.agent.llm_provider import LLMSettings

    overrides = {k: v for k, v in (("model", spec), ("base_url", base_url)) if v}
    return LLMSettings.from_env(**overrides)


@app.command("eval")
def eval_(
    directory: Annotated[Path, typer.Argument(help="an eval set: DIR/labels.jsonl and its cases")],
    fmt: FormatOpt = Format.text,
    memory: Annotated[
        bool,
        typer.Option(
            "--memory",
            help="also leave-one-out with incident memory, and retrieval alone; report top-k neighbour recall",
        ),
    ] = False,
    k: Annotated[int, typer.Option("-k", "--top", help="neighbours per case with --memory")] = 3,
    llm: LlmOpt = None,
    llm_base_url: LlmUrlOpt = None,
    llm_samples: Annotated[int, typer.Option(help="answers to sample per consulted case")] = 1,
    llm_timeout: LlmTimeoutOpt = TIMEOUT_S,
    llm_always: Annotated[
        bool, typer.Option("--llm-always", help="with --llm: consult the model on every case")
    ] = False,
    cases: Annotated[bool, typer.Option("--cases", help="with --format json: every case's prediction too")] = False,
    recurrence: Annotated[
        bool,
        typer.Option(
            "--recurrence", help="with --memory: store every case, then find it again buried in a generated job"
        ),
    ] = False,
    recurrence_mb: Annotated[float, typer.Option(help="with --recurrence: MB of log per node of each job")] = 3.0,
    recurrence_nodes: Annotated[int, typer.Option(help="with --recurrence: nodes of each job")] = 4,
) -> None:
    """Triage every labeled case of DIR and report accuracy, F1, action, evidence and node hit rates.

    With --memory (and --llm MODEL), compare rules, rules + memory and rules + memory + LLM on the same cases.
    """
    from crashcart.evals.render import render_markdown, render_memory, render_text
    from crashcart.evals.runner import evaluate

    settings = _llm_settings(llm, llm_base_url) if llm else None
    if memory or settings is not None:
        from crashcart.agent.consult import LLMOptions
        from crashcart.evals.memory_eval import evaluate_memory

        compared = evaluate_memory(
            directory,
            k=k,
            llm=settings,
            llm_options=LLMOptions(samples=llm_samples, timeout_s=llm_timeout, always=llm_always),
            recurrence=recurrence,
            nodes=recurrence_nodes,
            mb_per_node=recurrence_mb,
        )
        if fmt is Format.json:
            modes = ("rules", "rules_memory_loo", "retrieval_only", "rules_memory_llm", "recurrence")
            drop = None if cases else {m: {"results"} for m in modes}
            sys.stdout.write(compared.model_dump_json(exclude=drop) + "\n")
        else:
            _print(render_memory(compared))
        return
    report = evaluate(directory)
    if fmt is Format.json:  # one compact object of the figures; the per-case rows only when asked for
        sys.stdout.write(report.model_dump_json(exclude=None if cases else {"results"}) + "\n")
    elif fmt is Format.md:
        sys.stdout.write(render_markdown(report))
    else:
        _print(render_text(report))


def main() -> None:
    """Console entry point: one line and a non-zero exit for any error, never a traceback."""
    debug = bool(os.environ.get("CRASHCART_DEBUG"))
    try:
        app()
    except CrashcartError as exc:
        if debug:
            raise
        print(f"crashcart: error: {printable_name(str(exc))}", file=sys.stderr)  # it may name an odd file
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("crashcart: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(141)
    except Exception as exc:  # a bug: still one line unless debugging
        if debug:
            raise
        print(
            f"crashcart: internal error: {type(exc).__name__}: {printable_name(str(exc))} "
            "(set CRASHCART_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        sys.exit(70)


if __name__ == "__main__":
    main()

"""The `crashcart` command: parse arguments, call one library function, render its result.

Errors a user can fix become one line on stderr and exit code 2; CRASHCART_DEBUG=1 shows the traceback.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from crashcart.cli_cases import cases_app
from crashcart.errors import CrashcartError

app = typer.Typer(
    help="Diagnose failed training jobs from their logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


app.add_typer(cases_app, name="cases")


class Format(str, Enum):
    text = "text"
    json = "json"
    md = "md"


FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="text for people, json for machines, md for chat")]


@app.command()
def triage(
    paths: Annotated[list[str], typer.Argument(help="log files, folders of logs, .gz/.zst, or - for stdin")],
    fmt: FormatOpt = Format.text,
    workers: Annotated[int | None, typer.Option(help="processes for multi-file jobs (default: CPUs)")] = None,
    memory: Annotated[Path | None, typer.Option(help="incident store to compare with (default: "
                                                "$CRASHCART_MEMORY or ~/.local/share/crashcart/incidents.db)")] = None,
    no_memory: Annotated[bool, typer.Option("--no-memory", help="do not consult incident memory")] = False,
) -> None:
    """Diagnose one failed job: what failed, where, the proving lines, and what to do next."""
    from crashcart.api import triage as run_triage
    from crashcart.memory import open_memory
    from crashcart.render import to_json, to_markdown, to_terminal

    store = None if no_memory else open_memory(memory)
    if memory is not None and store is None:
        raise CrashcartError(f"no incident store at {memory}: create one with `crashcart cases add --memory {memory}`")
    report = run_triage(paths, workers=workers, memory=store)
    if fmt is Format.json:
        sys.stdout.write(to_json(report) + "\n")
    elif fmt is Format.md:
        sys.stdout.write(to_markdown(report))
    else:
        Console().print(to_terminal(report))


@app.command("eval")
def eval_(
    directory: Annotated[Path, typer.Argument(help="an eval set: DIR/labels.jsonl and its cases")],
    fmt: FormatOpt = Format.text,
    memory: Annotated[bool, typer.Option("--memory", help="also leave-one-out with incident memory, and "
                                         "retrieval alone; report top-k neighbour recall")] = False,
    k: Annotated[int, typer.Option("-k", "--top", help="neighbours per case with --memory")] = 3,
) -> None:
    """Triage every labeled case of DIR and report accuracy, F1, action, evidence and node hit rates."""
    from evals.render import render_markdown, render_memory, render_text
    from evals.runner import evaluate

    if memory:
        from evals.memory_eval import evaluate_memory

        compared = evaluate_memory(directory, k=k)
        if fmt is Format.json:
            sys.stdout.write(compared.model_dump_json(indent=2) + "\n")
        else:
            Console().print(render_memory(compared))
        return
    report = evaluate(directory)
    if fmt is Format.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    elif fmt is Format.md:
        sys.stdout.write(render_markdown(report))
    else:
        Console().print(render_text(report))


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def generate(ctx: typer.Context) -> None:
    """Write a large synthetic multi-node job (see `crashcart generate --help-generator`)."""
    from evals.generator import main as generator_main

    args = ["--help" if a == "--help-generator" else a for a in ctx.args]
    generator_main(args)


def main() -> None:
    """Console entry point: one line and a non-zero exit for any error, never a traceback."""
    debug = bool(os.environ.get("CRASHCART_DEBUG"))
    try:
        app()
    except CrashcartError as exc:
        if debug:
            raise
        print(f"crashcart: error: {exc}", file=sys.stderr)
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
        print(f"crashcart: internal error: {type(exc).__name__}: {exc} (set CRASHCART_DEBUG=1 for the traceback)",
              file=sys.stderr)
        sys.exit(70)


if __name__ == "__main__":
    main()

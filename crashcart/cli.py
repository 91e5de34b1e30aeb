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

from crashcart.errors import CrashcartError

app = typer.Typer(
    help="Diagnose failed training jobs from their logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


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
) -> None:
    """Diagnose one failed job: what failed, where, the proving lines, and what to do next."""
    from crashcart.api import triage as run_triage
    from crashcart.render import to_json, to_markdown, to_terminal

    report = run_triage(paths, workers=workers)
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
) -> None:
    """Triage every labeled case of DIR and report accuracy, F1, action, evidence and node hit rates."""
    from evals.render import render_markdown, render_text
    from evals.runner import evaluate

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

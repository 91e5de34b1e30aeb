"""`crashcart bot`: answer questions about failed jobs in Slack (thin: load the config, start the bot)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def bot(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="bot.yaml: log_roots, rule_confirmers, stores ... "
            "(tokens default to $SLACK_BOT_TOKEN, $SLACK_APP_TOKEN, "
            "$SLACK_SIGNING_SECRET)",
        ),
    ] = None,
    http: Annotated[
        bool,
        typer.Option(
            "--http/--socket",
            help="HTTP mode (Slack posts to http://HOST:PORT/slack/events) or Socket Mode (no public URL)",
        ),
    ] = False,
    port: Annotated[int, typer.Option(help="port for --http")] = 3000,
    host: Annotated[
        str, typer.Option(help="address for --http to bind (0.0.0.0 for every interface, behind your proxy)")
    ] = "127.0.0.1",
) -> None:
    """Run the Slack bot: mention it (or /crashcart) with a Slurm job id, a log path, a paste or an upload."""
    from crashcart.bot.config import load_config
    from crashcart.bot.run import serve

    serve(load_config(config), "http" if http else "socket", port, host=host)

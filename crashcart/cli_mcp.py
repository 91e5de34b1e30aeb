"""`crashcart mcp`: serve crashcart's diagnosis to an assistant over the Model Context Protocol (thin: load the
config, start the server; the mcp SDK is imported only here, when the command runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def mcp(
    log_root: Annotated[
        list[Path] | None,
        typer.Option(
            "--log-root", metavar="DIR", help="a folder the tools may read logs under (repeatable; added to --config's)"
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="the Slack bot's bot.yaml: its log_roots, stores and limits (max_read_bytes, max_triage_seconds ...)",
        ),
    ] = None,
    http: Annotated[
        bool, typer.Option("--http", help="streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio")
    ] = False,
    port: Annotated[int, typer.Option(min=0, max=65535, help="port for --http (0: any free one, printed)")] = 8765,
) -> None:
    """Serve triage, log windows, similar incidents and pending rules to an MCP client (an editor, a chat app)."""
    from crashcart.bot.config import load_config
    from crashcart.mcp_server import serve

    settings = load_config(config)
    roots = [*settings.log_roots, *(log_root or [])]
    serve(settings.model_copy(update={"log_roots": roots}), http=http, port=port)

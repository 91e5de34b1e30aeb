"""Start the bot: Socket Mode (a websocket out to Slack, no public URL) or HTTP (Slack posts to /slack/events)."""

from __future__ import annotations

from slack_bolt import App

from crashcart.bot.config import BotConfig, Mode

DEFAULT_PORT = 3000


def serve(config: BotConfig, mode: Mode = "socket", port: int = DEFAULT_PORT, app: App | None = None) -> None:
    """Check the tokens `mode` needs, build the app and serve until interrupted."""
    config.require(mode)
    if app is None:
        from crashcart.bot.app import build_app

        app = build_app(config)
    if mode == "socket":
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        SocketModeHandler(app, config.secret("app_token")).start()
    else:
        app.start(port=port)

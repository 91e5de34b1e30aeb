"""Starting the bot: Socket Mode with the app token, or Bolt's HTTP server on a port; tokens checked first."""

from __future__ import annotations

import pytest
import slack_bolt.adapter.socket_mode as socket_mode

from crashcart.bot.config import BotConfig
from crashcart.bot.run import serve
from crashcart.knowledge.errors import CrashcartError


class _App:
    def __init__(self) -> None:
        self.started: list[int] = []

    def start(self, port: int) -> None:
        self.started.append(port)


def test_socket_mode_uses_the_app_token(monkeypatch) -> None:
    handlers = []

    class Handler:
        def __init__(self, app, app_token) -> None:
            handlers.append((app, app_token))

        def start(self) -> None:
            handlers.append("started")

    monkeypatch.setattr(socket_mode, "SocketModeHandler", Handler)
    app = _App()
    serve(BotConfig(bot_token="xoxb-1", app_token="xapp-1"), "socket", app=app)
    assert handlers == [(app, "xapp-1"), "started"] and app.started == []


def test_http_mode_serves_on_the_port() -> None:
    app = _App()
    serve(BotConfig(bot_token="xoxb-1", signing_secret="s"), "http", port=8123, app=app)
    assert app.started == [8123]


def test_nothing_starts_without_the_tokens() -> None:
    app = _App()
    with pytest.raises(CrashcartError, match="SLACK_SIGNING_SECRET"):
        serve(BotConfig(bot_token="xoxb-1", app_token="xapp-1"), "http", app=app)
    assert app.started == []

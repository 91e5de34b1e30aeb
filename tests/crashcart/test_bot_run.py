"""Starting the bot: Socket Mode with the app token, or Bolt's HTTP server on a port; tokens checked first."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import slack_bolt.adapter.socket_mode as socket_mode

import crashcart.bot.run as run
from crashcart.bot.config import BotConfig
from crashcart.bot.run import serve, verify_slack
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


def test_http_mode_serves_on_the_port_of_the_host(monkeypatch) -> None:
    served: list = []
    monkeypatch.setattr(run, "serve_http", lambda app, host, port: served.append((app, host, port)))
    app = _App()
    serve(BotConfig(bot_token="xoxb-1", signing_secret="s"), "http", port=8123, app=app)
    serve(BotConfig(bot_token="xoxb-1", signing_secret="s"), "http", port=8124, app=app, host="10.0.0.5")
    assert served == [(app, "127.0.0.1", 8123), (app, "10.0.0.5", 8124)]


def test_nothing_starts_without_the_tokens() -> None:
    app = _App()
    with pytest.raises(CrashcartError, match="SLACK_SIGNING_SECRET"):
        serve(BotConfig(bot_token="xoxb-1", app_token="xapp-1"), "http", app=app)
    assert app.started == []


def test_log_roots_that_do_not_exist_are_refused_at_start(tmp_path: Path) -> None:
    app = _App()
    config = BotConfig(bot_token="xoxb-1", signing_secret="s", log_roots=[tmp_path, tmp_path / "gone"])
    with pytest.raises(CrashcartError, match=f"log_roots that are not folders: {tmp_path / 'gone'};"):
        serve(config, "http", app=app)
    assert app.started == []


def _refusing_url() -> str:
    """A local port nothing listens on: connecting to it is refused (never the real Slack)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/api/"


def test_an_unreachable_slack_is_one_line_naming_the_endpoint() -> None:
    url = _refusing_url()
    config = BotConfig(bot_token="xoxb-1", app_token="xapp-1", slack_api_url=url)
    with pytest.raises(CrashcartError) as caught:
        serve(config, "socket")
    message = str(caught.value)
    assert message.startswith(f"cannot reach Slack at {url}auth.test (") and "slack_api_url" in message
    assert "\n" not in message


@pytest.fixture()
def refusing_slack() -> Iterator[str]:
    """A local stand-in for Slack's Web API that answers auth.test as Slack does for a revoked token."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.dumps({"ok": False, "error": "invalid_auth"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/api/"
    server.shutdown()
    server.server_close()


def test_a_bad_token_is_one_line_saying_what_to_check(refusing_slack: str) -> None:
    config = BotConfig(bot_token="xoxb-revoked", slack_api_url=refusing_slack)
    with pytest.raises(CrashcartError, match=r"auth.test \(invalid_auth\): check SLACK_BOT_TOKEN") as caught:
        verify_slack(config)
    assert "xoxb-revoked" not in str(caught.value)


def test_http_mode_answers_slack_through_bolts_wsgi_adapter(monkeypatch) -> None:
    """A real request to the stdlib server: Bolt checks the signature (none here, so 401), on 127.0.0.1."""
    import urllib.request
    from wsgiref import simple_server

    import slack_bolt

    servers: list = []
    made = simple_server.make_server

    def recording(*args: object, **kw: object):
        server = made(*args, **kw)  # type: ignore[arg-type]
        servers.append(server)
        return server

    monkeypatch.setattr(run, "make_server", recording)
    app = slack_bolt.App(
        token="xoxb-1", signing_secret="s", token_verification_enabled=False, request_verification_enabled=True
    )
    thread = threading.Thread(target=run.serve_http, args=(app, "127.0.0.1", 0), daemon=True)
    thread.start()
    _until_listening(servers)
    (server,) = servers
    assert server.server_address[0] == "127.0.0.1"
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.server_port}/slack/events", data=b'{"type": "url_verification"}', method="POST"
    )
    try:
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 401  # Bolt's signature check answered, behind the threaded wsgiref server
    finally:
        server.shutdown()
        thread.join(10)
    assert not thread.is_alive()


def _until_listening(servers: list, seconds: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not servers:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)

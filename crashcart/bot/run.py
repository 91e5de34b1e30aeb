"""Start the bot: Socket Mode (a websocket out to Slack, no public URL) or HTTP (Slack posts to /slack/events).

Before anything listens, the bot token is checked against Slack's auth.test, so an unreachable Slack or a bad token
is one line that names the endpoint and what to check, not a traceback from deep inside Bolt.

HTTP mode serves Bolt's WSGI adapter from the standard library's wsgiref server, one thread per request: no WSGI
server is a dependency of crashcart, and Bolt's own `app.start` is a development server. Put it behind a reverse
proxy (TLS) for Slack to reach it; it binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import contextlib
import urllib.error
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from crashcart.bot.config import BotConfig, Mode
from crashcart.knowledge.errors import CrashcartError

DEFAULT_PORT = 3000
DEFAULT_HOST = "127.0.0.1"
VERIFY_TIMEOUT_S = 10


def serve(
    config: BotConfig,
    mode: Mode = "socket",
    port: int = DEFAULT_PORT,
    app: App | None = None,
    *,
    host: str = DEFAULT_HOST,
) -> None:
    """Check the tokens `mode` needs and the log roots, reach Slack, build the app and serve until interrupted."""
    config.require(mode)
    config.check_roots()
    if app is None:
        from crashcart.bot.app import build_app

        verify_slack(config)
        app = build_app(config)
    if mode == "socket":
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        SocketModeHandler(app, config.secret("app_token")).start()
    else:
        serve_http(app, host, port)


def verify_slack(config: BotConfig, timeout: float = VERIFY_TIMEOUT_S) -> None:
    """Call auth.test with the bot token; CrashcartError naming the endpoint and what to check when it fails."""
    endpoint = f"{config.slack_api_url.rstrip('/')}/auth.test"
    client = WebClient(token=config.secret("bot_token"), base_url=config.slack_api_url, timeout=int(timeout))
    try:
        client.auth_test()
    except SlackApiError as exc:
        error = exc.response.get("error", "refused") if exc.response is not None else "refused"
        raise CrashcartError(
            f"Slack refused the bot token at {endpoint} ({error}): check SLACK_BOT_TOKEN (or `bot_token:` in the "
            "config) is the app's xoxb- token and the app is installed in the workspace"
        ) from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CrashcartError(
            f"cannot reach Slack at {endpoint} ({reason}): check the network, any HTTPS proxy, and "
            "`slack_api_url:` in the config"
        ) from exc


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    """wsgiref's server with a thread per request, so a slow request does not hold up Slack's retries."""

    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    """No access line per request on stderr: Slack posts often, and the bot logs what it does itself."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the stdlib's name)
        return


def serve_http(app: App, host: str, port: int) -> None:
    """Serve Bolt's WSGI adapter on host:port (POST /slack/events) until interrupted."""
    from slack_bolt.adapter.wsgi import SlackRequestHandler

    try:
        server = make_server(
            host, port, SlackRequestHandler(app), server_class=_ThreadingWSGIServer, handler_class=_QuietHandler
        )
    except OSError as exc:
        raise CrashcartError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): pick another --port or --host"
        ) from exc
    print(f"crashcart bot: listening on http://{host}:{server.server_port}/slack/events (stdlib wsgiref, threaded)")
    with server, contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()

"""A local fake of the Slack Web API, and the signed requests Slack would send to a Bolt app.

The bot's real slack_sdk WebClient talks to FakeSlackAPI over HTTP on 127.0.0.1 (base_url), so tests see what it
actually sends. Every call is recorded; `wait("chat.postMessage")` blocks until the bot's background listener
has made it. Implemented: auth.test, chat.postMessage, chat.update, reactions.add, files.info (+ GET /files/...
downloads, which need the bot token and may redirect), usergroups.users.list, users.info, and POSTs to /response/... (a
slash command's response_url). `fail("files.info", "file_not_found")` makes the next such call fail.

The request side: `signed(secret, body)` gives the headers Slack adds (X-Slack-Signature is
v0=HMAC-SHA256(secret, "v0:{timestamp}:{body}")); `event_body`, `command_body` and `action_body` build the
payloads of an Events API event, a slash command and a block action.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

BOT_TOKEN = "xoxb-test-token"
BOT_USER = "UCRASHBOT"
TEAM = "T0TEST"


@dataclass(frozen=True)
class Call:
    """One Web API call as the server saw it."""

    method: str
    params: dict[str, Any]
    token: str | None
    ts: str = ""  # the ts the server gave this call (a posted message's ts)


@dataclass
class FakeFile:
    name: str
    content: bytes
    size: int | None = None  # what files.info claims (defaults to the real size)
    url: str | None = None  # override the download URL (another host, say)
    mimetype: str = "text/plain"
    redirect: str | None = None  # the download answers 302 to this URL


@dataclass
class FakeSlackAPI:
    """Owns the HTTP server thread and the call log; `stop()` frees the port at once."""

    files: dict[str, FakeFile] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    downloads: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Condition()
        self._ts = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"fake": self}))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-slack", daemon=True
        )

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        """The WebClient's base_url."""
        return self.root + "/api/"

    def start(self) -> FakeSlackAPI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def add_file(self, file_id: str, name: str, content: bytes, **kw: Any) -> None:
        self.files[file_id] = FakeFile(name, content, **kw)

    def fail(self, method: str, error: str) -> None:
        """The next call to `method` answers {"ok": false, "error": error}."""
        self.failures[method] = error

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait(self, method: str, n: int = 1, timeout: float = 20.0) -> list[Call]:
        """The first n calls to method, once there are that many (AssertionError after timeout)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len([c for c in self.calls if c.method == method]) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"fake Slack: {n} {method} call(s) expected, got {[c.method for c in self.calls]}"
                    )
                self._lock.wait(left)
            return [c for c in self.calls if c.method == method][:n]

    # -- the API ---------------------------------------------------------------------------------------------

    def answer(self, method: str, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        with self._lock:
            self._ts += 1
            ts = f"1700000000.{self._ts:06d}"
            self.calls.append(Call(method, params, token, ts))
            self._lock.notify_all()
            error = self.failures.pop(method, None)
        if error:
            return {"ok": False, "error": error}
        if token != BOT_TOKEN and not method.startswith("response"):
            return {"ok": False, "error": "invalid_auth"}
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        return handler(params, ts) if handler else {"ok": False, "error": "unknown_method"}

    def _auth_test(self, params: dict, ts: str) -> dict:
        return {
            "ok": True,
            "url": self.root + "/",
            "team": "test",
            "user": "crashcart",
            "team_id": TEAM,
            "user_id": BOT_USER,
            "bot_id": "BCRASHBOT",
        }

    def _chat_postMessage(self, params: dict, ts: str) -> dict:  # noqa: N802 - Slack's method name
        return {"ok": True, "channel": params.get("channel"), "ts": ts, "message": {"text": params.get("text")}}

    def _chat_update(self, params: dict, ts: str) -> dict:
        return {"ok": True, "channel": params.get("channel"), "ts": params.get("ts")}

    def _reactions_add(self, params: dict, ts: str) -> dict:
        return {"ok": True}

    def _users_info(self, params: dict, ts: str) -> dict:
        return {"ok": True, "user": {"id": params.get("user"), "name": str(params.get("user")).lower()}}

    def _usergroups_users_list(self, params: dict, ts: str) -> dict:
        group = params.get("usergroup")
        if group not in self.groups:
            return {"ok": False, "error": "no_such_subteam"}
        return {"ok": True, "users": self.groups[group]}

    def _files_info(self, params: dict, ts: str) -> dict:
        f = self.files.get(params.get("file", ""))
        if f is None:
            return {"ok": False, "error": "file_not_found"}
        url = f.url or f"{self.root}/files-pri/{TEAM}-{params['file']}/{quote(f.name, safe='')}"
        return {
            "ok": True,
            "file": {
                "id": params["file"],
                "name": f.name,
                "mimetype": f.mimetype,
                "size": len(f.content) if f.size is None else f.size,
                "url_private": url,
                "url_private_download": url,
            },
        }

    def _response(self, params: dict, ts: str) -> dict:
        return {"ok": True}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeSlackAPI

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Keep pytest output clean."""

    def _send(self, status: int, data: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _token(self) -> str | None:
        auth = self.headers.get("Authorization") or ""
        return auth.removeprefix("Bearer ") or None

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        url = urlsplit(self.path)
        if url.path.startswith("/files-pri/"):
            self._download(url.path)
            return
        self._api(url.path, dict(parse_qsl(url.query)))

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        url = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        if "json" in (self.headers.get("Content-Type") or ""):
            params = json.loads(raw or "{}")
        else:
            params = dict(parse_qsl(raw))
            for key in ("blocks", "attachments"):
                if isinstance(params.get(key), str):
                    params[key] = json.loads(params[key])
        self._api(url.path, {**dict(parse_qsl(url.query)), **params})

    def _api(self, path: str, params: dict[str, Any]) -> None:
        method = "response" if path.startswith("/response/") else path.removeprefix("/api/")
        body = self.fake.answer(method, params, self._token())
        self._send(200, json.dumps(body).encode())

    def _download(self, path: str) -> None:
        file_id = path.split("/")[2].split("-", 1)[-1]
        self.fake.downloads.append({"path": path, "token": self._token() or ""})
        f = self.fake.files.get(file_id)
        if self._token() != BOT_TOKEN:
            self._send(200, b"<html>login</html>", "text/html")  # what Slack does without a valid token
        elif f is not None and f.redirect:
            self.send_response(302)
            self.send_header("Location", f.redirect.replace("{root}", self.fake.root))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif f is None:
            self._send(404, b"not found", "text/plain")
        else:
            self._send(200, f.content, "application/octet-stream")


# -- what Slack sends to the app ---------------------------------------------------------------------------------


def signed(secret: str, body: str, timestamp: int | None = None, content_type: str = "application/json") -> dict:
    """The headers of a Slack request: the timestamp and v0=HMAC-SHA256(secret, v0:timestamp:body)."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"content-type": content_type, "x-slack-request-timestamp": ts, "x-slack-signature": f"v0={digest}"}


def event_body(event: dict[str, Any]) -> str:
    """An Events API callback (JSON)."""
    return json.dumps(
        {
            "token": "legacy",
            "team_id": TEAM,
            "api_app_id": "ACRASH",
            "type": "event_callback",
            "event_id": f"Ev{time.monotonic_ns()}",
            "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
            "event": event,
        }
    )


def command_body(text: str, user: str, channel: str, response_url: str, command: str = "/crashcart") -> str:
    """A slash command (form-encoded)."""
    return urlencode(
        {
            "token": "legacy",
            "team_id": TEAM,
            "channel_id": channel,
            "channel_name": "test",
            "user_id": user,
            "user_name": user.lower(),
            "command": command,
            "text": text,
            "api_app_id": "ACRASH",
            "response_url": response_url,
            "trigger_id": "1.2.3",
        }
    )


def action_body(action: dict[str, Any], user: str, channel: str, message: dict[str, Any], response_url: str) -> str:
    """A block_actions payload for a click on `message` (form-encoded payload=JSON)."""
    payload = {
        "type": "block_actions",
        "team": {"id": TEAM},
        "user": {"id": user, "team_id": TEAM},
        "api_app_id": "ACRASH",
        "token": "legacy",
        "trigger_id": "1.2.3",
        "response_url": response_url,
        "container": {"type": "message", "message_ts": message["ts"], "channel_id": channel, "is_ephemeral": False},
        "channel": {"id": channel},
        "message": message,
        "actions": [{**action, "action_ts": "1.2"}],
    }
    return urlencode({"payload": json.dumps(payload)})

"""A webhook receiver on 127.0.0.1 for notification tests: every POST it gets (path, headers, JSON body), and a
port where nothing listens for the receiver that is down."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Post:
    path: str
    headers: dict[str, str]
    body: Any  # the JSON it carried (None when it was not JSON)


@dataclass
class Receiver:
    """`.start()`, `.url(scheme, path)`, `.posts`, `.stop()`: answers 200 to every POST, as a webhook does."""

    posts: list[Post] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def start(self) -> Receiver:
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                posts.append(Post(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, scheme: str, path: str) -> str:
        """An Apprise URL for this receiver: url("json", "/hooks/ci") -> json://127.0.0.1:PORT/hooks/ci."""
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def wait(self, n: int, timeout_s: float = 30.0) -> list[Post]:
        """The first n posts, once they have come (a sender on another thread, as the bot's ask threads)."""
        deadline = time.monotonic() + timeout_s
        while len(self.posts) < n:
            assert time.monotonic() < deadline, f"{len(self.posts)} of {n} posts came in {timeout_s}s"
            time.sleep(0.02)
        return self.posts[:n]

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def closed_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago and has no listener: connecting to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]

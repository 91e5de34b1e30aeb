"""A local OpenAI-compatible server that replays a script, so tests exercise real HTTP without a real LLM.

crashcart's OpenAI-compatible client (and the openai SDK, for embeddings) talk to it on 127.0.0.1, the only
way to test what they actually send (response_format, max tokens, the model name) and how their errors,
Retry-After headers and timeouts surface. Each POST to /v1/chat/completions consumes one script step:

    server.script(["first reply", Fail(429, retry_after="2"), Delay(1.0), Reply("late", completion_tokens=3)])

Silence() accepts a request and never answers; Trickle(0.1) answers 200 and then sends one byte of a body that
never completes every 0.1 s, which resets any per-read timeout forever. Both hold on until the server stops.
A plain string is shorthand for Reply(text). When the script runs out the server answers 500 with a message
that says so, so a test that under-scripts fails loudly rather than hanging.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
MODELS_PATHS = ("/v1/models", "/models")


@dataclass(frozen=True)
class Reply:
    """A successful chat.completion; token counts default to chars/4 of what was sent and returned."""

    text: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tool_calls: Sequence[dict[str, Any]] = ()  # [{"name": ..., "arguments": {...}}], OpenAI-shaped on the wire
    finish_reason: str = "stop"


@dataclass(frozen=True)
class Fail:
    """An HTTP error: status, an optional Retry-After header, and an OpenAI-style error body."""

    status: int
    retry_after: str | None = None
    message: str = "scripted failure"
    body: dict[str, Any] | None = None  # replaces the default {"error": {...}} body when given


@dataclass(frozen=True)
class Delay:
    """Hold the request for `seconds` (longer than the client's timeout to make it time out), then answer."""

    seconds: float
    then: Reply | Fail = field(default_factory=lambda: Reply("(too late)"))


@dataclass(frozen=True)
class Silence:
    """Accept the request and never answer (until the server stops, which closes the connection)."""


@dataclass(frozen=True)
class Trickle:
    """Answer 200 with a body promised but never finished: one space every `every_s` seconds, until stopped."""

    every_s: float
    promised_bytes: int = 1_000_000


Step = Union[str, Reply, Fail, Delay, Silence, Trickle]  # noqa: UP007 - a runtime alias, kept readable on 3.10


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


def _estimate(text: str) -> int:
    return -(-len(text) // 4)


def _completion(step: Reply, body: dict[str, Any], n: int) -> dict[str, Any]:
    sent = "".join(str(m.get("content") or "") for m in body.get("messages", []))
    prompt = step.prompt_tokens if step.prompt_tokens is not None else _estimate(sent)
    completion = step.completion_tokens if step.completion_tokens is not None else _estimate(step.text)
    message: dict[str, Any] = {"role": "assistant", "content": step.text or (None if step.tool_calls else "")}
    if step.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))},
            }
            for i, c in enumerate(step.tool_calls)
        ]
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if step.tool_calls else step.finish_reason,
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


class FakeOpenAIServer:
    """Owns the HTTP server thread, the script and the request log; `stop()` frees the port at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: list[Step] = []
        self._served = 0
        self.log: list[Recorded] = []
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What to pass as base_url: the /v1 root, as for vLLM, llama.cpp server or Ollama."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of every chat completion request, in order."""
        return [r.body or {} for r in self.log if r.path in CHAT_PATHS]

    @property
    def calls(self) -> int:
        return len(self.requests)

    def script(self, steps: Sequence[Step]) -> FakeOpenAIServer:
        """Replace the remaining script; returns self so a test can chain it."""
        with self._lock:
            self._steps = list(steps)
            self._served = 0
        return self

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes any handler still sleeping in a Delay
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self) -> Step | None:
        with self._lock:
            if not self._steps:
                return None
            self._served += 1
            return self._steps.pop(0)

    def _record(self, rec: Recorded) -> int:
        with self._lock:
            self.log.append(rec)
            return len(self.log)

    def _exhausted_message(self) -> str:
        return (
            f"fake OpenAI server: script exhausted after {self._served} step(s); "
            "add more steps with openai_server.script([...])"
        )


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    """A handler class bound to one server: the stdlib builds a handler per request and passes no context."""
    return type("Handler", (_Handler,), {"fake": server})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Keep pytest output clean."""

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing to answer

    def _not_found(self) -> None:
        self._send(
            404,
            {
                "error": {
                    "message": f"fake OpenAI server: no route {self.command} {self.path}",
                    "type": "invalid_request_error",
                }
            },
        )

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self.fake._record(Recorded("GET", self.path, dict(self.headers), None))
        if self.path not in MODELS_PATHS:
            self._not_found()
            return
        self._send(
            200,
            {
                "object": "list",
                "data": [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "crashcart-tests"}],
            },
        )

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode(errors="replace")}
        n = self.fake._record(Recorded("POST", self.path, dict(self.headers), body))
        if self.path not in CHAT_PATHS:
            self._not_found()
        elif body.get("stream"):
            self._send(
                400,
                {
                    "error": {
                        "message": "fake OpenAI server: streaming is not scripted",
                        "type": "invalid_request_error",
                    }
                },
            )
        else:
            self._answer(self.fake._next(), body, n)

    def _hold(self, step: Silence | Trickle) -> None:
        """Hold the client until the server stops, then drop the connection so its reader wakes up."""
        self.close_connection = True
        if isinstance(step, Silence):
            self.fake._stopping.wait()
            return
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(step.promised_bytes))
            self.end_headers()
            while not self.fake._stopping.wait(step.every_s):
                self.wfile.write(b" ")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up

    def _answer(self, step: Step | None, body: dict[str, Any], n: int) -> None:
        if isinstance(step, (Silence, Trickle)):
            self._hold(step)
            return
        if isinstance(step, Delay):
            if self.fake._stopping.wait(step.seconds):
                return
            step = step.then
        if step is None:
            self._send(500, {"error": {"message": self.fake._exhausted_message(), "type": "server_error"}})
        elif isinstance(step, Fail):
            headers = {"Retry-After": step.retry_after} if step.retry_after is not None else {}
            payload = (
                step.body
                if step.body is not None
                else {"error": {"message": step.message, "type": "scripted_error", "code": str(step.status)}}
            )
            self._send(step.status, payload, headers)
        else:
            self._send(200, _completion(Reply(step) if isinstance(step, str) else step, body, n))

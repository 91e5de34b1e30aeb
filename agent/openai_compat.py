"""Chat completions over HTTP for every OpenAI-compatible endpoint: OpenAI, vLLM, llama.cpp, Ollama, gateways.

Why by hand rather than through the openai SDK and langchain-openai: importing those two, and the model and
tracer stack of langchain-core they pull in (langsmith's schemas among it), took 0.8 s of a 1.7 s triage of a
small log on these machines, for one request of one endpoint. This speaks that request with httpx (0.05 s to
import) and keeps langchain-core's message classes, so the one agent loop drives this client and any langchain
chat model alike: `invoke(messages) -> AIMessage`, and `bind_tools` as langchain's models have it.

Errors keep what the retry policy reads (`llm_provider.classify_error`): an HTTP error is an `EndpointError`
with the status, the response (for Retry-After) and the server's message; transport errors and timeouts are
httpx's own.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import httpx
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.messages.ai import UsageMetadata

REFUSED = (400, 422)  # what a server answers a request body it does not accept


class EndpointError(Exception):
    """A non-2xx answer: its status, the response (headers for Retry-After) and the body the server sent."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.status_code = response.status_code
        self.body = response.text[:2000]
        self.message = _error_message(response) or f"HTTP {response.status_code} {response.reason_phrase}"
        super().__init__(self.message)


def _error_message(response: httpx.Response) -> str:
    """The `error.message` of an OpenAI-style error body, or the body's text when it is not one."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return response.text.strip()[:300]
    if isinstance(error, dict):
        return str(error.get("message") or "")
    return str(error or "")


class OpenAICompatibleChat:
    """One model on one endpoint; `bind_tools` gives a copy that offers tools. Thread-safe (httpx's client is)."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str,
        timeout_s: float,
        temperature: float,
        max_tokens: int,
        json_mode: bool,
        send_max_tokens: bool,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.json_mode = json_mode
        # OpenAI reads max_completion_tokens (and refuses max_tokens for its reasoning models); older vLLM,
        # llama.cpp and Ollama read max_tokens only.
        self.send_max_tokens = send_max_tokens
        self.headers = {"Authorization": f"Bearer {api_key}", **(headers or {})}
        self.tools: list[dict[str, Any]] = []
        self._plain = False  # the server refused tools or JSON mode: requests go without them
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def bind_tools(self, tools: Sequence[dict[str, Any]], *, strict: bool = False) -> OpenAICompatibleChat:
        """A copy of this model that offers `tools` (OpenAI-format function schemas) on every request."""
        bound = OpenAICompatibleChat.__new__(OpenAICompatibleChat)
        bound.__dict__.update(self.__dict__)
        bound.tools = [_strict(t) if strict else t for t in tools]
        return bound

    def request(self, messages: Sequence[BaseMessage], *, plain: bool = False) -> dict[str, Any]:
        """The JSON body one call sends; `plain`: without the optional parts (tools, JSON mode)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": convert_to_openai_messages(list(messages)),
            "temperature": self.temperature,
            "max_completion_tokens": self.max_tokens,
            "stream": False,
        }
        if self.send_max_tokens:
            body["max_tokens"] = self.max_tokens
        if self.json_mode and not plain:
            body["response_format"] = {"type": "json_object"}
        if self.tools and not plain:
            body["tools"] = self.tools
        return body

    def invoke(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """Send the conversation, return the model's reply; EndpointError or an httpx error when it fails.

        A server that refuses the request (400 or 422) while it asks for tools or JSON mode is asked once more
        without them, and from then on: not every compatible server has either (llama.cpp builds without tool
        calling, gateways that check the body against an older schema), and the answer is read from plain text
        anyway. A refusal of the plain request is the error."""
        url = f"{self.base_url}/chat/completions"
        response = self._http().post(url, json=self.request(messages, plain=self._plain))
        if response.status_code in REFUSED and not self._plain and (self.tools or self.json_mode):
            self._plain = True
            response = self._http().post(url, json=self.request(messages, plain=True))
        if response.status_code >= 400:
            raise EndpointError(response)
        try:
            return as_message(response.json())
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"the endpoint's answer is not a chat completion: {response.text[:200]!r}") from exc

    def _http(self) -> httpx.Client:
        """The connection pool, made on first use (its TLS set-up is not free) and shared by later calls."""
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=httpx.Timeout(self.timeout_s), headers=self.headers)
            return self._client


def _strict(tool: dict[str, Any]) -> dict[str, Any]:
    return {**tool, "function": {**tool["function"], "strict": True}}


def as_message(completion: dict[str, Any]) -> AIMessage:
    """An OpenAI chat.completion as langchain's AIMessage: text, tool calls, usage and finish reason."""
    choice = completion["choices"][0]
    message = choice["message"]
    calls, invalid = [], []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            args = json.loads(function.get("arguments") or "{}")
        except ValueError:
            args = None
        if isinstance(args, dict):
            calls.append({"name": function.get("name", ""), "args": args, "id": call.get("id"), "type": "tool_call"})
        else:
            invalid.append(
                {
                    "name": function.get("name"),
                    "args": function.get("arguments"),
                    "id": call.get("id"),
                    "error": "arguments are not a JSON object",
                    "type": "invalid_tool_call",
                }
            )
    usage = completion.get("usage") or {}
    metadata: UsageMetadata | None = None
    if usage.get("prompt_tokens") is not None or usage.get("completion_tokens") is not None:
        tokens_in, tokens_out = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        metadata = {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}
    return AIMessage(
        content=message.get("content") or "",
        tool_calls=calls,
        invalid_tool_calls=invalid,
        usage_metadata=metadata,
        response_metadata={"finish_reason": choice.get("finish_reason"), "model_name": completion.get("model")},
        id=completion.get("id"),
    )

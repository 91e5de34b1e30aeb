"""A scripted chat model for tests that need no HTTP at all, and builders for the SDK errors it can raise.

langchain-core's GenericFakeChatModel replays replies but cannot raise, records nothing, reports no usage and
has no bind_tools; ScriptedChatModel adds those four things so the agent loop can be tested end to end:

    model = fake_chat(['{"failure_class": "xid"}', rate_limit_error(retry_after="1"), "second reply"])
    ...
    assert model.sent[0][0].content.startswith("You are")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import openai
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

try:  # openai 3.x ships its own fork of httpx; its exceptions want that fork's Response
    import httpx2 as _http
except ImportError:  # pragma: no cover - openai 1.x/2.x
    import httpx as _http  # type: ignore[no-redef]

FAKE_URL = "http://127.0.0.1/v1/chat/completions"


class ScriptExhausted(AssertionError):
    """The test called the model more often than it scripted replies for."""


def _tokens(text: str) -> int:
    return -(-len(text) // 4)


class ScriptedChatModel(GenericFakeChatModel):
    """Replays `script` in order: a str or AIMessage is returned, an exception is raised."""

    messages: Any = Field(default_factory=lambda: iter(()))  # GenericFakeChatModel's field, unused here
    script: list[Any] = Field(default_factory=list)
    sent: list[list[BaseMessage]] = Field(default_factory=list)
    call_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    bound_tools: list[Any] = Field(default_factory=list)
    bound_kwargs: dict[str, Any] = Field(default_factory=dict)

    @property
    def calls(self) -> int:
        return len(self.sent)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.sent.append(list(messages))
        self.call_kwargs.append(dict(kwargs))
        if not self.script:
            raise ScriptExhausted(
                f"ScriptedChatModel: script exhausted after {self.calls - 1} call(s); "
                "script more replies in fake_chat([...])"
            )
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        reply = AIMessage(content=step) if isinstance(step, str) else step
        if reply.usage_metadata is None:
            tokens_in = _tokens("".join(str(m.content) for m in messages))
            tokens_out = _tokens(str(reply.content))
            reply = reply.model_copy(
                update={
                    "usage_metadata": {
                        "input_tokens": tokens_in,
                        "output_tokens": tokens_out,
                        "total_tokens": tokens_in + tokens_out,
                    }
                }
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        """Record the tools and return self, so code that binds tools still drives the same script."""
        self.bound_tools.extend(tools)
        self.bound_kwargs.update(kwargs)
        return self

    def bind(self, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        self.bound_kwargs.update(kwargs)
        return self

    @property
    def _llm_type(self) -> str:
        return "crashcart-scripted-chat"


def _response(status: int, headers: dict[str, str] | None = None) -> Any:
    return _http.Response(status, headers=headers or {}, request=_http.Request("POST", FAKE_URL))


def rate_limit_error(retry_after: str | None = None, message: str = "Rate limit reached") -> openai.RateLimitError:
    """An openai.RateLimitError as the SDK raises it, optionally carrying a Retry-After header."""
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return openai.RateLimitError(message, response=_response(429, headers), body={"message": message})


def server_error(status: int = 500, message: str = "upstream exploded") -> openai.InternalServerError:
    return openai.InternalServerError(message, response=_response(status), body={"message": message})


def bad_request_error(message: str = "invalid request") -> openai.BadRequestError:
    return openai.BadRequestError(message, response=_response(400), body={"message": message})


def timeout_error() -> openai.APITimeoutError:
    return openai.APITimeoutError(request=_http.Request("POST", FAKE_URL))

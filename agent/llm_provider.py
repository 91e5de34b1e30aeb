"""Which LLM to talk to, how to build it, and how to call it without one bad minute ending a diagnosis.

A model is named by a spec, `provider:model`:

    openai:gpt-4.1-mini              OpenAI itself; key from $OPENAI_API_KEY (or api_key_env)
    openai:NAME + base_url           any OpenAI-compatible server: vLLM, llama.cpp server, LM Studio, a gateway
    ollama:llama3.1:8b               Ollama's OpenAI-compatible endpoint (default http://localhost:11434/v1)
    vllm:NAME / llamacpp:NAME        OpenAI-compatible, base_url required
    anthropic:claude-..., ...        anything else goes to langchain's init_chat_model (integration package needed)

OpenAI-compatible endpoints are spoken to by `openai_compat.OpenAICompatibleChat` (its docstring says why not
through the openai SDK); other providers are langchain chat models.
There is one retry policy, ours (`invoke_with_retry`): the SDKs' own retries are switched off so a rate limit
is not retried 3 x 5 times behind our back, and so tests can drive every delay through an injected `sleep`.
A `Deadline` bounds a whole diagnosis (every sample, attempt and backoff sleep): httpx has no total timeout, and
a server that trickles a byte now and then resets its read timeout forever, so a call is waited for in a thread
at most until the deadline and then abandoned.
With $CRASHCART_LOCAL_MODELS_ONLY=1 `make_chat_model` refuses any endpoint that is not this machine; the test
suite sets it for every test, so no test can reach a real LLM.
"""

from __future__ import annotations

import contextvars
import email.utils
import importlib
import math
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlsplit

from pydantic import Field

from crashcart.knowledge.errors import InputError
from crashcart.knowledge.records import Strict

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.messages.ai import UsageMetadata

    from crashcart.agent.openai_compat import OpenAICompatibleChat

OPENAI_COMPATIBLE = ("openai", "ollama", "vllm", "llamacpp")
OPENAI_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
LOCAL_ONLY_ENV = "CRASHCART_LOCAL_MODELS_ONLY"
BACKOFF_CAP_S = 30.0
MAX_RETRY_AFTER_S = 60.0  # a server asking for longer means a quota, not a blip: give up instead of hanging
REFUSED_RETRIES = 1  # nothing listening rarely starts listening within seconds: one retry, not the backoff ladder
SPEC_EXAMPLE = "openai:gpt-4.1-mini, ollama:llama3.1:8b or vllm:Qwen/Qwen2.5-7B-Instruct"

ErrorKind = Literal["rate_limit", "timeout", "server", "client", "length"]
# Named, not imported: openai 3.x moved to httpx2, and neither SDK is needed until a call fails.
_TIMEOUT_TYPES = (("openai", "APITimeoutError"), ("httpx", "TimeoutException"), ("httpx2", "TimeoutException"))
_CONNECTION_TYPES = (("openai", "APIConnectionError"), ("httpx", "TransportError"), ("httpx2", "TransportError"))


class LLMSettings(Strict):
    """Everything needed to build and call one model; read from the environment by `from_env`."""

    model: str = Field(description="provider:model spec, e.g. openai:gpt-4.1-mini")
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = Field(60, gt=0)
    max_retries: int = Field(4, ge=0)
    backoff_s: float = Field(1.0, ge=0)
    temperature: float = 0.2
    max_output_tokens: int = Field(1500, gt=0)
    price_in_per_1k: float | None = Field(None, ge=0)
    price_out_per_1k: float | None = Field(None, ge=0)
    json_mode: bool = True

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMSettings:
        """$CRASHCART_LLM, $CRASHCART_LLM_BASE_URL, $CRASHCART_LLM_API_KEY_ENV; overrides that are None are unset.

        None-valued overrides are dropped so a CLI can pass its optional flags straight through without masking
        what the environment says.
        """
        values: dict[str, Any] = {}
        for env, key in (
            ("CRASHCART_LLM", "model"),
            ("CRASHCART_LLM_BASE_URL", "base_url"),
            ("CRASHCART_LLM_API_KEY_ENV", "api_key_env"),
        ):
            if os.environ.get(env, "").strip():
                values[key] = os.environ[env].strip()
        values.update({k: v for k, v in overrides.items() if v is not None})
        if not values.get("model"):
            raise InputError(f"no LLM chosen: set CRASHCART_LLM to a provider:model spec, e.g. {SPEC_EXAMPLE}")
        parse_spec(values["model"])  # fail on a bad spec here, with the spec's own message
        return cls(**values)


class ChatModel(Protocol):
    """What the agent loop asks of a model: langchain's chat models and OpenAICompatibleChat are both one.

    `bind_tools`, where a model has it, is looked up, not required: not every langchain provider calls tools.
    """

    def invoke(self, input: Any, /) -> Any: ...


class ModelSpec(Strict):
    """A parsed `provider:model` spec; the model part may itself contain colons (ollama tags)."""

    provider: str
    name: str


class LLMCallError(Exception):
    """A model call that failed for good; the agent loop catches it and falls back to the rules' answer.

    Deliberately not a CrashcartError: it is not a user mistake to report and exit on, but an expected outcome
    the loop absorbs.
    """

    def __init__(
        self,
        *,
        kind: ErrorKind,
        attempts: int,
        message: str,
        status: int | None = None,
        tokens: tuple[int, int] = (0, 0),
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.attempts = attempts
        self.message = message
        self.status = status
        self.tokens = tokens  # (input, output) the provider billed for the failed call, when it says so


def parse_spec(spec: str) -> ModelSpec:
    """Split `provider:model`, normalising the provider the way init_chat_model does (lower case, - to _)."""
    provider, sep, name = spec.strip().partition(":")
    if not sep or not provider.strip() or not name.strip():
        raise InputError(f"LLM spec {spec!r} is not provider:model; write it like {SPEC_EXAMPLE} (set CRASHCART_LLM)")
    return ModelSpec(provider=provider.strip().lower().replace("-", "_"), name=name.strip())


# -- building a model ------------------------------------------------------------------------------------------


def make_chat_model(settings: LLMSettings) -> ChatModel:
    """Build the chat model a spec names, with our timeout and no SDK retries. See the module docstring."""
    spec = parse_spec(settings.model)
    if spec.provider in OPENAI_COMPATIBLE:
        return _openai_compatible(spec, settings)
    return _other_provider(spec, settings)


def _is_local(url: str | None) -> bool:
    return bool(url) and (urlsplit(str(url)).hostname or "").lower() in LOCAL_HOSTS


def local_models_only() -> bool:
    """$CRASHCART_LOCAL_MODELS_ONLY is 1/true/yes: only endpoints on this machine (the test suite sets it)."""
    return os.environ.get(LOCAL_ONLY_ENV, "").strip().lower() in ("1", "true", "yes")


def _guard(endpoint: str | None, spec: str) -> None:
    """With $CRASHCART_LOCAL_MODELS_ONLY set, refuse any endpoint that is not this machine (style item 11)."""
    if local_models_only() and not _is_local(endpoint):
        raise InputError(
            f"{spec} would call {endpoint or 'its provider'}, not this machine, and "
            f"{LOCAL_ONLY_ENV} is set: use a model on 127.0.0.1/localhost or unset {LOCAL_ONLY_ENV}"
        )


def _openai_compatible(spec: ModelSpec, settings: LLMSettings) -> OpenAICompatibleChat:
    base_url = settings.base_url or (OLLAMA_BASE_URL if spec.provider == "ollama" else None)
    if base_url is None and spec.provider in ("vllm", "llamacpp"):
        raise InputError(
            f"{spec.provider}:{spec.name} needs the server's URL: set CRASHCART_LLM_BASE_URL "
            "(e.g. http://localhost:8000/v1)"
        )
    key = os.environ.get(settings.api_key_env, "").strip()
    if not key and base_url is None:
        raise InputError(
            f"openai:{spec.name} needs an API key: set {settings.api_key_env} (or point "
            "CRASHCART_LLM_BASE_URL at an OpenAI-compatible server)"
        )
    endpoint = base_url or os.environ.get("OPENAI_BASE_URL", "").strip() or OPENAI_BASE_URL
    _guard(endpoint, settings.model)
    from crashcart.agent.openai_compat import OpenAICompatibleChat  # httpx and messages: only when a model is asked

    return OpenAICompatibleChat(
        model=spec.name,
        base_url=endpoint,
        api_key=key or "not-needed",
        timeout_s=settings.timeout_s,
        temperature=settings.temperature,
        max_tokens=settings.max_output_tokens,
        json_mode=settings.json_mode,
        send_max_tokens=base_url is not None,
        headers=_openai_headers() if endpoint == OPENAI_BASE_URL else None,
    )


def _openai_headers() -> dict[str, str]:
    """OpenAI's organisation and project headers, from the variables its SDK reads."""
    pairs = (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project"))
    return {header: os.environ[env].strip() for env, header in pairs if os.environ.get(env, "").strip()}


def _other_provider(spec: ModelSpec, settings: LLMSettings) -> ChatModel:
    try:
        from langchain.chat_models import base as chat_base
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        raise InputError(f"{settings.model} needs langchain: pip install langchain") from exc

    providers: dict[str, tuple[str, ...]] = getattr(chat_base, "_BUILTIN_PROVIDERS", {})
    if providers and spec.provider not in providers:
        known = ", ".join(sorted({*OPENAI_COMPATIBLE, *providers}))
        raise InputError(f"unknown LLM provider {spec.provider!r} in {settings.model!r}; known: {known}")
    if spec.provider in providers:
        module = providers[spec.provider][0]
        try:
            importlib.import_module(module)
        except ImportError as exc:
            package = module.split(".")[0].replace("_", "-")
            raise InputError(f"{settings.model} needs the {package} package: pip install {package}") from exc
    _guard(settings.base_url, settings.model)
    kwargs: dict[str, Any] = {
        "temperature": settings.temperature,
        "max_tokens": settings.max_output_tokens,
        "timeout": settings.timeout_s,
        "max_retries": 0,
    }
    if settings.base_url:
        kwargs["base_url"] = settings.base_url
    if settings.api_key_env != "OPENAI_API_KEY" and os.environ.get(settings.api_key_env):
        kwargs["api_key"] = os.environ[settings.api_key_env]  # otherwise the integration reads its own variable
    try:
        return init_chat_model(spec.name, model_provider=spec.provider, **kwargs)
    except ImportError as exc:
        raise InputError(f"{settings.model}: {exc}") from exc


# -- calling it ------------------------------------------------------------------------------------------------


class Deadline:
    """The one clock a whole diagnosis spends from: every sample, attempt and backoff sleep (--llm-timeout)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._ends = clock() + seconds

    def left(self) -> float:
        return max(0.0, self._ends - self._clock())

    @property
    def passed(self) -> bool:
        return self.left() <= 0.0


class DeadlineExceeded(TimeoutError):
    """The diagnosis's deadline passed while a call was still waiting for its reply."""


def _invoke_within(model: ChatModel, messages: list[BaseMessage], seconds: float) -> Any:
    """`model.invoke(messages)` in a daemon thread, waited for at most `seconds`, then abandoned.

    Waiting is the only bound a trickling server cannot defeat. The abandoned thread ends when its connection
    does (its read timeout, capped at the deadline, or the server closing) and, being a daemon, never holds up
    the exit; a ThreadPoolExecutor's would, since its workers are joined at exit.
    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["reply"] = model.invoke(messages)
        except BaseException as exc:  # handed to the caller's thread, which classifies it
            box["error"] = exc
        finally:
            done.set()

    context = contextvars.copy_context()  # callbacks and tracing see the caller's context
    threading.Thread(target=context.run, args=(run,), name="crashcart-llm-call", daemon=True).start()
    if not done.wait(seconds):
        raise DeadlineExceeded(f"no reply within the {seconds:.1f}s left")
    if "error" in box:
        raise box["error"]
    return box["reply"]


def invoke_with_retry(
    model: ChatModel,
    messages: Sequence[BaseMessage],
    settings: LLMSettings,
    *,
    deadline: Deadline | None = None,
    on_attempt: Callable[[], None] = lambda: None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    rng: random.Random | None = None,
) -> AIMessage:
    """`model.invoke(messages)`, retrying rate limits, timeouts and 5xx with backoff; LLMCallError when done.

    Backoff is exponential with full jitter (uniform in [0, min(30 s, backoff_s * 2**retry)]), so parallel
    diagnoses hitting one rate limit do not retry in lockstep; a Retry-After header replaces the guess. Client
    errors (400, 401, 404 ...) are not retried: the same request fails the same way. Errors that are not
    about the call at all (a bug) propagate unchanged. A reply without usage gets an estimate so the caller's
    token budget still moves. With a `deadline`, no attempt waits and no backoff sleeps past it; `on_attempt`
    is told of every attempt, so the caller counts HTTP requests, not answers.
    """
    from langchain_core.messages import AIMessage

    rng = rng or random.Random()
    started = clock()
    attempts = 0
    while True:
        if deadline is not None and deadline.passed:
            raise _out_of_time(deadline, attempts, clock() - started)
        attempts += 1
        on_attempt()
        try:
            reply = _invoke_within(model, list(messages), deadline.left()) if deadline else model.invoke(list(messages))
        except Exception as exc:
            kind, retryable, status = classify_error(exc)
            if kind is None:
                raise
            wait = _delay(exc, settings, attempts - 1, rng) if retryable else None
            late = deadline is not None and wait is not None and wait >= deadline.left()
            retries = min(settings.max_retries, REFUSED_RETRIES) if _refused(exc) else settings.max_retries
            if wait is None or attempts > retries or late:
                why = _why_stopped(exc, retryable, wait, deadline if late else None)
                raise LLMCallError(
                    kind=kind,
                    attempts=attempts,
                    status=status,
                    tokens=_billed(exc),
                    message=_describe(exc, kind, attempts, clock() - started, why),
                ) from exc
            sleep(wait)
            continue
        if not isinstance(reply, AIMessage):
            raise TypeError(f"invoke_with_retry expects a chat model returning AIMessage, got {type(reply).__name__}")
        if not reply.usage_metadata:
            reply.usage_metadata = _estimated_usage(messages, reply)
        return reply


def classify_error(exc: BaseException) -> tuple[ErrorKind | None, bool, int | None]:
    """(kind, retryable, HTTP status) for an exception from a model call; kind None means 'not an LLM error'.

    Works from the openai SDK's classes (also what langchain-openai raises: its errors subclass them), the
    provider-neutral langchain-core ModelError family, any exception carrying an HTTP status_code (other
    providers' SDKs), and raw httpx / builtin timeouts and connection errors.
    """
    status = _status_of(exc)
    if _is_instance(exc, "openai", "LengthFinishReasonError"):  # the reply hit max tokens: retrying repeats it
        return "length", False, status
    if _is_instance(exc, "openai", "ContentFilterFinishReasonError"):
        return "client", False, status
    if _is_timeout(exc) or status == 408:
        return "timeout", True, status
    if status == 429 or _is_instance(exc, "openai", "RateLimitError") or _is_model_error(exc, "ModelRateLimitError"):
        return "rate_limit", not _quota_exhausted(exc), status
    if status is not None and (status >= 500 or status == 409):
        return "server", True, status
    if status is not None and 400 <= status < 500:
        return "client", False, status
    if _is_connection(exc):
        return "server", True, status
    if _is_model_error(exc, "ModelError"):  # langchain-core's provider-neutral family says itself
        retryable = bool(getattr(exc, "is_retryable", False))
        return ("server" if retryable else "client"), retryable, status
    return None, False, status


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def _is_instance(exc: BaseException, module: str, name: str) -> bool:
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return False
    return isinstance(exc, cls)


def _is_model_error(exc: BaseException, name: str) -> bool:
    return _is_instance(exc, "langchain_core.exceptions", name)


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, TimeoutError) or _is_model_error(exc, "ModelTimeoutError"):
        return True
    return any(_is_instance(exc, mod, name) for mod, name in _TIMEOUT_TYPES)


def _is_connection(exc: BaseException) -> bool:
    if isinstance(exc, ConnectionError) or _is_model_error(exc, "ModelConnectionError"):
        return True
    return any(_is_instance(exc, mod, name) for mod, name in _CONNECTION_TYPES)


def _refused(exc: BaseException) -> bool:
    """Whether the endpoint refused the connection (somewhere in the SDK's chain of wrapped causes)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ConnectionRefusedError):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _quota_exhausted(exc: BaseException) -> bool:
    """OpenAI answers 429 insufficient_quota when billing, not traffic, is the problem: waiting will not help."""
    return "insufficient_quota" in str(getattr(exc, "body", "") or "") + str(exc)


def retry_after_s(exc: BaseException, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms, retry-after as seconds or an HTTP date), or None."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) / scale
        except ValueError:
            when = email.utils.parsedate_to_datetime(raw) if name == "retry-after" else None
            if when is None:
                continue
            value = (when - now()).total_seconds()
        if math.isfinite(value):
            return max(0.0, value)
    return None


def _delay(exc: BaseException, settings: LLMSettings, retry: int, rng: random.Random) -> float | None:
    """The wait before retry number `retry` (0-based); None when the server asked for more than we will wait."""
    asked = _safe_retry_after(exc)
    if asked is not None:
        return None if asked > MAX_RETRY_AFTER_S else asked
    return rng.uniform(0.0, min(BACKOFF_CAP_S, settings.backoff_s * 2.0 ** min(retry, 32)))


def _safe_retry_after(exc: BaseException) -> float | None:
    try:
        return retry_after_s(exc)
    except (TypeError, ValueError):  # an unparseable date header: fall back to our own backoff
        return None


def _billed(exc: BaseException) -> tuple[int, int]:
    """Tokens a failed call still used: a reply cut at the length limit carries its completion's usage."""
    usage = getattr(getattr(exc, "completion", None), "usage", None)
    return (int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0))


def _out_of_time(deadline: Deadline, attempts: int, elapsed: float) -> LLMCallError:
    return LLMCallError(
        kind="timeout",
        attempts=attempts,
        message=f"LLM call timed out after {attempts} attempt(s) in {elapsed:.1f}s: {_over(deadline)} passed",
    )


def _over(deadline: Deadline) -> str:
    return f"the diagnosis's deadline of {deadline.seconds:g}s (--llm-timeout)"


def _why_stopped(exc: BaseException, retryable: bool, wait: float | None, deadline: Deadline | None = None) -> str:
    if isinstance(exc, DeadlineExceeded) and deadline is not None:
        return f"; {_over(deadline)} passed"
    if deadline is not None:
        return f"; no time left to retry within {_over(deadline)}"
    if _refused(exc):
        return "; nothing accepts connections there: is the model server running, and is CRASHCART_LLM_BASE_URL right?"
    if _quota_exhausted(exc):
        return "; the account is out of quota: check billing, or choose another model with CRASHCART_LLM"
    if _is_instance(exc, "openai", "LengthFinishReasonError"):
        return "; not retried: the same prompt runs out the same way (a larger model answers in fewer tokens)"
    if not retryable:
        return "; not retried: check the model name, CRASHCART_LLM_BASE_URL and the API key variable"
    if wait is None:
        return f"; the server asked to wait longer than {MAX_RETRY_AFTER_S:.0f}s"
    return ""


def _describe(exc: BaseException, kind: ErrorKind, attempts: int, elapsed: float, why: str) -> str:
    detail = str(getattr(exc, "message", "") or exc or type(exc).__name__).strip()
    detail = (detail.splitlines() or [type(exc).__name__])[0][:300].rstrip(".")
    what = {
        "rate_limit": "rate limited",
        "timeout": "timed out",
        "server": "hit a server or connection error",
        "client": "was rejected",
        "length": "ran out of output tokens (raise max_output_tokens)",
    }[kind]
    return f"LLM call {what} after {attempts} attempt(s) in {elapsed:.1f}s: {detail}{why}"


# -- tokens and money ------------------------------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """chars/4, rounded up: good enough for budgets, and needs no tokenizer download (tiktoken fetches its files)."""
    return -(-len(text) // 4)


def _estimated_usage(messages: Sequence[BaseMessage], reply: AIMessage) -> UsageMetadata:
    tokens_in = estimate_tokens("".join(str(m.content) for m in messages))
    tokens_out = estimate_tokens(str(reply.content))
    return {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}


def cost_usd(settings: LLMSettings, input_tokens: int, output_tokens: int) -> float | None:
    """Dollars at the configured per-1k prices; None when either price is unknown (a guess would mislead)."""
    if settings.price_in_per_1k is None or settings.price_out_per_1k is None:
        return None
    return round(input_tokens / 1000 * settings.price_in_per_1k + output_tokens / 1000 * settings.price_out_per_1k, 6)

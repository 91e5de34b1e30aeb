"""agent/llm_provider.py: specs, model construction, the local-only guard, retries over real HTTP, costs."""

from __future__ import annotations

import random
import socket
import sys
import time
import types
from datetime import UTC, datetime

import pytest
from fakes.chat import bad_request_error, rate_limit_error, server_error, timeout_error
from fakes.clock import FakeClock
from fakes.openai_server import Delay, Fail, Reply, Silence, Trickle
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import ValidationError

from crashcart.agent.llm_provider import (
    REFUSED_RETRIES,
    Deadline,
    LLMCallError,
    LLMSettings,
    classify_error,
    cost_usd,
    estimate_tokens,
    invoke_with_retry,
    make_chat_model,
    parse_spec,
    retry_after_s,
)
from crashcart.knowledge.errors import InputError

MESSAGES = [SystemMessage("Reply with a JSON object."), HumanMessage("node07: Xid 79, GPU has fallen off the bus")]


class TopOfRange(random.Random):
    """Full jitter made predictable: always the top of the range, so delays are the exponential schedule."""

    def uniform(self, a: float, b: float) -> float:
        return b


def call(model, settings: LLMSettings) -> tuple[object, list[float]]:
    slept: list[float] = []
    return invoke_with_retry(model, MESSAGES, settings, sleep=slept.append, rng=TopOfRange()), slept


def local(openai_server, **kw) -> LLMSettings:
    return LLMSettings(model="openai:fake-model", base_url=openai_server.base_url, **kw)


# -- specs and settings ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "provider", "name"),
    [
        ("openai:gpt-4.1-mini", "openai", "gpt-4.1-mini"),
        ("ollama:llama3.1:8b", "ollama", "llama3.1:8b"),  # the tag's colon stays in the name
        ("vllm:Qwen/Qwen2.5-7B-Instruct", "vllm", "Qwen/Qwen2.5-7B-Instruct"),
        ("llamacpp:qwen2.5-7b-q4", "llamacpp", "qwen2.5-7b-q4"),
        ("Google-GenAI:gemini-2.5-flash", "google_genai", "gemini-2.5-flash"),
        (" anthropic:claude-sonnet-4-5 ", "anthropic", "claude-sonnet-4-5"),
    ],
)
def test_parse_spec_forms(spec: str, provider: str, name: str) -> None:
    parsed = parse_spec(spec)
    assert (parsed.provider, parsed.name) == (provider, name)


@pytest.mark.parametrize("spec", ["gpt-4.1", ":gpt-4.1", "openai:", "openai: ", ""])
def test_parse_spec_rejects_what_is_not_provider_model(spec: str) -> None:
    with pytest.raises(InputError, match=r"is not provider:model; write it like openai:.*CRASHCART_LLM"):
        parse_spec(spec)


def test_from_env_reads_the_three_variables_and_overrides_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRASHCART_LLM", "vllm:qwen")
    monkeypatch.setenv("CRASHCART_LLM_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("CRASHCART_LLM_API_KEY_ENV", "VLLM_KEY")
    s = LLMSettings.from_env()
    assert (s.model, s.base_url, s.api_key_env) == ("vllm:qwen", "http://127.0.0.1:8000/v1", "VLLM_KEY")
    s = LLMSettings.from_env(model="ollama:llama3.1", base_url=None, timeout_s=5)  # None leaves the env's value
    assert (s.model, s.base_url, s.timeout_s) == ("ollama:llama3.1", "http://127.0.0.1:8000/v1", 5)


def test_from_env_without_a_model_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRASHCART_LLM", raising=False)
    with pytest.raises(InputError, match="no LLM chosen: set CRASHCART_LLM to a provider:model spec"):
        LLMSettings.from_env()
    monkeypatch.setenv("CRASHCART_LLM", "gpt-4.1")
    with pytest.raises(InputError, match="'gpt-4.1' is not provider:model"):
        LLMSettings.from_env()


def test_settings_are_strict() -> None:
    with pytest.raises(ValidationError, match="extra"):
        LLMSettings(model="openai:x", temprature=0.1)
    with pytest.raises(ValidationError, match="timeout_s"):
        LLMSettings(model="openai:x", timeout_s=0)
    assert LLMSettings(model="openai:x").max_retries == 4


# -- building models, and the guard ----------------------------------------------------------------------------


def test_openai_without_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_OPENAI_KEY", raising=False)
    with pytest.raises(InputError, match="openai:gpt-4.1 needs an API key: set MY_OPENAI_KEY"):
        make_chat_model(LLMSettings(model="openai:gpt-4.1", api_key_env="MY_OPENAI_KEY"))


def test_local_only_refuses_the_real_openai_in_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-not-a-key")
    with pytest.raises(InputError) as err:
        make_chat_model(LLMSettings(model="openai:gpt-4.1"))
    assert str(err.value) == (
        "openai:gpt-4.1 would call https://api.openai.com/v1, not this machine, and "
        "CRASHCART_LOCAL_MODELS_ONLY is set: use a model on 127.0.0.1/localhost or unset "
        "CRASHCART_LOCAL_MODELS_ONLY"
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://gpu-box:8000/v1",
        "https://api.together.xyz/v1",
        "http://10.0.0.7:8080/v1",
        "http://localhost.example.com/v1",
    ],
)
@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_local_only_refuses_any_remote_compatible_server(monkeypatch: pytest.MonkeyPatch, url: str, value: str) -> None:
    monkeypatch.setenv("CRASHCART_LOCAL_MODELS_ONLY", value)
    with pytest.raises(InputError, match=f"would call {url}, not this machine, and CRASHCART_LOCAL_MODELS_ONLY"):
        make_chat_model(LLMSettings(model="vllm:qwen", base_url=url))


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/v1", "http://localhost:9/v1", "http://[::1]:9/v1"])
def test_local_only_allows_this_machine(url: str) -> None:
    assert make_chat_model(LLMSettings(model="vllm:qwen", base_url=url)).base_url == url


@pytest.fixture()
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection or name lookup fails the test: building a model must not touch the network."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network call while building a model: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize("value", [None, "", "0", "no"])
def test_without_local_only_a_remote_model_is_built_without_calling_it(
    monkeypatch: pytest.MonkeyPatch, no_network, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("CRASHCART_LOCAL_MODELS_ONLY")
    else:
        monkeypatch.setenv("CRASHCART_LOCAL_MODELS_ONLY", value)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-not-a-key")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-dummy")
    openai = make_chat_model(LLMSettings(model="openai:gpt-4.1"))
    assert openai.base_url == "https://api.openai.com/v1"
    assert openai.headers == {"Authorization": "Bearer sk-dummy-not-a-key", "OpenAI-Organization": "org-dummy"}
    remote = make_chat_model(LLMSettings(model="vllm:qwen", base_url="http://gpu-box:8000/v1"))
    assert remote.base_url == "http://gpu-box:8000/v1" and "OpenAI-Organization" not in remote.headers


def test_local_only_checks_where_the_openai_variable_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_BASE_URL, which the openai SDK reads, redirects openai:NAME; the guard checks where it points."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-not-a-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example.com/v1")
    with pytest.raises(InputError, match="would call https://gateway.example.com/v1, not this machine"):
        make_chat_model(LLMSettings(model="openai:x"))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert make_chat_model(LLMSettings(model="openai:x")).base_url == "http://127.0.0.1:9/v1"


def test_local_openai_compatible_model_is_built_with_our_policy(openai_server) -> None:
    model = make_chat_model(local(openai_server, timeout_s=7, max_output_tokens=321, temperature=0.0))
    assert model.base_url == openai_server.base_url.rstrip("/")
    assert (model.timeout_s, model.max_tokens, model.temperature, model.json_mode) == (7, 321, 0.0, True)


def test_ollama_defaults_to_its_local_endpoint_and_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = make_chat_model(LLMSettings(model="ollama:llama3.1:8b"))
    assert model.base_url == "http://localhost:11434/v1"
    assert model.model == "llama3.1:8b"


@pytest.mark.parametrize("provider", ["vllm", "llamacpp"])
def test_vllm_and_llamacpp_need_a_base_url(provider: str) -> None:
    with pytest.raises(InputError, match=f"{provider}:m needs the server's URL: set CRASHCART_LLM_BASE_URL"):
        make_chat_model(LLMSettings(model=f"{provider}:m"))


def test_missing_integration_package_names_the_pip_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_anthropic", None)  # import now fails, installed or not
    with pytest.raises(
        InputError, match="anthropic:claude-x needs the langchain-anthropic package: pip install langchain-anthropic"
    ):
        make_chat_model(LLMSettings(model="anthropic:claude-x"))


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match=r"unknown LLM provider 'nosuch' in 'nosuch:m'; known: .*ollama.*openai"):
        make_chat_model(LLMSettings(model="nosuch:m"))


def test_other_providers_go_through_init_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain.chat_models import base as chat_base

    built: dict = {}

    class ChatAnthropic:
        def __init__(self, **kwargs) -> None:
            built.update(kwargs)

    monkeypatch.setitem(
        sys.modules,
        "langchain_anthropic",
        types.SimpleNamespace(ChatAnthropic=ChatAnthropic, __name__="langchain_anthropic"),
    )
    monkeypatch.setenv("MY_ANTHROPIC_KEY", "k-dummy")
    chat_base._get_chat_model_creator.cache_clear()
    try:
        with pytest.raises(InputError, match="anthropic:claude-x would call its provider, not this machine"):
            make_chat_model(LLMSettings(model="anthropic:claude-x"))  # no base_url: the provider's own cloud
        make_chat_model(
            LLMSettings(
                model="anthropic:claude-x", base_url="http://127.0.0.1:9", api_key_env="MY_ANTHROPIC_KEY", timeout_s=9
            )
        )
    finally:
        chat_base._get_chat_model_creator.cache_clear()  # do not leave the stand-in class cached
    assert built == {
        "model": "claude-x",
        "temperature": 0.2,
        "max_tokens": 1500,
        "timeout": 9,
        "max_retries": 0,
        "base_url": "http://127.0.0.1:9",
        "api_key": "k-dummy",
    }


# -- invoke_with_retry over real HTTP, through the OpenAI-compatible client ------------------------------------


def test_success_returns_the_reply_with_the_servers_usage(openai_server) -> None:
    openai_server.script([Reply('{"failure_class": "xid"}', prompt_tokens=120, completion_tokens=9)])
    reply, slept = call(make_chat_model(local(openai_server)), local(openai_server))
    assert reply.content == '{"failure_class": "xid"}'
    assert reply.usage_metadata["input_tokens"] == 120 and reply.usage_metadata["output_tokens"] == 9
    assert slept == [] and openai_server.calls == 1


def test_request_carries_model_messages_limits_and_json_mode(openai_server) -> None:
    openai_server.script(["{}", "{}"])
    settings = local(openai_server, max_output_tokens=256, temperature=0.1)
    call(make_chat_model(settings), settings)
    sent = openai_server.requests[0]
    assert sent["model"] == "fake-model"
    assert sent["messages"] == [
        {"role": "system", "content": "Reply with a JSON object."},
        {"role": "user", "content": "node07: Xid 79, GPU has fallen off the bus"},
    ]
    assert sent["response_format"] == {"type": "json_object"}
    assert (sent["max_completion_tokens"], sent["max_tokens"], sent["temperature"]) == (256, 256, 0.1)
    plain = local(openai_server, json_mode=False)
    call(make_chat_model(plain), plain)
    assert "response_format" not in openai_server.requests[1]


def test_429_then_success_honours_retry_after(openai_server) -> None:
    openai_server.script([Fail(429, retry_after="2"), Fail(429, retry_after="0.5"), "ok"])
    settings = local(openai_server, backoff_s=10)
    reply, slept = call(make_chat_model(settings), settings)
    assert reply.content == "ok" and slept == [2.0, 0.5] and openai_server.calls == 3


def test_429_forever_gives_up_with_rate_limit_after_max_retries_plus_one(openai_server) -> None:
    settings = local(openai_server, max_retries=3, backoff_s=0.5)
    openai_server.script([Fail(429, message="Rate limit reached for requests")] * 10)
    with pytest.raises(LLMCallError, match="rate limited after 4 attempt") as err:
        call(make_chat_model(settings), settings)
    assert (err.value.kind, err.value.attempts, err.value.status) == ("rate_limit", 4, 429)
    assert "Rate limit reached for requests" in str(err.value)
    assert openai_server.calls == 4


def test_backoff_is_exponential_with_full_jitter_and_capped() -> None:
    class Always429:
        def invoke(self, messages: list) -> None:
            raise rate_limit_error()

    slept: list[float] = []
    model = Always429()
    settings = LLMSettings(model="openai:x", max_retries=7, backoff_s=1.0)
    with pytest.raises(LLMCallError):
        invoke_with_retry(model, MESSAGES, settings, sleep=slept.append, rng=TopOfRange())
    assert slept == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    slept.clear()
    with pytest.raises(LLMCallError):
        invoke_with_retry(model, MESSAGES, settings, sleep=slept.append, rng=random.Random(7))
    assert all(0 <= s <= cap for s, cap in zip(slept, [1, 2, 4, 8, 16, 30, 30], strict=True)) and len(set(slept)) == 7


def test_500_is_retried(openai_server) -> None:
    openai_server.script([Fail(500), Fail(503), "recovered"])
    settings = local(openai_server, backoff_s=0.25)
    reply, slept = call(make_chat_model(settings), settings)
    assert reply.content == "recovered" and slept == [0.25, 0.5]


def test_400_is_not_retried(openai_server) -> None:
    """One attempt: the client asks once more without JSON mode (agent/openai_compat.py), and that refused too,
    the policy does not retry."""
    refused = Fail(400, message="model 'fake-model' does not support this request")
    openai_server.script([refused, refused, "never"])
    settings = local(openai_server)
    with pytest.raises(
        LLMCallError,
        match="was rejected after 1 attempt.*does not support this request.*not retried: check the model name",
    ) as err:
        call(make_chat_model(settings), settings)
    assert (err.value.kind, err.value.attempts, err.value.status) == ("client", 1, 400)
    assert openai_server.calls == 2


@pytest.mark.parametrize("status", [401, 404])
def test_auth_and_not_found_are_not_retried(openai_server, status: int) -> None:
    openai_server.script([Fail(status), "never"])
    with pytest.raises(LLMCallError) as err:
        call(make_chat_model(local(openai_server)), local(openai_server))
    assert (err.value.kind, err.value.attempts, err.value.status) == ("client", 1, status)


def test_timeout_is_retried_then_gives_up(openai_server) -> None:
    settings = local(openai_server, timeout_s=0.2, max_retries=1)
    openai_server.script([Delay(1.0), "in time"])
    reply, slept = call(make_chat_model(settings), settings)
    assert reply.content == "in time" and len(slept) == 1
    openai_server.script([Delay(1.0), Delay(1.0), "never reached"])
    with pytest.raises(LLMCallError, match="timed out after 2 attempt") as err:
        call(make_chat_model(settings), settings)
    assert (err.value.kind, err.value.attempts) == ("timeout", 2)


def test_insufficient_quota_and_long_retry_after_are_not_waited_for(openai_server) -> None:
    quota = {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}
    openai_server.script([Fail(429, body=quota), Fail(429, retry_after="3600"), "never"])
    settings = local(openai_server)
    with pytest.raises(LLMCallError, match="out of quota: check billing") as err:
        call(make_chat_model(settings), settings)
    assert err.value.attempts == 1
    with pytest.raises(LLMCallError, match="asked to wait longer than 60s") as err:
        call(make_chat_model(settings), settings)
    assert err.value.attempts == 1 and openai_server.calls == 2


def test_the_deadline_bounds_every_retry_and_backoff_sleep() -> None:
    class Always429:
        def invoke(self, messages: list) -> None:
            raise rate_limit_error()

    clock, attempts = FakeClock(), []
    settings = LLMSettings(model="openai:x", max_retries=20, backoff_s=1.0)
    with pytest.raises(LLMCallError, match=r"no time left to retry within the diagnosis's deadline of 10s") as err:
        invoke_with_retry(
            Always429(),
            MESSAGES,
            settings,
            deadline=Deadline(10.0, clock=clock),
            on_attempt=lambda: attempts.append(clock.now),
            sleep=clock.sleep,
            clock=clock,
            rng=TopOfRange(),
        )
    assert attempts == [0.0, 1.0, 3.0, 7.0]  # slept 1, 2, 4; the next wait (8 s) would pass the deadline
    assert err.value.attempts == len(attempts) and clock.now <= 10.0


def test_a_retry_after_past_the_deadline_is_not_waited_for(openai_server) -> None:
    openai_server.script([Fail(429, retry_after="5"), "never"])
    settings = local(openai_server)
    slept: list[float] = []
    with pytest.raises(LLMCallError, match="no time left to retry") as err:
        invoke_with_retry(make_chat_model(settings), MESSAGES, settings, deadline=Deadline(2.0), sleep=slept.append)
    assert slept == [] and err.value.attempts == 1 and openai_server.calls == 1


@pytest.mark.parametrize("hold", [Silence(), Trickle(every_s=0.05)], ids=["never-replies", "trickles"])
def test_a_server_that_holds_the_call_is_abandoned_at_the_deadline(openai_server, hold) -> None:
    settings = local(openai_server, timeout_s=60)  # a per-read timeout far beyond the deadline, as by default
    openai_server.script([hold, "never reached"])
    started = time.monotonic()
    with pytest.raises(
        LLMCallError, match=r"timed out after 1 attempt.*deadline of 1s \(--llm-timeout\) passed"
    ) as err:
        invoke_with_retry(make_chat_model(settings), MESSAGES, settings, deadline=Deadline(1.0))
    assert err.value.kind == "timeout" and openai_server.calls == 1
    assert time.monotonic() - started < 2.0  # the deadline, not 60 s of read timeout (or forever, trickling)


def test_exhausted_script_fails_loudly(openai_server) -> None:
    settings = local(openai_server, max_retries=0)
    with pytest.raises(LLMCallError, match="script exhausted after 0 step") as err:
        call(make_chat_model(settings), settings)
    assert err.value.kind == "server"


def test_connection_refused_is_a_server_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again on exit: nothing listens there
    settings = LLMSettings(model="openai:m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(LLMCallError) as err:
        call(make_chat_model(settings), settings)
    assert (err.value.kind, err.value.attempts) == ("server", 2)


def test_a_refused_connection_is_retried_once_not_up_the_backoff_ladder() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = LLMSettings(model="openai:m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=4, backoff_s=0)
    with pytest.raises(LLMCallError) as err:
        call(make_chat_model(settings), settings)
    assert err.value.attempts == 1 + REFUSED_RETRIES
    assert "is the model server running" in err.value.message


def test_fake_server_serves_models_and_both_paths(openai_server) -> None:
    import httpx

    openai_server.script(["a"])
    root = openai_server.base_url.removesuffix("/v1")
    assert httpx.get(f"{openai_server.base_url}/models").json()["data"][0]["id"] == "fake-model"
    done = httpx.post(f"{root}/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert done.json()["choices"][0]["message"]["content"] == "a" and done.json()["usage"]["total_tokens"] == 2


# -- the same with the scripted chat model: no network at all --------------------------------------------------


def test_fake_chat_retries_and_records(fake_chat) -> None:
    model = fake_chat([rate_limit_error(retry_after="1.5"), timeout_error(), server_error(502), '{"ok": true}'])
    settings = LLMSettings(model="openai:fake", backoff_s=0.1)
    reply, slept = call(model, settings)
    assert reply.content == '{"ok": true}' and slept == [1.5, 0.2, 0.4]
    assert model.calls == 4 and model.sent[0] == MESSAGES
    assert reply.usage_metadata["input_tokens"] == estimate_tokens("".join(m.content for m in MESSAGES))


def test_fake_chat_client_error_and_unknown_errors(fake_chat) -> None:
    settings = LLMSettings(model="openai:fake")
    with pytest.raises(LLMCallError) as err:
        call(fake_chat([bad_request_error("unknown parameter")]), settings)
    assert (err.value.kind, err.value.attempts, err.value.status) == ("client", 1, 400)
    with pytest.raises(ValueError, match="a bug, not a transport error"):
        call(fake_chat([ValueError("a bug, not a transport error")]), settings)


def test_fake_chat_binds_tools_to_itself(fake_chat) -> None:
    model = fake_chat(["x"])
    assert model.bind_tools([{"name": "grep"}], tool_choice="auto") is model and model.bind(stop=["\n"]) is model
    assert model.bound_tools == [{"name": "grep"}] and model.bound_kwargs == {"tool_choice": "auto", "stop": ["\n"]}
    with pytest.raises(AssertionError, match="script exhausted after 1 call"):
        model.invoke("a"), model.invoke("b")


def test_reply_without_usage_gets_an_estimate() -> None:
    reply, _ = call(GenericFakeChatModel(messages=iter(["12345678"])), LLMSettings(model="openai:x"))
    assert reply.usage_metadata["output_tokens"] == 2


@pytest.mark.parametrize(
    ("exc", "kind", "retryable"),
    [
        (TimeoutError("read"), "timeout", True),
        (ConnectionResetError("peer"), "server", True),
        (rate_limit_error(), "rate_limit", True),
        (server_error(504), "server", True),
        (bad_request_error(), "client", False),
        (KeyError("choices"), None, False),
    ],
)
def test_classify_error(exc: BaseException, kind: str | None, retryable: bool) -> None:
    assert classify_error(exc)[:2] == (kind, retryable)


def test_classify_error_knows_httpx_and_langchain_core_errors() -> None:
    import httpx
    from langchain_core.exceptions import ModelRateLimitError

    assert classify_error(httpx.ReadTimeout("slow"))[0] == "timeout"
    assert classify_error(httpx.ConnectError("refused"))[0] == "server"
    assert classify_error(ModelRateLimitError("slow down"))[:2] == ("rate_limit", True)


def test_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_s(rate_limit_error(retry_after="7")) == 7.0
    assert retry_after_s(rate_limit_error(retry_after="Thu, 01 Jan 2026 12:00:05 GMT"), now=lambda: now) == 5.0
    assert retry_after_s(rate_limit_error()) is None
    assert retry_after_s(TimeoutError()) is None


# -- tokens and cost -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "tokens"), [("", 0), ("abcd", 1), ("abcde", 2), ("x" * 4000, 1000)])
def test_estimate_tokens(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_cost_usd() -> None:
    priced = LLMSettings(model="openai:x", price_in_per_1k=0.5, price_out_per_1k=1.5)
    assert cost_usd(priced, 1000, 2000) == pytest.approx(3.5)
    assert cost_usd(LLMSettings(model="openai:x"), 1000, 2000) is None
    assert cost_usd(LLMSettings(model="openai:x", price_in_per_1k=0.5), 1000, 0) is None

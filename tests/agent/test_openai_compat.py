"""agent/openai_compat.py: the request it sends, the replies it reads, its errors, and what it costs to import."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.openai_server import Fail, Reply
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from crashcart.agent.llm_provider import LLMCallError, LLMSettings, classify_error, invoke_with_retry, make_chat_model
from crashcart.agent.openai_compat import EndpointError, OpenAICompatibleChat, as_message

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "xid79-job" / "logs"
MESSAGES = [SystemMessage("Reply with a JSON object."), HumanMessage("node07: Xid 79, GPU has fallen off the bus")]
TOOL = {
    "type": "function",
    "function": {"name": "search_logs", "description": "grep", "parameters": {"type": "object", "properties": {}}},
}


def chat(base_url: str, **kw) -> OpenAICompatibleChat:
    values = {
        "model": "fake-model",
        "base_url": base_url,
        "api_key": "sk-test-local-only",
        "timeout_s": 5.0,
        "temperature": 0.2,
        "max_tokens": 100,
        "json_mode": True,
        "send_max_tokens": True,
    }
    return OpenAICompatibleChat(**(values | kw))


def test_a_tool_conversation_goes_out_in_openais_shape_and_comes_back_as_messages(openai_server) -> None:
    openai_server.script(
        [Reply(tool_calls=[{"name": "search_logs", "arguments": {"pattern": "Xid"}}]), Reply('{"ok": 1}')]
    )
    model = chat(openai_server.base_url).bind_tools([TOOL], strict=True)
    first = model.invoke(MESSAGES)
    assert first.content == "" and [(c["name"], c["args"]) for c in first.tool_calls] == [
        ("search_logs", {"pattern": "Xid"})
    ]
    result = ToolMessage("[kernel.log:2] Xid 79", tool_call_id=str(first.tool_calls[0]["id"]))
    second = model.invoke([*MESSAGES, first, result])
    assert second.content == '{"ok": 1}' and second.response_metadata["finish_reason"] == "stop"
    sent = openai_server.requests[1]
    assert sent["tools"] == [{**TOOL, "function": {**TOOL["function"], "strict": True}}]
    assistant, tool = sent["messages"][2:]
    assert assistant["role"] == "assistant" and assistant["tool_calls"][0]["function"]["name"] == "search_logs"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"pattern": "Xid"}
    assert tool == {"role": "tool", "tool_call_id": first.tool_calls[0]["id"], "content": "[kernel.log:2] Xid 79"}


def test_binding_tools_leaves_the_unbound_model_as_it_was(openai_server) -> None:
    plain = chat(openai_server.base_url)
    bound = plain.bind_tools([TOOL])
    assert plain.tools == [] and bound.tools == [TOOL] and "tools" not in plain.request(MESSAGES)


def test_openai_itself_gets_max_completion_tokens_only(openai_server) -> None:
    """OpenAI refuses max_tokens for its reasoning models; compatible servers are sent both."""
    body = chat(openai_server.base_url, send_max_tokens=False, json_mode=False).request(MESSAGES)
    assert body["max_completion_tokens"] == 100 and "max_tokens" not in body and "response_format" not in body


def test_the_key_and_extra_headers_are_sent(openai_server) -> None:
    openai_server.script(["{}"])
    chat(openai_server.base_url, headers={"OpenAI-Project": "proj-x"}).invoke(MESSAGES)
    headers = {k.lower(): v for k, v in openai_server.log[-1].headers.items()}
    assert headers["authorization"] == "Bearer sk-test-local-only" and headers["openai-project"] == "proj-x"


def test_arguments_that_are_not_a_json_object_are_an_invalid_tool_call() -> None:
    completion = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [{"id": "c1", "function": {"name": "open_window", "arguments": "{not json"}}],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    reply = as_message(completion)
    assert reply.tool_calls == [] and reply.invalid_tool_calls[0]["name"] == "open_window"
    assert reply.usage_metadata is None  # no usage reported: the retry loop estimates it


def test_an_http_error_carries_status_retry_after_and_the_servers_message(openai_server) -> None:
    openai_server.script([Fail(429, retry_after="3", message="slow down please")])
    with pytest.raises(EndpointError) as err:
        chat(openai_server.base_url).invoke(MESSAGES)
    assert (err.value.status_code, err.value.message) == (429, "slow down please")
    assert err.value.response.headers["retry-after"] == "3"
    assert classify_error(err.value) == ("rate_limit", True, 429)


def test_a_server_that_refuses_tools_or_json_mode_is_asked_without_them_from_then_on(openai_server) -> None:
    openai_server.script([Fail(422, message="Extra inputs are not permitted: tools"), '{"ok": 1}', '{"ok": 2}'])
    model = chat(openai_server.base_url).bind_tools([TOOL])
    assert model.invoke(MESSAGES).content == '{"ok": 1}'
    assert model.invoke(MESSAGES).content == '{"ok": 2}'
    first, *plain = openai_server.requests
    assert "tools" in first and "response_format" in first
    assert all("tools" not in r and "response_format" not in r for r in plain) and len(plain) == 2


def test_a_refusal_of_the_plain_request_is_the_error(openai_server) -> None:
    openai_server.script([Fail(400, message="context too long"), Fail(400, message="context too long")])
    with pytest.raises(EndpointError, match="context too long"):
        chat(openai_server.base_url).invoke(MESSAGES)
    assert len(openai_server.requests) == 2
    openai_server.script([Fail(400, message="bad request")])
    with pytest.raises(EndpointError, match="bad request"):  # nothing optional to leave out: asked once
        chat(openai_server.base_url, json_mode=False).invoke(MESSAGES)
    assert len(openai_server.requests) == 3


def test_an_answer_that_is_not_a_completion_is_an_error_the_loop_survives(openai_server) -> None:
    openai_server.script([Fail(200, body={"unexpected": True})])
    settings = LLMSettings(model="openai:fake-model", base_url=openai_server.base_url)
    with pytest.raises(ValueError, match="not a chat completion"):
        chat(openai_server.base_url).invoke(MESSAGES)
    assert classify_error(ValueError("x"))[0] is None  # not a transport error: the agent loop's catch-all
    openai_server.script([Fail(500), "{}"])
    reply = invoke_with_retry(make_chat_model(settings), MESSAGES, settings, sleep=lambda s: None)
    assert isinstance(reply, AIMessage) and reply.content == "{}"


def test_a_refused_connection_is_named_in_the_fallback() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again on exit: nothing listens there
    settings = LLMSettings(model="openai:m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    with pytest.raises(LLMCallError, match="nothing accepts connections there"):
        invoke_with_retry(make_chat_model(settings), MESSAGES, settings)


def test_consulting_a_model_imports_neither_the_openai_sdk_nor_langchains_model_stack(tmp_path, openai_server) -> None:
    """What --llm costs a triage is mostly imports: these took 0.8 s and are not needed to ask an endpoint."""
    answer = {"failure_class": "gpu_hardware", "action": "drain_node_and_retry", "evidence": [], "rationale": "x"}
    openai_server.script([json.dumps(answer)] * 3)
    code = (
        "import sys\n"
        "from crashcart.cli import main\n"
        "sys.argv = ['crashcart', 'triage', sys.argv[1], '--no-memory', '--format', 'json', '--llm', 'openai:m',"
        " '--llm-base-url', sys.argv[2], '--llm-always', '-o', sys.argv[3]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "roots = ('openai', 'langchain_openai', 'langsmith')\n"
        "stack = ('langchain_core.language_models.chat_models', 'langchain_core.runnables.base',"
        " 'langchain_core.tracers')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in roots or m in stack))\n"
    )
    out = tmp_path / "report.json"
    run = subprocess.run(
        [sys.executable, "-c", code, str(EXAMPLE), openai_server.base_url, str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert openai_server.calls >= 1 and json.loads(out.read_text())["llm"]["calls"] >= 1
    assert run.stdout.strip() == "[]", run.stdout

"""Shared fixtures: where the labeled dev set lives (beside the repository, as in CI)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def dev_evalset() -> Path:
    """../shared/evalsets/dev, or $CRASHCART_DEV_EVALSET."""
    for cand in (os.environ.get("CRASHCART_DEV_EVALSET", ""), str(REPO.parent / "shared" / "evalsets" / "dev")):
        if cand and (Path(cand) / "labels.jsonl").is_file():
            return Path(cand)
    pytest.skip("dev eval set not found beside the repository (set CRASHCART_DEV_EVALSET)")


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the real console entry point in-process: (exit code, stdout, stderr)."""
    import sys

    from crashcart import cli

    monkeypatch.setattr(sys, "argv", ["crashcart", *args])
    monkeypatch.delenv("CRASHCART_DEBUG", raising=False)
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """`cli("triage", path, "--format", "json")` -> (exit code, stdout, stderr)."""
    return lambda *args: run_cli(monkeypatch, capsys, *args)


# -- LLM test doubles: no test may reach a real model (style item 11) ------------------------------------------

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests import `fakes.openai_server`, `fakes.chat`

# Variables that would send a test's traffic somewhere real: LangSmith tracing, a LangSmith gateway, or a
# base URL the openai SDK / langchain-openai pick up on their own.
_LLM_REDIRECT_ENV = ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING", "LANGSMITH_GATEWAY",
                     "OPENAI_BASE_URL", "OPENAI_API_BASE")


@pytest.fixture()
def openai_server(monkeypatch: pytest.MonkeyPatch):
    """A scripted OpenAI-compatible server on 127.0.0.1: `.base_url`, `.script([...])`, `.requests`, `.calls`.

    Steps are reply strings or fakes.openai_server.Reply / Fail(status, retry_after=...) / Delay(seconds).
    """
    from fakes.openai_server import FakeOpenAIServer

    for var in _LLM_REDIRECT_ENV:
        monkeypatch.delenv(var, raising=False)
    server = FakeOpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture()
def fake_chat(monkeypatch: pytest.MonkeyPatch):
    """`fake_chat(["reply", rate_limit_error(), "reply 2"])` -> a ScriptedChatModel (see fakes.chat)."""
    from fakes.chat import ScriptedChatModel

    for var in _LLM_REDIRECT_ENV:
        monkeypatch.delenv(var, raising=False)
    return lambda script: ScriptedChatModel(script=list(script))

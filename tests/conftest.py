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

# Tests import `fakes.openai_server`, `fakes.chat`, ... from tests/support: a folder holding nothing else, so
# no test folder (tests/agent, tests/prompts ...) can shadow the real package of the same name.
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

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


# -- Slack test double: the bot's WebClient talks to a local fake of the Web API ---------------------------------


@pytest.fixture()
def slack_api():
    """A fake Slack Web API on 127.0.0.1: `.base_url`, `.wait(method)`, `.of(method)`, `.add_file(...)`, `.groups`."""
    from fakes.slack_api import FakeSlackAPI

    server = FakeSlackAPI().start()
    yield server
    server.stop()


@pytest.fixture()
def bot_logs(tmp_path: Path) -> Path:
    """The bot's one log root (tmp_path/logs)."""
    root = tmp_path / "logs"
    root.mkdir()
    return root


@pytest.fixture()
def bot_config(tmp_path: Path, bot_logs: Path, slack_api):
    """A BotConfig aimed at the fake Slack API, with stores in tmp_path and small size limits."""
    from fakes.slack_api import BOT_TOKEN
    from fakes.slack_bot import SECRET

    from crashcart.bot.config import BotConfig

    return BotConfig(bot_token=BOT_TOKEN, signing_secret=SECRET, slack_api_url=slack_api.base_url,
                     log_roots=[bot_logs], rule_confirmers=["UALICE"], memory_path=tmp_path / "incidents.db",
                     rules_path=tmp_path / "rules.db", reports_dir=tmp_path / "reports", max_paste_bytes=4000,
                     max_upload_bytes=100_000, workers=1)


@pytest.fixture()
def make_bot(slack_api, bot_config):
    """`make_bot(chat_model=None, **config_overrides)` -> fakes.slack_bot.Bot around the real Bolt app."""
    from fakes.slack_bot import Bot

    from crashcart.bot.app import build_app

    def make(chat_model=None, **overrides) -> Bot:
        config = bot_config.model_copy(update=overrides)
        return Bot(app=build_app(config, chat_model=chat_model), api=slack_api, config=config)

    return make

"""Shared fixtures: every test isolated from the user's HOME and CRASHCART_* settings, the labeled dev set
(beside the repository, as in CI), the CLI, and the LLM and Slack test doubles."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Read at import, before `isolated_env` clears every CRASHCART_* variable: it configures the suite, not crashcart.
DEV_EVALSET_ENV = os.environ.get("CRASHCART_DEV_EVALSET", "")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--snapshot-update",
        action="store_true",
        help="rewrite the snapshot files (tests/crashcart/snapshots) from this run instead of comparing",
    )


# -- isolation: no test reads or writes the user's real state ---------------------------------------------------

XDG_DIRS = (
    ("XDG_DATA_HOME", "share"),
    ("XDG_CONFIG_HOME", "config"),
    ("XDG_CACHE_HOME", "cache"),
    ("XDG_STATE_HOME", "state"),
)


def isolate(patch: pytest.MonkeyPatch, home: Path) -> None:
    """HOME and the XDG folders under `home`; no CRASHCART_* from the outer shell; remote models refused.

    Subprocesses a test starts inherit all of it, as long as they build their environment from os.environ.
    """
    for var in [v for v in os.environ if v.startswith("CRASHCART_")]:
        patch.delenv(var)
    patch.setenv("HOME", str(home))
    for var, sub in XDG_DIRS:
        (home / sub).mkdir(parents=True, exist_ok=True)
        patch.setenv(var, str(home / sub))
    patch.setenv("CRASHCART_LOCAL_MODELS_ONLY", "1")  # make_chat_model refuses any endpoint off this machine


@pytest.fixture(scope="session", autouse=True)
def isolated_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The same isolation for module- and session-scoped fixtures, which run before any test's own."""
    with pytest.MonkeyPatch.context() as patch:
        isolate(patch, tmp_path_factory.mktemp("session-home"))
        yield


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh HOME per test (beside tmp_path, not in it, so a test's own folder holds only what it made)."""
    home = tmp_path_factory.mktemp("home")
    isolate(monkeypatch, home)
    return home


@pytest.fixture(scope="session")
def dev_evalset() -> Path:
    """../shared/evalsets/dev, or $CRASHCART_DEV_EVALSET."""
    for cand in (DEV_EVALSET_ENV, str(REPO.parent / "shared" / "evalsets" / "dev")):
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
# base URL crashcart and the openai SDK pick up on their own.
_LLM_REDIRECT_ENV = (
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
    "LANGCHAIN_TRACING",
    "LANGSMITH_GATEWAY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
)


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


# -- Slurm test double: stub sacct/scontrol first on PATH, replaying recorded output ----------------------------


@pytest.fixture()
def slurm_stubs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`slurm_stubs.stub("sacct", text_or_reply_or_routes)`, `.calls("sacct")` (see fakes.slurm); tmp_path/bin."""
    from fakes.slurm import SlurmStubs

    return SlurmStubs(tmp_path / "bin", monkeypatch)


# -- Notification receivers: a webhook on 127.0.0.1 that records what it is sent -------------------------------


@pytest.fixture()
def webhook():
    """A webhook receiver on 127.0.0.1: `.url("json", "/hook")`, `.base`, `.posts` (see fakes.webhook)."""
    from fakes.webhook import Receiver

    receiver = Receiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture()
def slack_webhook(webhook, monkeypatch: pytest.MonkeyPatch):
    """Apprise's Slack plugin posting to `webhook` instead of hooks.slack.com: Apprise takes no host in a slack://
    URL, so its endpoint is moved; the payload is the plugin's own. Returns a slack:// URL (Slack's docs' example
    tokens)."""
    from apprise.plugins.slack import NotifySlack

    monkeypatch.setattr(NotifySlack, "webhook_url", f"{webhook.base}/services")
    return "slack://T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"


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

    return BotConfig(
        bot_token=BOT_TOKEN,
        signing_secret=SECRET,
        slack_api_url=slack_api.base_url,
        log_roots=[bot_logs],
        rule_confirmers=["UALICE"],
        memory_path=tmp_path / "incidents.db",
        rules_path=tmp_path / "rules.db",
        reports_dir=tmp_path / "reports",
        max_paste_bytes=4000,
        max_upload_bytes=100_000,
        workers=1,
    )


@pytest.fixture()
def make_bot(slack_api, bot_config):
    """`make_bot(chat_model=None, **config_overrides)` -> fakes.slack_bot.Bot around the real Bolt app."""
    from fakes.slack_bot import Bot

    from crashcart.bot.app import build_app

    def make(chat_model=None, **overrides) -> Bot:
        config = bot_config.model_copy(update=overrides)
        return Bot(app=build_app(config, chat_model=chat_model), api=slack_api, config=config)

    return make

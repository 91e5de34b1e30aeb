"""`crashcart bot`: options map onto serve(config, mode, port); config errors are one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import crashcart.bot.run as run
from crashcart.cli_bot import bot
from crashcart.knowledge.errors import CrashcartError


@pytest.fixture()
def served(monkeypatch) -> list:
    calls: list = []
    monkeypatch.setattr(run, "serve", lambda config, mode, port, host: calls.append((config, mode, port, host)))
    for var in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(var, raising=False)
    return calls


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("bot")(bot)
    app.command("other")(lambda: None)  # two commands, so `bot` is a subcommand as in crashcart's CLI
    return app


def test_options(served: list, tmp_path: Path) -> None:
    path = tmp_path / "bot.yaml"
    path.write_text("bot_token: xoxb-1\nlog_roots: [/scratch]\n")
    result = CliRunner().invoke(_app(), ["bot", "--config", str(path), "--http", "--port", "8080"])
    assert result.exit_code == 0, result.output
    ((config, mode, port, host),) = served
    assert (config.secret("bot_token"), config.log_roots, mode, port) == ("xoxb-1", [Path("/scratch")], "http", 8080)
    assert host == "127.0.0.1"  # never every interface unless asked
    assert CliRunner().invoke(_app(), ["bot"]).exit_code == 0
    assert served[1][1:] == ("socket", 3000, "127.0.0.1")
    assert CliRunner().invoke(_app(), ["bot", "--http", "--host", "0.0.0.0"]).exit_code == 0
    assert served[2][3] == "0.0.0.0"


def test_a_bad_config_names_every_bad_field_and_the_file(served: list, tmp_path: Path) -> None:
    path = tmp_path / "bot.yaml"
    path.write_text("max_upload_bytes: -1\nlog_root: [/scratch]\nllm_timeout_s: soon\n")
    result = CliRunner().invoke(_app(), ["bot", "--config", str(path)])
    message = str(result.exception)
    assert isinstance(result.exception, CrashcartError) and str(path) in message and "\n" not in message
    for field in ("max_upload_bytes", "log_root: unknown setting", "llm_timeout_s"):
        assert field in message
    assert ".py" not in message and served == []


def test_a_missing_config_is_a_crashcart_error(served: list, tmp_path: Path) -> None:
    result = CliRunner().invoke(_app(), ["bot", "--config", str(tmp_path / "nope.yaml")])
    assert isinstance(result.exception, CrashcartError) and "check --config" in str(result.exception)
    assert served == []

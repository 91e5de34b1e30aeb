"""The bot's settings: YAML plus tokens from the environment, and errors that name the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.bot.config import load_config
from crashcart.knowledge.errors import CrashcartError

ENV = {"SLACK_BOT_TOKEN": "xoxb-env", "SLACK_APP_TOKEN": "xapp-env", "SLACK_SIGNING_SECRET": "env-secret"}


def test_tokens_come_from_the_environment_unless_the_file_sets_them(tmp_path: Path) -> None:
    path = tmp_path / "bot.yaml"
    path.write_text(
        "bot_token: xoxb-file\nlog_roots: [/scratch/logs]\nrule_confirmers: [U1, U2]\n"
        "rule_confirmer_group: S0OPS\nmax_paste_bytes: 1000\n"
    )
    config = load_config(path, env=ENV)
    assert config.secret("bot_token") == "xoxb-file" and config.secret("app_token") == "xapp-env"
    assert config.secret("signing_secret") == "env-secret"
    assert config.log_roots == [Path("/scratch/logs")] and config.rule_confirmers == ["U1", "U2"]
    assert (config.rule_confirmer_group, config.max_paste_bytes, config.max_upload_bytes) == ("S0OPS", 1000, 20_000_000)
    assert "xoxb-file" not in repr(config) and "env-secret" not in str(config.model_dump())
    config.require("socket")
    config.require("http")


def test_no_file_means_environment_and_defaults() -> None:
    config = load_config(None, env={"SLACK_BOT_TOKEN": " xoxb-env \n"})
    assert config.secret("bot_token") == "xoxb-env" and config.log_roots == [] and config.llm is None


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("socket", "the bot in socket mode needs SLACK_APP_TOKEN (or `app_token:` in bot.yaml)"),
        ("http", "the bot in http mode needs SLACK_SIGNING_SECRET (or `signing_secret:` in bot.yaml)"),
    ],
)
def test_missing_tokens_name_the_variable(mode: str, said: str) -> None:
    with pytest.raises(CrashcartError, match=said.replace("(", r"\(").replace(")", r"\)")):
        load_config(None, env={"SLACK_BOT_TOKEN": "xoxb-env"}).require(mode)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("log_root: /x\n", "invalid bot setting log_root: unknown setting"),
        ("max_upload_bytes: -1\n", "invalid bot setting max_upload_bytes: Input should be greater than 0"),
        ("- a\n- b\n", "must be a YAML mapping of bot settings"),
        ("a: [\n", "is not valid YAML"),
    ],
)
def test_bad_files_say_what_to_fix(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "bot.yaml"
    path.write_text(text)
    with pytest.raises(CrashcartError, match=said):
        load_config(path, env={})


def test_a_missing_file_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(CrashcartError, match=r"cannot read bot config .*nope.yaml: .*check --config"):
        load_config(tmp_path / "nope.yaml", env={})

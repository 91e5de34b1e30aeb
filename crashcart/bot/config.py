"""The bot's settings: Slack tokens (from the environment unless the file sets them), what it may read, its stores.

Tokens are secrets: they are held as SecretStr so they never show up in a repr, a log line or an error message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, SecretStr, ValidationError

from crashcart.knowledge.errors import CrashcartError
from crashcart.knowledge.records import Strict

Mode = Literal["socket", "http"]

TOKEN_ENV = {"bot_token": "SLACK_BOT_TOKEN", "app_token": "SLACK_APP_TOKEN", "signing_secret": "SLACK_SIGNING_SECRET"}
NEEDED = {"socket": ("bot_token", "app_token"), "http": ("bot_token", "signing_secret")}


class BotConfig(Strict):
    """Everything `crashcart bot` needs; every field can be set in bot.yaml under the same name."""

    bot_token: SecretStr | None = None  # xoxb-...; $SLACK_BOT_TOKEN
    app_token: SecretStr | None = None  # xapp-..., Socket Mode only; $SLACK_APP_TOKEN
    signing_secret: SecretStr | None = None  # HTTP mode only; $SLACK_SIGNING_SECRET
    slack_api_url: str = "https://slack.com/api/"  # uploads are downloaded only from this host (or its subdomains)
    log_roots: list[Path] = Field(default_factory=list)  # paths and Slurm jobs are read only under these
    rule_confirmers: list[str] = Field(default_factory=list)  # Slack user ids that may confirm or reject rules
    rule_confirmer_group: str | None = None  # a user group id (S...) whose members may too
    max_upload_bytes: int = Field(20_000_000, gt=0)
    max_paste_bytes: int = Field(200_000, gt=0)
    # Decompressed text read from each .gz/.zst file (a 20 MB zstd upload can hold 600 GB); past it, the report lists
    # the file as read only up to the limit.
    max_decompressed_bytes: int = Field(1_000_000_000, gt=0)
    memory_path: Path | None = None  # default: $CRASHCART_MEMORY or ~/.local/share/crashcart/incidents.db
    rules_path: Path | None = None  # default: $CRASHCART_RULES or ~/.local/share/crashcart/rules.db
    reports_dir: Path | None = None  # reports waiting for a button; default: beside the incident store
    llm: str | None = None  # provider:model, as `crashcart triage --llm`; off when unset
    llm_base_url: str | None = None
    llm_timeout_s: float = Field(30.0, gt=0, le=3600)  # the model's share of one ask, as `triage --llm-timeout`
    # Scan processes per ask, inside its triage process (crashcart/bot/work.py).
    workers: int = Field(1, ge=1)
    # What asks may cost: `max_concurrent_asks` run at once, each triage stopped after `max_triage_seconds`;
    # `max_waiting_asks` more wait for a turn and the rest are turned away. A path or a Slurm job reads at most
    # `max_read_bytes` (on disk) in at most `max_read_files` files, all its files together.
    max_concurrent_asks: int = Field(2, ge=1)
    max_waiting_asks: int = Field(8, ge=0)
    max_triage_seconds: float = Field(300, gt=0)
    max_read_bytes: int = Field(2_000_000_000, gt=0)
    max_read_files: int = Field(2000, ge=1)
    # Apprise URLs (json://, msteams://, slack://, mailto:// ...) that also get each diagnosis' short summary, as
    # `crashcart triage --notify`; secrets, as the tokens are (they often hold one).
    notify: list[SecretStr] = Field(default_factory=list)

    def secret(self, name: str) -> str | None:
        value = getattr(self, name)
        return value.get_secret_value() if value is not None else None

    def require(self, mode: Mode) -> None:
        """Refuse to start without the tokens `mode` needs, naming the variable or key to set."""
        missing = [name for name in NEEDED[mode] if not self.secret(name)]
        if missing:
            hints = ", ".join(f"{TOKEN_ENV[m]} (or `{m}:` in bot.yaml)" for m in missing)
            raise CrashcartError(f"the bot in {mode} mode needs {hints}")

    def check_roots(self) -> None:
        """Refuse to start with a log root that is not a folder: every ask under it would fail later, one by one."""
        bad = [str(root) for root in self.log_roots if not root.is_dir()]
        if bad:
            raise CrashcartError(
                f"log_roots that are not folders: {', '.join(bad)}; fix `log_roots:` in the bot config (or mount them)"
            )


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> BotConfig:
    """Settings from the YAML file at `path` (if any); tokens it leaves out come from the environment."""
    env = os.environ if env is None else env
    data = _read_yaml(Path(path)) if path is not None else {}
    for key, var in TOKEN_ENV.items():
        if not data.get(key) and env.get(var, "").strip():
            data[key] = env[var].strip()
    try:
        return BotConfig.model_validate(data)
    except ValidationError as exc:
        where = f"bot config {path}" if path is not None else "the bot's settings from the environment"
        raise CrashcartError(
            f"{where}: invalid bot setting {every_problem(exc)}; fix them (README: The Slack bot)"
        ) from exc


def every_problem(exc: ValidationError) -> str:
    """Every bad field with what is wrong with it, on one line: `max_upload_bytes: ...; loglevel: unknown setting`."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        what = "unknown setting" if error["type"] == "extra_forbidden" else error["msg"]
        problems.append(f"{where}: {what}")
    return "; ".join(problems)


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CrashcartError(f"cannot read bot config {path}: {exc.strerror or exc}; check --config") from exc
    except yaml.YAMLError as exc:
        raise CrashcartError(f"{path} is not valid YAML ({str(exc).splitlines()[0]}); fix the file") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CrashcartError(f"{path} must be a YAML mapping of bot settings (log_roots:, rule_confirmers: ...)")
    return data

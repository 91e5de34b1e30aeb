"""The Bolt app: a mention, a DM or /crashcart → the diagnosis in the thread; buttons → the stores.

Handlers stay thin (parse the ask → call the library → post). Each acknowledges at once (an :eyes: reaction or
the slash command's ack) and queues the ask for crashcart/bot/work.py, which runs it off Bolt's listener threads
under the bot's limits. Any error becomes one line in the thread and the app keeps serving.
"""

from __future__ import annotations

import logging
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from crashcart.agent.outbound import outbound
from crashcart.agent.report import Report
from crashcart.bot.actions import ReportCache, SavedReport, confirm_diagnosis, decide_rule, propose_rule
from crashcart.bot.blocks import (
    CONFIRM,
    CORRECT,
    DIAGNOSIS_BLOCK,
    RULE_BLOCK,
    RULE_CONFIRM,
    RULE_REJECT,
    escape,
    one_line,
    proposal_blocks,
    report_blocks,
    summary_text,
    with_note,
)
from crashcart.bot.config import BotConfig
from crashcart.bot.requests import HELP, JobAsk, Logs, PathAsk, TriageRequest, describe_ask, gather, parse_ask
from crashcart.bot.work import AskRunner, TriageJob, configured_job
from crashcart.knowledge.errors import CrashcartError, InputError
from crashcart.knowledge.incident_store import IncidentStore
from crashcart.knowledge.incidents import Incident
from crashcart.knowledge.rule_store import RuleStore
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.notify import send, triage_notice
from crashcart.stores import default_memory_path, default_rules_path, open_memory, open_rule_store

if TYPE_CHECKING:
    from crashcart.agent.llm_provider import ChatModel, LLMSettings

log = logging.getLogger("crashcart.bot")
_USER_ID = re.compile(r"^[A-Z0-9]+$")


@dataclass
class Services:
    """What the handlers share: settings, the Slack client, the stores and the model (if any)."""

    config: BotConfig
    client: WebClient
    memory: IncidentStore
    rule_store: RuleStore
    cache: ReportCache
    runner: AskRunner
    memory_path: Path  # where the triage process opens the stores
    rules_path: Path
    llm: LLMSettings | None = None  # when config.llm names a model
    chat_model: ChatModel | None = None

    def post(self, channel: str, thread_ts: str, text: str, blocks: list[dict] | None = None) -> None:
        """Reply in the thread, through the outbound gate (the blocks redact already; this catches any text that
        was built elsewhere); a failing post is logged, never raised into Bolt."""
        try:
            self.client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=outbound(text), blocks=outbound(blocks)
            )
        except SlackApiError as exc:
            log.error("chat.postMessage to %s failed: %s", channel, exc.response.get("error"))

    def ask(self, channel: str, thread_ts: str, ask: TriageRequest | None) -> None:
        """Queue the ask for an ask thread (Bolt's listener thread returns at once), or say the bot is full."""
        if ask is None:
            self.post(channel, thread_ts, f":information_source: {HELP}")
        elif not self.runner.submit(lambda: self.answer(channel, thread_ts, ask)):
            room = self.config.max_concurrent_asks + self.config.max_waiting_asks
            line = f"crashcart is full ({room} asks running or waiting, max_concurrent_asks + max_waiting_asks)"
            self.post(channel, thread_ts, one_line(line + ": ask again in a few minutes", ":hourglass:"))

    def answer(self, channel: str, thread_ts: str, ask: TriageRequest) -> None:
        """Triage what was asked and post the diagnosis (or one line saying why not) in the thread."""
        with replying(lambda line: self.post(channel, thread_ts, line)):
            with tempfile.TemporaryDirectory(prefix="crashcart-bot-") as tmp:
                logs = gather(ask, self.config, self.client, Path(tmp))
                report = self.runner.triage(self._job(ask, logs, Path(tmp)), self.chat_model)
            report_id = self.cache.save(report, logs.job)
            self.post(channel, thread_ts, summary_text(report), report_blocks(report, report_id))
            self.notify(report)

    def notify(self, report: Report) -> None:
        """The diagnosis' notice to the config's other channels; one that fails is a line in the bot's log."""
        urls = [url.get_secret_value() for url in self.config.notify]
        for failure in send(triage_notice(report), urls):
            log.warning("notify %s failed: %s", failure.channel, failure.reason)

    def _job(self, ask: TriageRequest, logs: Logs, workdir: Path) -> TriageJob:
        """Paths and Slurm jobs are opened under the log roots; pastes and uploads are the bot's own files."""
        named = isinstance(ask, JobAsk | PathAsk)
        return configured_job(
            self.config,
            logs.paths,
            workdir,
            roots=list(self.config.log_roots) if named else [],
            memory_path=self.memory_path,
            rules_path=self.rules_path,
            llm=self.llm,
        )

    def offer_rule(self, saved: SavedReport, incident: Incident, channel: str, thread_ts: str) -> None:
        """Post the rule a confirmed class the rules missed suggests, with its buttons."""
        proposal = propose_rule(saved, incident, self.rule_store)
        if proposal is not None:
            self.post(channel, thread_ts, f"proposed rule {proposal.id}", proposal_blocks(proposal))


@contextmanager
def replying(post: Callable[[str], None]) -> Iterator[None]:
    """Turn any error inside into one line posted with `post`: the app keeps running."""
    try:
        yield
    except CrashcartError as exc:
        post(one_line(str(exc)))
    except Exception as exc:  # a bug: one line in Slack, the traceback in the bot's log
        log.exception("crashcart bot handler failed")
        post(one_line(f"internal error: {type(exc).__name__}: {exc} (the bot's log has the traceback)", ":boom:"))


def _file_ids(event: dict) -> list[str]:
    return [f["id"] for f in event.get("files") or [] if isinstance(f, dict) and f.get("id")]


def _user(body: dict) -> str:
    user = str((body.get("user") or {}).get("id") or "")
    if not _USER_ID.match(user):
        raise InputError("the request names no Slack user")
    return user


def _where(body: dict) -> tuple[str, str, str, list[dict]]:
    """(channel, message ts, thread ts, blocks) of the message a button sits on."""
    container, message = body.get("container") or {}, body.get("message") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id", "")
    ts = container.get("message_ts") or message.get("ts", "")
    return channel, ts, message.get("thread_ts") or ts, message.get("blocks") or []


def open_services(config: BotConfig, client: WebClient, chat_model: ChatModel | None = None) -> Services:
    """The stores the config names (created when missing) and the model settings."""
    settings = None
    if config.llm:
        from crashcart.agent.llm_provider import LLMSettings as Settings  # lazy: langchain loads only when asked for

        settings = Settings.from_env(model=config.llm, base_url=config.llm_base_url)
    memory_path = config.memory_path or default_memory_path()
    rules_path = config.rules_path or default_rules_path()
    memory = open_memory(memory_path, create=True)
    rule_store = open_rule_store(rules_path, create=True)
    reports = config.reports_dir or memory_path.parent / "bot-reports"
    return Services(
        config=config,
        client=client,
        memory=memory,
        rule_store=rule_store,
        cache=ReportCache(reports),
        runner=AskRunner(config),
        memory_path=memory_path,
        rules_path=rules_path,
        llm=settings,
        chat_model=chat_model,
    )


class _ClientGivenFilter(logging.Filter):
    """Drop Bolt's "As you gave `client` as well, `token` will be unused": Bolt reads $SLACK_BOT_TOKEN on its own,
    and the client it is given holds that same token."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


def _bolt_logger() -> logging.Logger:
    bolt = logging.getLogger("crashcart.bot.bolt")
    if not any(isinstance(f, _ClientGivenFilter) for f in bolt.filters):
        bolt.addFilter(_ClientGivenFilter())
    return bolt


def build_app(config: BotConfig, client: WebClient | None = None, *, chat_model: ChatModel | None = None) -> App:
    """The Bolt app with crashcart's handlers; `client` defaults to one for config.slack_api_url."""
    client = client or WebClient(token=config.secret("bot_token"), base_url=config.slack_api_url)
    # The token was checked at start (crashcart/bot/run.py verify_slack), so Bolt does not call auth.test again.
    app = App(
        client=client,
        signing_secret=config.secret("signing_secret") or "",
        name="crashcart",
        token_verification_enabled=False,
        logger=_bolt_logger(),
    )
    services = open_services(config, client, chat_model)
    register(app, services)
    return app


def register(app: App, s: Services) -> None:
    """Attach the handlers: asks (mention, DM, /crashcart) and the four buttons."""

    @app.event("app_mention")
    def on_mention(event: dict, client: WebClient) -> None:
        _acknowledge(client, event)
        s.ask(
            event["channel"], event.get("thread_ts") or event["ts"], parse_ask(event.get("text", ""), _file_ids(event))
        )

    @app.event("message")
    def on_message(event: dict, client: WebClient) -> None:
        if event.get("channel_type") != "im" or event.get("bot_id") or event.get("subtype") not in (None, "file_share"):
            return  # only people's DMs to the bot; channel asks come as mentions
        _acknowledge(client, event)
        s.ask(
            event["channel"], event.get("thread_ts") or event["ts"], parse_ask(event.get("text", ""), _file_ids(event))
        )

    @app.command("/crashcart")
    def on_command(ack: Callable, command: dict, client: WebClient, respond: Callable) -> None:
        ask = parse_ask(command.get("text", ""))
        if ask is None:
            ack(HELP)
            return
        ack(f"crashcart is on it: {escape(describe_ask(ask))}")
        asked = f"<@{command['user_id']}>" if _USER_ID.match(command.get("user_id", "")) else "someone"
        try:  # a slash command has no message to thread under: start one
            parent = client.chat_postMessage(
                channel=command["channel_id"], text=f"{asked} asked crashcart about {escape(describe_ask(ask))}"
            )
        except SlackApiError as exc:
            respond(
                one_line(
                    f"cannot post in this channel ({exc.response.get('error')}): invite the bot or mention it instead"
                )
            )
            return
        s.ask(command["channel_id"], parent["ts"], ask)

    @app.action(CONFIRM)
    def on_confirm(ack: Callable, body: dict, action: dict, client: WebClient) -> None:
        ack()
        _decide_diagnosis(s, body, client, action.get("value", ""), None)

    @app.action(CORRECT)
    def on_correct(ack: Callable, body: dict, action: dict, client: WebClient) -> None:
        ack()
        report_id, _, picked = (action.get("selected_option") or {}).get("value", "").partition("|")
        _decide_diagnosis(s, body, client, report_id, picked)

    @app.action(RULE_CONFIRM)
    def on_rule_confirm(ack: Callable, body: dict, action: dict, client: WebClient) -> None:
        ack()
        _decide_rule(s, body, client, action.get("value", ""), confirm=True)

    @app.action(RULE_REJECT)
    def on_rule_reject(ack: Callable, body: dict, action: dict, client: WebClient) -> None:
        ack()
        _decide_rule(s, body, client, action.get("value", ""), confirm=False)


def _acknowledge(client: WebClient, event: dict) -> None:
    """An :eyes: reaction on the ask, at once: triage may take a while."""
    try:
        client.reactions_add(channel=event["channel"], timestamp=event["ts"], name="eyes")
    except SlackApiError as exc:
        log.warning("reactions.add failed: %s", exc.response.get("error"))


def _decide_diagnosis(s: Services, body: dict, client: WebClient, report_id: str, picked: str | None) -> None:
    channel, ts, thread_ts, blocks = _where(body)
    with replying(lambda line: s.post(channel, thread_ts, line)):
        user = _user(body)
        try:
            failure_class = FailureClass(picked) if picked is not None else None
        except ValueError as exc:
            raise InputError(f"{picked!r} is not a failure class: pick one from the menu") from exc
        saved, incident = confirm_diagnosis(s.cache, s.memory, report_id, user, failure_class)
        verb = "confirmed" if failure_class is None else f"corrected to `{incident.failure_class.value}`"
        note = f":white_check_mark: {verb} by <@{user}>: stored as incident `{incident.id}`"
        client.chat_update(channel=channel, ts=ts, text=note, blocks=outbound(with_note(blocks, DIAGNOSIS_BLOCK, note)))
        s.offer_rule(saved, incident, channel, thread_ts)


def _decide_rule(s: Services, body: dict, client: WebClient, proposal_id: str, confirm: bool) -> None:
    channel, ts, thread_ts, blocks = _where(body)
    with replying(lambda line: s.post(channel, thread_ts, line)):
        note = decide_rule(s.rule_store, s.config, client, proposal_id, _user(body), confirm)
        client.chat_update(
            channel=channel, ts=ts, text=note, blocks=outbound(with_note(blocks, RULE_BLOCK + proposal_id, note))
        )

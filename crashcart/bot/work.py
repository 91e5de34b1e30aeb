"""Where the bot's asks run: off Bolt's listener threads, a bounded number at a time, each triage in a process of
its own that is stopped at the time limit.

Bolt's listener threads only queue an ask (or turn it away when `max_concurrent_asks + max_waiting_asks` are in
already), so one member cannot hold the bot with a whole log root. A thread cannot be stopped, a process can:
pebble runs each triage in a fresh process from the forkserver (the bot is threaded, so no plain fork) and stops
it after `max_triage_seconds`. That process opens the asked paths under the log roots itself (crashcart/bot/
opened.py: the open files live there), opens the stores by path, and ends with the bot even on kill -9.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pebble import ProcessExpired, concurrent

from crashcart.agent.consult import LLMOptions
from crashcart.api import Report, triage
from crashcart.bot.config import BotConfig
from crashcart.bot.opened import ReadLimits, open_under_roots
from crashcart.knowledge.errors import CrashcartError, InputError
from crashcart.parsers.sources import ReadCap, printable
from crashcart.parsers.workers import watch_starter
from crashcart.stores import open_memory, open_rule_store

if TYPE_CHECKING:
    from crashcart.agent.llm_provider import ChatModel, LLMSettings

_START = "forkserver"
DECOMPRESSED_SETTING = "max_decompressed_bytes in the bot config"


@dataclass(frozen=True)
class TriageJob:
    """Everything the triage process needs, by value: it shares no memory with the bot."""

    paths: list[Path]
    roots: list[Path]  # non-empty: the asker named these paths, so they are opened under these roots only
    workdir: Path  # the ask's own folder (the links to the opened files go here)
    memory_path: Path
    rules_path: Path
    limits: ReadLimits
    read_cap: ReadCap | None = None
    llm: LLMSettings | None = None
    llm_options: LLMOptions = field(default_factory=LLMOptions)
    workers: int = 1
    starter: int = field(default_factory=os.getpid)
    # A forkserver child has the environment the forkserver was started with, not the bot's of now.
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))


def configured_job(
    config: BotConfig,
    paths: list[Path],
    workdir: Path,
    *,
    roots: list[Path],
    memory_path: Path,
    rules_path: Path,
    llm: LLMSettings | None = None,
) -> TriageJob:
    """A triage job under the config's read, decompression and model limits: the bot's asks and the MCP server's
    tool calls (crashcart/mcp_server.py) are built here, so both read logs the same way."""
    return TriageJob(
        paths=paths,
        roots=roots,
        workdir=workdir,
        memory_path=memory_path,
        rules_path=rules_path,
        limits=ReadLimits(bytes=config.max_read_bytes, files=config.max_read_files),
        read_cap=ReadCap(bytes=config.max_decompressed_bytes, setting=DECOMPRESSED_SETTING),
        llm=llm,
        llm_options=LLMOptions(timeout_s=config.llm_timeout_s),
        workers=config.workers,
    )


class AskRunner:
    """The bot's asks: `submit` queues one (or refuses), `triage` runs one triage process under the time limit."""

    def __init__(self, config: BotConfig) -> None:
        self.seconds = config.max_triage_seconds
        self._threads = ThreadPoolExecutor(config.max_concurrent_asks, thread_name_prefix="crashcart-ask")
        self._room = threading.BoundedSemaphore(config.max_concurrent_asks + config.max_waiting_asks)
        self._held = threading.local()  # whether this ask thread's ask still holds its place in the room
        context = multiprocessing.get_context(_START)
        context.set_forkserver_preload([__name__])  # each triage process starts with crashcart loaded
        # pebble 5.2 reads `context` (its type stub says mp_context, which it ignores: the process would be forked)
        process = concurrent.process(timeout=self.seconds, daemon=False, context=context)  # type: ignore[call-overload]
        self._run = process(run_triage)

    def submit(self, ask: Callable[[], None]) -> bool:
        """Run `ask` on an ask thread; False, and nothing runs, when as many asks as allowed are in already."""
        if not self._room.acquire(blocking=False):
            return False
        self._threads.submit(self._holding, ask)
        return True

    def _holding(self, ask: Callable[[], None]) -> None:
        """Run the ask holding its place; the place is given back once its triage ends (before the reply is
        posted, so whoever reads the reply finds room again) or, at the latest, when the ask ends."""
        self._held.place = True
        try:
            ask()
        finally:
            self._give_back()

    def _give_back(self) -> None:
        if getattr(self._held, "place", False):
            self._held.place = False
            self._room.release()

    def triage(self, job: TriageJob, chat_model: ChatModel | None = None) -> Report:
        """The report of `job`, triaged in a process of its own; a one-line error when it is stopped or dies."""
        future = self._run(job, chat_model)
        try:
            return future.result()
        except TimeoutError as exc:
            raise InputError(
                f"triage took longer than {self.seconds:g} s, the bot's limit (max_triage_seconds), and was stopped: "
                "ask about fewer or smaller logs, or triage them with the crashcart CLI"
            ) from exc
        except ProcessExpired as exc:
            raise CrashcartError(
                f"the triage process died (exit {exc.exitcode}; killed for memory?): "
                "triage the logs with the crashcart CLI"
            ) from exc
        finally:
            self._give_back()


# -- inside the triage process -------------------------------------------------------------------------------


def run_triage(job: TriageJob, chat_model: ChatModel | None) -> Report:
    """Open what was asked, triage it, and report it under the names the asker gave."""
    watch_starter(job.starter)
    os.environ.clear()
    os.environ.update(job.env)
    with ExitStack() as stack:
        view = job.workdir / "view"
        try:
            opened = open_under_roots(job.paths, job.roots, view, job.limits, stack) if job.roots else None
            paths = opened.paths if opened else job.paths
            report = triage(paths, chat_model=chat_model, **_triage_args(job, stack))
        except CrashcartError as exc:  # name the asker's paths, not the links
            kind = InputError if isinstance(exc, InputError) else CrashcartError
            raise kind(str(exc).replace(str(view), _common(job.paths))) from None
    skipped = (opened.skipped if opened else []) + report.skipped
    return report.model_copy(update={"paths": [printable(p) for p in job.paths], "skipped": skipped})


def _triage_args(job: TriageJob, stack: ExitStack) -> dict[str, Any]:
    return {
        "memory": stack.enter_context(open_memory(job.memory_path, create=True)),
        "rule_store": stack.enter_context(open_rule_store(job.rules_path, create=True)),
        "read_cap": job.read_cap,
        "llm": job.llm,
        "llm_options": job.llm_options,
        "workers": job.workers,
    }


def _common(paths: list[Path]) -> str:
    return os.path.commonpath(paths) if len(paths) > 1 or paths[0].is_dir() else str(paths[0].parent)

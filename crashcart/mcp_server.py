"""crashcart as a Model Context Protocol server, so an assistant in the operator's editor or chat can ask for a
diagnosis, read the lines around its evidence, and look up past incidents and the rule queue.

It reads logs exactly as the Slack bot does, through the bot's own code: a path or a Slurm job only under the
configured log roots (crashcart/bot/requests.py), each file opened first and checked after, in a triage process
of its own under the bot's time, size and concurrency limits (crashcart/bot/work.py, crashcart/bot/opened.py).
Every result is redacted on its way out (agent/outbound.py). Confirming an incident or a rule is not a tool: a
person does that, with the CLI or the bot's buttons.

Built on the official SDK's MCPServer (mcp 2.x; FastMCP in 1.x): stdio by default, or streamable HTTP on
127.0.0.1 only, served by uvicorn on a socket this module binds, so a port of 0 works and the address is printed.
"""

from __future__ import annotations

import socket
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import ExitStack
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from crashcart.agent.llm_context import LINE_CHARS
from crashcart.agent.llm_tools import MAX_WINDOW
from crashcart.agent.memory import recall
from crashcart.agent.models import SimilarIncident
from crashcart.agent.outbound import clip, outbound
from crashcart.api import Report
from crashcart.bot.config import BotConfig
from crashcart.bot.opened import ReadLimits, open_under_roots
from crashcart.bot.requests import JobAsk, job_logs, parse_ask, safe_path
from crashcart.bot.work import DECOMPRESSED_SETTING, AskRunner, configured_job
from crashcart.knowledge.errors import CrashcartError, InputError
from crashcart.knowledge.records import Strict
from crashcart.knowledge.rule_store import RuleProposal
from crashcart.parsers.sources import ReadCap, discover, numbered_lines
from crashcart.stores import default_memory_path, default_rules_path, open_memory, open_rule_store

if TYPE_CHECKING:
    from crashcart.agent.llm_provider import LLMSettings

T = TypeVar("T")

HOST = "127.0.0.1"  # the HTTP transport listens here only: the tools read the cluster's logs
DEFAULT_PORT = 8765
PATH = "/mcp"
MAX_SIMILAR = 20
INSTRUCTIONS = (
    "crashcart diagnoses failed GPU training jobs from their logs. Triage a job by its log paths (files or "
    "folders under the server's log roots) or its Slurm job id; read the lines around an evidence line with "
    "show_lines; look up similar past incidents and the rule proposals waiting for an operator. Confirming an "
    "incident or a rule is for a person to do with the crashcart CLI or the Slack bot."
)

PathsArg = Annotated[
    list[str],
    Field(description="log files or folders, absolute or relative to a log root; .gz and .zst are read too"),
]
JobArg = Annotated[str, Field(description="a Slurm job id: 123456, or 123456_7 for an array task")]


class WindowLine(Strict):
    line: int
    text: str


class LineWindow(Strict):
    """The lines around `file:line`, redacted and each cut at the length a model is shown."""

    file: str
    line: int
    lines: list[WindowLine]


class SimilarIncidents(Strict):
    """The stored incidents closest to a job, best first (`crashcart cases search`)."""

    incidents: list[SimilarIncident]
    count: int


class PendingRules(Strict):
    """The rule proposals waiting for an operator, as `crashcart rules list --status pending --format json`."""

    proposals: list[RuleProposal]
    count: int


class Tools:
    """The server's tools over one configuration: its log roots, limits and stores."""

    def __init__(self, config: BotConfig, llm: LLMSettings | None = None) -> None:
        self.config = config
        self.llm = llm
        self.memory_path = config.memory_path or default_memory_path()
        self.rules_path = config.rules_path or default_rules_path()
        self.runner = AskRunner(config)

    def triage_logs(self, paths: PathsArg) -> Report:
        """Diagnose a failed job from its logs: the failure class, action, faulty nodes, the proving evidence lines
        (file relative to the triaged path, line number, text), similar past incidents and next steps."""
        return _answer(lambda: self._triage(self._paths(paths)))

    def triage_slurm_job(self, job_id: JobArg) -> Report:
        """Diagnose a failed Slurm job from the log files Slurm accounting names for it (they must lie under the
        log roots); the same report as triage_logs."""
        return _answer(lambda: self._triage(job_logs(_job_id(job_id), self.config.log_roots)))

    def show_lines(
        self,
        file: Annotated[
            str,
            Field(
                description="a log file, absolute or relative to a log root: for an evidence line of a folder's "
                "report, the report's path joined with the evidence's file; of a one-file report, its path"
            ),
        ],
        line: Annotated[int, Field(ge=1, description="the line number, as the evidence cites it")],
        before: Annotated[int, Field(ge=0, le=MAX_WINDOW)] = 10,
        after: Annotated[int, Field(ge=0, le=MAX_WINDOW)] = 20,
    ) -> LineWindow:
        """The lines of one log file around `file:line` (at most 60 in all), to read an evidence line in context."""
        return _answer(lambda: self._window(file, line, before, after))

    def similar_incidents(
        self,
        paths: PathsArg,
        k: Annotated[int, Field(ge=1, le=MAX_SIMILAR, description="how many incidents")] = 5,
    ) -> SimilarIncidents:
        """The confirmed past incidents most similar to a job's logs, best first, with how each was resolved."""

        def found() -> SimilarIncidents:
            report = self._triage(self._paths(paths))
            with open_memory(self.memory_path, create=True) as store:
                incidents = recall(store, report.fingerprint, k)
            return SimilarIncidents(incidents=incidents, count=len(incidents))

        return _answer(found)

    def pending_rules(self) -> PendingRules:
        """The rules proposed for the fast filter that wait for an operator to confirm or reject them."""

        def pending() -> PendingRules:
            store = open_rule_store(self.rules_path)
            if store is None:
                return PendingRules(proposals=[], count=0)
            with store:
                proposals = store.list(status="pending")
            return PendingRules(proposals=proposals, count=len(proposals))

        return _answer(pending)

    def all(self) -> list[Callable[..., Any]]:
        return [self.triage_logs, self.triage_slurm_job, self.show_lines, self.similar_incidents, self.pending_rules]

    def _paths(self, paths: list[str]) -> list[Path]:
        if not paths:
            raise InputError("give at least one log path under the log roots")
        return list(dict.fromkeys(safe_path(p, self.config.log_roots) for p in paths))

    def _triage(self, paths: list[Path]) -> Report:
        """The report of `paths`, triaged as the bot triages an ask: in its own process, in turn, time-limited."""
        done: Future[Report] = Future()

        def ask() -> None:
            try:
                with tempfile.TemporaryDirectory(prefix="crashcart-mcp-") as tmp:
                    job = configured_job(
                        self.config,
                        paths,
                        Path(tmp),
                        roots=list(self.config.log_roots),
                        memory_path=self.memory_path,
                        rules_path=self.rules_path,
                        llm=self.llm,
                    )
                    done.set_result(self.runner.triage(job))
            except BaseException as exc:  # handed to the waiting tool call, which reports it
                done.set_exception(exc)

        if not self.runner.submit(ask):
            room = self.config.max_concurrent_asks + self.config.max_waiting_asks
            raise InputError(f"crashcart is full ({room} triages running or waiting): ask again in a few minutes")
        return done.result()

    def _window(self, file: str, line: int, before: int, after: int) -> LineWindow:
        path = safe_path(file, self.config.log_roots)
        if path.is_dir():
            raise InputError(f"{file} is a folder: give one log file in it")
        first = max(1, line - min(before, MAX_WINDOW - 1))  # the window always holds the line itself
        last = min(line + after, first + MAX_WINDOW - 1)
        limits = ReadLimits(bytes=self.config.max_read_bytes, files=1)
        with tempfile.TemporaryDirectory(prefix="crashcart-mcp-") as tmp, ExitStack() as stack:
            opened = open_under_roots([path], self.config.log_roots, Path(tmp) / "view", limits, stack)
            cap = ReadCap(bytes=self.config.max_decompressed_bytes, setting=DECOMPRESSED_SETTING)
            [source] = discover([str(opened.paths[0])], cap).sources
            shown = numbered_lines(source, first, last)
            lines = [WindowLine(line=no, text=clip(text, LINE_CHARS)) for no, text in shown]
        if not any(row.line == line for row in lines):
            raise InputError(f"{file} has no line {line}")
        return LineWindow(file=str(path), line=line, lines=lines)


def _job_id(raw: str) -> str:
    ask = parse_ask(raw.strip())
    if not isinstance(ask, JobAsk):
        raise InputError(f"{raw!r} is not a Slurm job id: give one like 123456, or 123456_7 for an array task")
    return ask.job_id


def _answer(work: Callable[[], T]) -> T:
    """The result of `work`, redacted; a refusal (outside the roots, an unknown job ...) is a tool error of one
    sentence, which the assistant reads."""
    try:
        return outbound(work())
    except CrashcartError as exc:
        raise ToolError(outbound(str(exc))) from None


def build_server(config: BotConfig) -> MCPServer:
    """The MCP server with crashcart's tools, all read-only for the caller."""
    llm = None
    if config.llm:
        from crashcart.agent.llm_provider import LLMSettings  # lazy: langchain loads only when a model is named

        llm = LLMSettings.from_env(model=config.llm, base_url=config.llm_base_url)
    server: MCPServer = MCPServer(
        "crashcart", instructions=INSTRUCTIONS, version=version("crashcart"), log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    for tool in Tools(config, llm).all():
        server.add_tool(tool, annotations=read_only)
    return server


def check_config(config: BotConfig) -> None:
    """Refuse to start with nothing to read: every tool call would be refused, one by one."""
    if not config.log_roots:
        raise CrashcartError("no log root to read: pass --log-root DIR (repeatable) or log_roots in --config")
    config.check_roots()


def serve(config: BotConfig, *, http: bool = False, port: int = DEFAULT_PORT) -> None:
    """Serve the tools on stdio, or with `http` on http://127.0.0.1:PORT/mcp, until the client or a signal ends it."""
    check_config(config)
    server = build_server(config)
    if not http:
        server.run("stdio")
        return
    serve_http(server, port)


def serve_http(server: MCPServer, port: int) -> None:
    """Streamable HTTP on 127.0.0.1 only (the SDK also checks the Host header, against DNS rebinding)."""
    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(socket.SOMAXCONN)  # before the address is printed: a client that connects at once is queued
    except OSError as exc:
        sock.close()
        raise CrashcartError(f"cannot listen on {HOST}:{port} ({exc.strerror or exc}): pick another --port") from exc
    app = server.streamable_http_app(streamable_http_path=PATH, host=HOST)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"crashcart mcp: listening on http://{HOST}:{sock.getsockname()[1]}{PATH}", file=sys.stderr, flush=True)
    with sock:
        anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))

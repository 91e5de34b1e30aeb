"""Tools the model may call before it answers, to look further into the job than the context shows.

Four, each bounded in lines and time: search the job's logs with an RE2 pattern, open a window around a
`file:line`, list the templates of a node or rank, show a rank's progress timeline. Every line a tool returns is
shown as `[file:line]` and becomes citeable, and goes out redacted like the context. Files are read again
only when a tool asks (streamed, never loaded whole); standard input cannot be read twice and is left out.
"""

from __future__ import annotations

import inspect
import time
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
import re2

from crashcart.agent.llm_context import LINE_CHARS, Context
from crashcart.agent.outbound import clip
from crashcart.agent.timeline import timelines
from crashcart.knowledge.errors import ReadError
from crashcart.parsers.models import FileScan
from crashcart.parsers.sources import Source, numbered_lines, read_blocks

MAX_TOOL_CALLS = 6  # per diagnosis, over all samples
MAX_LINES = 40  # returned by one call
MAX_WINDOW = 60  # lines around a file:line
TOOL_SECONDS = 5.0  # one call's reading time
_NO_FILE = "no such file in this job; use a file name exactly as shown in brackets"


@dataclass
class JobLogs:
    """What the tools read: the job's files (whole, by the name evidence shows) and what the scan learned."""

    sources: dict[str, Source]
    scans: Sequence[FileScan]
    context: Context

    @classmethod
    def of(cls, sources: Sequence[Source], scans: Sequence[FileScan], context: Context) -> JobLogs:
        whole = {s.display: s.model_copy(update={"start": 0, "end": None}) for s in sources if s.path is not None}
        return cls(sources=whole, scans=scans, context=context)

    def search_logs(self, pattern: str, file: str | None = None) -> str:
        """Lines of the job's logs matching an RE2 regular expression (case-sensitive), optionally in one file."""
        try:
            regex = re2.compile(pattern)
        except re2.error as exc:
            return f"invalid RE2 pattern: {exc}"
        if file is not None and file not in self.sources:
            return _NO_FILE
        names = [file] if file is not None else list(self.sources)
        deadline = time.monotonic() + TOOL_SECONDS
        found: list[str] = []
        for name in names:
            for no, text in _matching(self.sources[name], regex, deadline):
                found.append(self._show(name, no, text))
                if len(found) >= MAX_LINES:
                    return "\n".join(found) + f"\n(first {MAX_LINES} matches only)"
        late = " (time limit reached: not every file was read)" if time.monotonic() > deadline else ""
        return ("\n".join(found) or "no line matches") + late

    def open_window(self, file: str, line: int, before: int = 10, after: int = 20) -> str:
        """The lines of `file` around `line` (at most 60 in all)."""
        if file not in self.sources:
            return _NO_FILE
        before, after = max(0, min(before, MAX_WINDOW)), max(0, min(after, MAX_WINDOW))
        first, last = max(1, line - before), line + after
        if last - first + 1 > MAX_WINDOW:
            last = first + MAX_WINDOW - 1
        shown = [self._show(file, no, text) for no, text in numbered_lines(self.sources[file], first, last)]
        return "\n".join(shown) or f"{file} has no line {line}"

    def list_templates(self, node: str | None = None, rank: int | None = None) -> str:
        """The line shapes a node or rank printed, rarest first, with counts and where each was first seen."""
        stats = [
            s
            for scan in self.scans
            for s in scan.templates
            if (node is None or s.node == node) and (rank is None or s.rank == rank)
        ]
        stats.sort(key=lambda s: (s.count, s.first.line))
        rows = [f"x{s.count} first at {self._show(s.first.file, s.first.line, s.first.text)}" for s in stats]
        return "\n".join(rows[:MAX_LINES]) or "no such node or rank in this job"

    def progress_timeline(self, node: str | None = None, rank: int | None = None) -> str:
        """A node's or rank's progress lines: the first, and the last ones before it stopped."""
        rows: list[str] = []
        for t in timelines(self.scans):
            if (node is not None and t.node != node) or (rank is not None and t.rank != rank):
                continue
            points = [t.points[0], *t.points[-9:]] if len(t.points) > 10 else list(t.points)
            who = " ".join(x for x in (t.node, None if t.rank is None else f"rank{t.rank}") if x) or t.file
            rows.append(f"{who}: {len(t.points)} progress line(s) kept; iteration {t.last.iteration} last")
            rows += [self._show(t.file, p.line, p.text) for p in dict.fromkeys(points)]
        return "\n".join(rows[:MAX_LINES]) or "no progress lines for that node or rank"

    def _show(self, file: str, line: int, text: str) -> str:
        self.context.citeable[(file, line)] = text
        return f"[{file}:{line}] {clip(text, LINE_CHARS, self.context.redactor)}"

    def tools(self) -> list[Callable[..., str]]:
        return [self.search_logs, self.open_window, self.list_templates, self.progress_timeline]

    def schemas(self) -> list[dict[str, Any]]:
        """The tools as OpenAI-format function schemas, which every langchain chat model's bind_tools takes too."""
        return [tool_schema(tool) for tool in self.tools()]


def tool_schema(tool: Callable[..., str]) -> dict[str, Any]:
    """An OpenAI function schema from a method's signature and docstring, as OpenAI's strict mode wants it:
    every parameter listed as required (optional ones are nullable and keep their default), nothing else allowed.

    Built with pydantic, not langchain's convert_to_openai_tool: that one imports langchain-core's tool and
    tracer stack (half a second) to read four signatures.
    """
    hints = typing.get_type_hints(tool)
    fields: dict[str, Any] = {
        name: (hints[name], ... if p.default is inspect.Parameter.empty else p.default)
        for name, p in inspect.signature(tool).parameters.items()
    }
    args: type[pydantic.BaseModel] = pydantic.create_model(tool.__name__, **fields)
    shape: dict[str, Any] = args.model_json_schema()
    shape.pop("title", None)
    for prop in shape["properties"].values():
        prop.pop("title", None)
    parameters = {**shape, "required": list(shape["properties"]), "additionalProperties": False}
    function = {"name": tool.__name__, "description": inspect.getdoc(tool) or tool.__name__, "parameters": parameters}
    return {"type": "function", "function": function}


def _matching(src: Source, regex: re2._Regexp, deadline: float) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line the regex matches, found block by block in RE2 (no loop over lines)."""
    no = 0  # lines before the block
    try:
        for block in read_blocks(src):
            if time.monotonic() > deadline:
                return
            text = block.decode("utf-8", errors="replace")
            pos, counted, seen = 0, 0, 0  # where to search from; text[:counted] holds `seen` newlines
            while (m := regex.search(text, pos)) is not None:
                start = text.rfind("\n", 0, m.start()) + 1
                end = text.find("\n", m.start())
                end = len(text) if end < 0 else end
                seen += text.count("\n", counted, start)
                counted = start
                yield no + seen + 1, text[start:end].rstrip("\r")
                pos = end + 1
                if pos > len(text):
                    break
            no += block.count(b"\n") + (not block.endswith(b"\n"))
    except (OSError, ReadError):
        return  # a file gone or damaged since the scan: what was read stands

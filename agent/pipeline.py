"""The triage pipeline, start to end: read, filter, template, build events, diagnose, recall, consult.

The face re-exports `triage` as its public API (crashcart.api); the CLI, the bot, batch triage and evals
all arrive here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from crashcart.agent.consult import LLMOptions, consult, should_consult
from crashcart.agent.diagnose import diagnose
from crashcart.agent.events import build_events
from crashcart.agent.fingerprint import fingerprint
from crashcart.agent.memory import NOVELTY_THRESHOLD, recall, with_memory
from crashcart.agent.models import LLMUsage
from crashcart.agent.report import Report, ScanStats
from crashcart.agent.salience import mark_rare, salient_templates
from crashcart.agent.timeline import timelines
from crashcart.knowledge.rule_store import RuleProposal, RuleStore, loadable_rules
from crashcart.knowledge.rules import Rule, load_rules
from crashcart.parsers.models import Skipped
from crashcart.parsers.scan import gc_paused, scan_sources
from crashcart.parsers.sources import ReadCap, discover, nothing_read, printable
from crashcart.parsers.yearless import lend_job_year

if TYPE_CHECKING:
    from crashcart.agent.llm_provider import ChatModel, LLMSettings
    from crashcart.knowledge.incident_store import IncidentStore  # faiss and numpy: only with a memory

MAX_REPORT_EVENTS = 300


def triage(
    paths: Sequence[str | Path] | str | Path,
    *,
    read_cap: ReadCap | None = None,
    rules: Sequence[Rule] | None = None,
    workers: int | None = None,
    memory: IncidentStore | None = None,
    k: int = 5,
    novelty: float = NOVELTY_THRESHOLD,
    rule_store: RuleStore | None = None,
    llm: LLMSettings | None = None,
    llm_options: LLMOptions | None = None,
    chat_model: ChatModel | None = None,
    progress: Callable[[str, float], None] | None = None,
) -> Report:
    """Read the logs at `paths` (files, folders, .gz/.zst, '-' for stdin) and diagnose the failure.

    With an incident `memory`, the diagnosis lists the k most similar past incidents, lets them decide when
    the rules are unsure, and says when the failure is new. A `rule_store` adds the operator-confirmed rules
    to the fast filter and receives the model's rule proposals. With `llm` settings (or a `chat_model`), the
    model is consulted when rules and memory are unsure. A `read_cap` bounds the decompressed text read from each
    .gz/.zst file. Files that cannot be read, or not to the end, are listed in the report's `skipped`; a confirmed
    rule that no longer loads is left out with a line in the report's `warnings`, never failing the run.
    """
    started = time.perf_counter()
    paths = [paths] if isinstance(paths, str | Path) else list(paths)  # one path, not its characters
    found = discover([str(p) for p in paths], cap=read_cap)
    sources = found.sources
    active = list(rules) if rules is not None else load_rules()
    warnings: list[str] = []
    if rule_store is not None:
        confirmed, left_out = loadable_rules(rule_store)
        active += confirmed
        warnings += [s.warning for s in left_out]
    loaded = time.perf_counter()
    tell = progress or (lambda stage, fraction: None)
    scans = lend_job_year(scan_sources(sources, active, workers, lambda fraction: tell("reading logs", fraction)))
    skipped = found.skipped + [Skipped(path=s.file, reason=s.problem) for s in scans if s.problem]
    if all(s.problem and not s.lines for s in scans):  # every file failed before its first line
        raise nothing_read(skipped)
    scanned = time.perf_counter()
    tell("diagnosing", 1.0)
    with gc_paused():  # the events and timelines of a 1,000-file job are records without cycles, like the scans
        mark_rare(scans)
        lines = timelines(scans)
        events = build_events(scans, lines)
        diagnosis = diagnose(events, scans, lines)
        print_ = fingerprint(scans, events)
    if memory is not None:
        diagnosis = with_memory(diagnosis, recall(memory, print_, k, novelty), novelty)
    usage: LLMUsage | None = None
    proposals: list[RuleProposal] = []
    options = llm_options or LLMOptions()
    if (llm is not None or chat_model is not None) and should_consult(diagnosis, options):
        from crashcart.agent.llm_provider import LLMSettings as Settings  # lazy: langchain loads only when asked for

        settings = llm or Settings(model="custom:chat-model")
        tell("asking the model", 1.0)
        diagnosis, usage, proposals = consult(
            scans,
            events,
            diagnosis,
            settings=settings,
            options=options,
            chat_model=chat_model,
            rule_store=rule_store,
            job=", ".join(printable(p) for p in paths),
            sources=sources,
        )
    llm_done = time.perf_counter()
    size = sum(s.bytes for s in scans)
    done = llm_done
    seconds = done - started
    stats = ScanStats(
        files=len(scans),
        lines=sum(s.lines for s in scans),
        bytes=size,
        rule_hits=sum(len(s.hits) + s.hits_dropped for s in scans),
        templates=len({t.template_id for s in scans for t in s.templates}),
        seconds=round(seconds, 3),
        mb_per_s=round(size / 1e6 / seconds, 1) if seconds > 0 else 0.0,
    )
    return Report(
        paths=[printable(p) for p in paths],
        diagnosis=diagnosis,
        events=events[:MAX_REPORT_EVENTS],
        events_omitted=max(0, len(events) - MAX_REPORT_EVENTS),
        templates=salient_templates(scans),
        stats=stats,
        fingerprint=print_,
        llm=usage,
        proposals=proposals,
        warnings=warnings,
        skipped=skipped,
        timings={
            "load_rules": round(loaded - started, 3),
            "scan": round(scanned - loaded, 3),
            "diagnose": round(done - scanned - (usage.seconds if usage else 0.0), 3),
            "llm": round(usage.seconds, 3) if usage else 0.0,
        },
    )

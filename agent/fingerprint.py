"""A failure's fingerprint for incident memory: what is specific to this failure, not to the job around it.

A big job's logs are mostly what every training job prints (iteration lines, start-up banners, checkpoints);
a fingerprint of those finds every job alike. So the fingerprint holds only the failure's own lines: the
tracebacks (exception type, masked message, the functions it went through), the lines of the root-cause
rules, the rare error-like lines, and the rare lines of each file's last stretch, where a job that died says
why. The symptom every healthy rank prints (a collective timeout) counts only where no root cause shows, and
errors the job outlived are left out. Lines are masked and stripped of launcher prefixes, so the same failure
buried in a job a thousand times bigger, on another host and rank, gives nearly the same fingerprint.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from crashcart.agent.events import CollectiveTimeoutEvent, Event, FailureEvent, XidEvent
from crashcart.agent.salience import ERRORISH
from crashcart.agent.timeline import is_progress_template
from crashcart.knowledge.incidents import Fingerprint
from crashcart.knowledge.taxonomy import Role
from crashcart.parsers.attribution import strip_prefixes
from crashcart.parsers.masking import mask
from crashcart.parsers.models import FileScan, TemplateStat, Traceback

MAX_TEMPLATES = 40
MAX_TRACEBACKS = 4  # distinct ones: every rank of a job often prints the same
TAIL_LINES = 400  # an excerpt's last stretch, where a job with no progress lines says why it died
BEFORE_LAST_PROGRESS = 20
MAX_SYMPTOM_LINES = 3
CHILD_SUMMARY_LINES = 16  # torchrun's summary under its ChildFailedError: failures, root cause, its fields
MAX_LINE_CHARS = 300
Signal = FailureEvent | XidEvent | CollectiveTimeoutEvent


def fingerprint(scans: Sequence[FileScan], events: Sequence[Event]) -> Fingerprint:
    """Root-cause tracebacks and lines, then the rare lines of each file's failure window, error-like first;
    the symptoms only where no root cause shows."""
    signals = [e for e in events if isinstance(e, Signal) and e.demoted is None and e.role is not Role.CONTEXT]
    signals.sort(key=lambda e: -e.priority)
    causes = [e for e in signals if e.role is Role.ROOT_CAUSE]
    symptoms = [e for e in signals if e.role is not Role.ROOT_CAUSE]
    ruled = {e.rule_id for e in signals}
    progressing = is_progressing(scans)
    where = {e.file for e in causes}  # the files the root cause shows in: the other files' tails are theirs
    window = [
        s
        for scan in scans
        if not where or scan.file in where
        for s in failure_window(scan, progressing)
        if not set(s.rule_ids) & ruled
    ]
    window.sort(key=lambda s: ERRORISH.search(s.template) is None)  # stable: error-like lines first
    cited = [*(e.text for e in causes)] if causes else []
    lines = _lines([*_traceback_lines(scans, causes), *cited, *(s.first.text for s in window)])
    chosen = causes or ([] if lines else symptoms)
    if not causes:  # a few: every healthy rank prints them, and they must not outweigh the failure's own lines
        lines += [line for line in _lines(e.text for e in symptoms) if line not in lines][:MAX_SYMPTOM_LINES]
    return Fingerprint(
        templates=lines[:MAX_TEMPLATES],
        rule_ids=list(dict.fromkeys(e.rule_id for e in chosen)),
        classes=list(dict.fromkeys(e.failure_class for e in chosen)),
    )


def _traceback_lines(scans: Sequence[FileScan], causes: Sequence[Signal]) -> list[str]:
    """Per distinct root-cause traceback: its last exception as `Type: first message line`, and the functions
    it went through (the innermost few), which stay the same where the message's numbers and paths differ."""
    named = {(e.file, e.line) for e in causes}
    out: list[str] = []
    seen: set[tuple[str, str]] = set()
    for tb in (tb for scan in scans for tb in scan.tracebacks):
        if not tb.chain or (tb.chain[-1].ref.file, tb.chain[-1].ref.line) not in named:
            continue
        key = _shape(tb)
        if key not in seen:
            seen.add(key)
            out.extend(line for line in key if line)
        if len(seen) >= MAX_TRACEBACKS:
            break
    return out


def _shape(tb: Traceback) -> tuple[str, str]:
    exc = tb.chain[-1]
    message = exc.message.split("\n", 1)[0]
    frames = " ".join(f.function for f in exc.frames[-3:] if f.function)
    return f"{exc.exc_type}: {message}", f"in {frames}" if frames else ""


def _progress(template: str) -> bool:
    """A progress line, and not an error that names its step ("giving up on step 137")."""
    return is_progress_template(template) and not ERRORISH.search(template)


def is_progressing(scans: Sequence[FileScan]) -> bool:
    """Whether any file of the job reports progress (a failure window is then where it stopped)."""
    return any(_last_progress(scan) is not None for scan in scans)


def _last_progress(scan: FileScan) -> int | None:
    return max((s.last.line for s in scan.templates if _progress(s.template)), default=None)


def failure_window(scan: FileScan, progressing: bool) -> list[TemplateStat]:
    """The file's rare lines where the failure is, last first: after its last progress line (a few lines
    before it too: a progress bar is often flushed after the error); in a job that never reports progress
    (an excerpt), the file's last stretch; in a side file of a job that does (a kernel or scheduler log),
    only its error-like lines."""
    last = _last_progress(scan)
    if last is not None:
        start = last - BEFORE_LAST_PROGRESS
    elif not progressing:
        start = scan.lines - TAIL_LINES
    else:
        start = 0
    told = _teardown_lines(scan)
    rare = [
        s
        for s in scan.templates
        if s.rare and s.last.line > start and not _progress(s.template) and s.last.line not in told
    ]
    if last is None and progressing:
        rare = [s for s in rare if ERRORISH.search(s.template)]
    return sorted(rare, key=lambda s: -s.last.line)


def _teardown_lines(scan: FileScan) -> set[int]:
    """The lines of the launcher's own report that a worker failed (torchrun's ChildFailedError and its summary):
    every failed job ends with one, so it tells nothing of which failure it was."""
    out: set[int] = set()
    for tb in scan.tracebacks:
        if tb.kind == "child_failed" and tb.chain:
            out.update(range(tb.start.line, tb.chain[-1].ref.line + CHILD_SUMMARY_LINES + 1))
    return out


def _lines(texts: Iterable[str]) -> list[str]:
    """Masked, prefix-free, deduplicated lines, in order."""
    out: dict[str, None] = {}
    for text in texts:
        line = mask(strip_prefixes(text).strip())[:MAX_LINE_CHARS]
        if line:
            out.setdefault(line, None)
    return list(out)

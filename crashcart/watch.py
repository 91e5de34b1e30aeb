"""`crashcart watch`: follow a running job's logs and report what matters as it happens, then the diagnosis.

The loop polls the files (parsers/follow.py), hands each chunk of new lines to the streaming state
(agent/watch.py), asks it for a stall, and decides when the job has ended: Slurm says so (`--slurm JOBID`), or
the files have stopped growing for `idle_s` after a line the rules know as a job's end. The final report is
`crashcart.api.triage` on the files. Reports go to `emit` as they are made; the one command ever run is the
operator's own drain command, when one is configured (crashcart/drain_exec.py).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field

from crashcart.agent.actions import drain_command
from crashcart.agent.report import Report
from crashcart.agent.watch import Watcher
from crashcart.agent.watch_reports import FinalReport, StallReport, WatchReport
from crashcart.api import triage
from crashcart.batch.slurm import NotInAccounting, Runner, job_ended, slurm_job_logs, slurm_job_state
from crashcart.drain_exec import Drainer
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.records import Strict, is_host
from crashcart.knowledge.rules import load_rules
from crashcart.knowledge.taxonomy import Action
from crashcart.parsers.follow import Follower, Note

POLL_S = 0.25
IDLE_S = 30.0
FIND_EVERY_S = 1.0  # how often Slurm is asked for a started job's files until they are known
INTERRUPTED = "interrupted (Ctrl-C) before the job ended"
STATE_EVERY_S = 15.0  # how often Slurm is asked for the job's state: sacct and scontrol are not free for slurmctld


class WatchOptions(Strict):
    """What to follow and when to say it stalled or ended."""

    paths: list[Path] = []
    slurm_job: str | None = None
    stall_after: float | None = Field(None, gt=0)  # seconds; default: from the job's own cadence
    idle_s: float = Field(IDLE_S, gt=0)
    poll_s: float = Field(POLL_S, gt=0)
    state_every_s: float = Field(STATE_EVERY_S, gt=0)
    drain_exec: list[str] | None = None  # the operator's drain command (drain_exec.drain_argv); None: print only


class _Loop:
    """One watch: the follower, the streaming state, and how the end is told."""

    def __init__(self, options: WatchOptions, emit: Callable[[WatchReport], None], runner: Runner) -> None:
        self.options, self.emit, self.runner = options, emit, runner
        self.watcher = Watcher(load_rules(), options.stall_after)
        self.follower = Follower(options.paths)
        self._asked = float("-inf")

    def step(self, now: float, notes: Callable[[Note], None]) -> str | None:
        """One poll: the new lines read and reported, a stall checked; why the job ended, or None."""
        chunks, found = self.follower.poll(now)
        for note in found:
            notes(note)
        for chunk in chunks:
            for report in self.watcher.feed(chunk.file, chunk.base, chunk.data, now):
                self.emit(report)
        stall = self.watcher.check_stall(now)
        if stall is not None:
            self.emit(stall)
        return self._ended(now, notes)

    def _ended(self, now: float, notes: Callable[[Note], None]) -> str | None:
        if self.options.slurm_job is not None:
            return self._slurm_ended(self.options.slurm_job, now, notes)
        grew = self.follower.last_growth
        idle = now - grew if grew is not None else 0.0
        if self.watcher.ending and idle >= self.options.idle_s:
            return f"no growth for {idle:.0f}s after a terminal line"
        return None

    def _slurm_ended(self, job: str, now: float, notes: Callable[[Note], None]) -> str | None:
        """The Slurm state, asked every state_every_s; until the job's files are known, every FIND_EVERY_S."""
        looking = not self.follower.paths
        every = min(self.options.state_every_s, FIND_EVERY_S) if looking else self.options.state_every_s
        if now - self._asked < every:
            return None
        self._asked = now
        state = slurm_job_state(job, runner=self.runner)  # scontrol's first: it knows a job sacct does not yet
        ended = job_ended(state)
        if looking and state != "PENDING":  # a pending job has written nothing yet
            try:
                self.follower.paths = slurm_job_logs(job, runner=self.runner)
            except NotInAccounting:  # slurmdbd has not recorded it yet; slurmctld knows it, so it is no wrong id
                return None
            for path in self.follower.paths:
                notes(Note(str(path), "watching"))
        return f"slurm state {state}" if ended else None


def watch(
    options: WatchOptions,
    emit: Callable[[WatchReport], None],
    notes: Callable[[Note], None] | None = None,
    *,
    say: Callable[[str], None] | None = None,
    runner: Runner = subprocess.run,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> FinalReport:
    """Follow the job until it ends, emitting each root cause and stall once; the final report is emitted too
    and returned. With `options.drain_exec`, each node a report says to drain is drained once (`say` hears how
    that went).

    Ctrl-C (KeyboardInterrupt) ends the watch like the job's end does, with the diagnosis of the lines written so
    far, marked `interrupted`: whoever stops a watch wants to know what it had seen. A Ctrl-C during that last
    triage, or before any file was found, goes to the caller."""
    if not options.paths and options.slurm_job is None:
        raise InputError("nothing to watch: give log files or folders, or --slurm JOBID")
    for path in options.paths:
        if str(path) == "-":
            raise InputError("watch follows files, not standard input: give the log files or their folder")
        if not path.exists():
            raise InputError(f"no such file or folder: {path}; watch a folder to follow files not yet written")
    drainer = Drainer(options.drain_exec, say or (lambda text: None), runner) if options.drain_exec else None

    def report(made: WatchReport) -> None:
        emit(made)
        if drainer is not None and not isinstance(made, StallReport) and made.action is Action.DRAIN_NODE_AND_RETRY:
            for node in made.nodes:
                if is_host(node):
                    drainer.drain(node, f"crashcart: {made.failure_class.value}")

    try:
        return _follow(options, report, notes or (lambda note: None), runner, clock, sleep)
    finally:
        if drainer is not None:
            drainer.close()


def _follow(
    options: WatchOptions,
    report: Callable[[WatchReport], None],
    tell: Callable[[Note], None],
    runner: Runner,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> FinalReport:
    loop = _Loop(options, report, runner)
    for name in [str(p) for p in options.paths] or [f"slurm job {options.slurm_job}"]:
        tell(Note(name, "watching"))  # the rules are loaded: from here on, no line is missed
    interrupted = False
    try:
        while True:
            started = clock()
            ended = loop.step(started, tell)
            if ended is not None:
                loop.step(clock(), tell)  # the lines written while the end was being told
                break
            sleep(max(0.0, options.poll_s - (clock() - started)))
    except KeyboardInterrupt:
        if not loop.follower.files:
            raise
        ended, interrupted = INTERRUPTED, True
    if not loop.follower.files:
        raise InputError(f"the job ended ({ended}) and no log was found to diagnose")
    final = final_report(triage(loop.follower.paths), ended, interrupted=interrupted)
    report(final)
    return final


def final_report(report: Report, ended: str, *, interrupted: bool = False) -> FinalReport:
    """The triage report as the `final` line: its diagnosis, where, and the drain commands it calls for."""
    d = report.diagnosis
    drains = [drain_command(n, f"crashcart: {d.failure_class.value}") for n in d.faulty_nodes if is_host(n)]
    return FinalReport(
        time=datetime.now(UTC),
        ended=ended,
        interrupted=interrupted,
        failure_class=d.failure_class,
        action=d.action,
        nodes=d.faulty_nodes,
        rank=d.faulty_ranks[0] if d.faulty_ranks else None,
        summary=d.summary,
        drain=drains if d.action is Action.DRAIN_NODE_AND_RETRY else [],
        diagnosis=d,
    )

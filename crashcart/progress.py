"""A progress bar on stderr for a triage that runs longer than a couple of seconds, on a terminal only.

A quick triage shows none (a bar that flashes for half a second is noise), a pipe or a file gets none (stderr
of a script stays clean), and stdout is never touched, so `--format json` output stays one JSON object.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

DELAY_S = 2.0  # no bar before the triage has run this long


class TriageProgress:
    """The `progress` callback of `crashcart.triage`: stage and fraction, drawn once DELAY_S has passed."""

    def __init__(
        self, stream: TextIO, *, delay_s: float = DELAY_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._stream = stream
        self._shown = stream.isatty()
        self._delay_s = delay_s
        self._clock = clock
        self._started = clock()
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, stage: str, fraction: float) -> None:
        if not self._shown:
            return
        if self._bar is None:
            if self._clock() - self._started < self._delay_s:
                return
            from rich.console import Console  # here: a run that draws no bar (most) never imports rich's progress
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%"),
                TimeElapsedColumn(),
                console=Console(file=self._stream),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(stage, total=1.0)
        assert self._task is not None
        self._bar.update(self._task, description=stage, completed=fraction)

    def __enter__(self) -> TriageProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()  # transient: the bar's lines are cleared, the report follows on a clean screen

"""crashcart/progress.py: a bar on a terminal's stderr for a long triage, nothing for a short one or a pipe."""

from __future__ import annotations

import io
import json
from pathlib import Path

from crashcart.api import triage
from crashcart.progress import TriageProgress

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "xid79-job" / "logs"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_triage_longer_than_the_delay_draws_its_stages_on_a_terminal() -> None:
    stream, clock = Terminal(), Clock()
    with TriageProgress(stream, delay_s=2.0, clock=clock) as bar:
        bar("reading logs", 0.2)
        assert stream.getvalue() == ""  # not yet two seconds in
        clock.now = 2.5
        bar("reading logs", 0.6)
        bar("diagnosing", 1.0)
    assert "diagnosing" in stream.getvalue()


def test_a_pipe_gets_no_bar_however_long_the_triage() -> None:
    stream, clock = io.StringIO(), Clock()
    with TriageProgress(stream, delay_s=0.0, clock=clock) as bar:
        clock.now = 60.0
        bar("reading logs", 0.5)
    assert stream.getvalue() == ""


def test_triage_tells_each_stage_and_reads_up_to_the_whole() -> None:
    heard: list[tuple[str, float]] = []
    triage([str(EXAMPLE)], memory=None, progress=lambda stage, fraction: heard.append((stage, fraction)))
    reading = [f for stage, f in heard if stage == "reading logs"]
    assert reading == sorted(reading) and reading[-1] == 1.0 and all(f < 1.0 for f in reading[:-1])
    assert heard[-1] == ("diagnosing", 1.0)


def test_json_on_stdout_stays_one_object_with_the_bar_on(cli, monkeypatch) -> None:
    monkeypatch.setattr("crashcart.progress.DELAY_S", 0.0)
    code, out, _ = cli("triage", str(EXAMPLE), "--format", "json", "--no-memory")
    assert code == 0 and json.loads(out)["diagnosis"]["failure_class"] == "gpu_hardware"

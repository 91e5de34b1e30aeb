"""evals/live.py: the live writer writes exactly the generator's job, one iteration at a time, and says when the
fault's first line is on disk; in a stall the faulty node's ranks stop first."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from crashcart.evals.generator import LOGS, JobSpec, file_plans, plan_job
from crashcart.evals.live import STALL_LEAD, write_live
from crashcart.evals.logends import events_text, head_events, tail_events
from crashcart.evals.logtext import body_chunks

SPEC = JobSpec(
    nodes=3, gpus_per_node=2, total_mb=1, scenario="xid79", fault_node=1, start=datetime(2025, 3, 1, tzinfo=UTC)
)
ITERATIONS = 300  # more than one block of the generator's (BLOCK = 256)


def expected(name: str) -> str:
    """The file as the generator's parts make it: preamble, every iteration, the end."""
    plan = plan_job(SPEC, ITERATIONS)
    [fp] = [f for f in file_plans(plan) if f.name == name]
    body = "".join(c for lo in range(0, ITERATIONS, 256) for c in body_chunks(plan, fp, lo, min(lo + 256, ITERATIONS)))
    return events_text(plan, fp, head_events(plan)) + body + events_text(plan, fp, tail_events(plan))


def test_the_files_are_the_generators_job_and_the_fault_is_announced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_live(tmp_path, SPEC, iterations=ITERATIONS, pace_s=0.0)
    names = sorted(p.name for p in (tmp_path / LOGS).iterdir())
    assert names == sorted(f.name for f in file_plans(plan_job(SPEC, ITERATIONS)))
    for name in names:
        assert (tmp_path / LOGS / name).read_text() == expected(name), name
    announced = json.loads(capsys.readouterr().out)
    assert announced["file"] == "kernel-node01.log" and "NVRM: Xid" in announced["line"]
    assert announced["line"] in (tmp_path / LOGS / "kernel-node01.log").read_text().splitlines()


def test_in_a_stall_the_faulty_nodes_ranks_stop_first_and_nothing_ends(tmp_path: Path) -> None:
    write_live(tmp_path, SPEC, iterations=ITERATIONS, pace_s=0.0, end="stall")

    def last_iteration(name: str) -> int:
        return int(re.findall(r"\] iteration +(\d+)/", (tmp_path / LOGS / f"{name}.log").read_text())[-1])

    assert [last_iteration(n) for n in ("node00", "node01", "node02")] == [300, 300 - STALL_LEAD, 300]
    assert "Xid" not in (tmp_path / LOGS / "kernel-node01.log").read_text()

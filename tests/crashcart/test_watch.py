"""crashcart/watch.py: the watch loop over a generated job's files, ended by Slurm's state or by idle files after a
terminal line, with the final diagnosis from triage; Slurm answers from a stand-in runner (recorded shapes)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fakes.clock import FakeClock

from crashcart.agent.watch_reports import FinalReport, RootCauseReport, WatchReport
from crashcart.evals.generator import JobSpec, generate_job
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.watch import WatchOptions, watch

START = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def xid_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 4-node job whose GPU fell off the bus on node02 (its logs end with the teardown)."""
    out = tmp_path_factory.mktemp("xid-job")
    generate_job(out, JobSpec(nodes=4, gpus_per_node=4, total_mb=0.5, scenario="xid79", fault_node=2, start=START))
    return out / "logs"


class Slurm:
    """Answers sacct as `sacct --parsable2 --noheader` prints a row (tests/slurm/recorded/sacct_failed.txt's shape)
    with the job's state, RUNNING for the first `running` calls; scontrol no longer knows the job (exit 1)."""

    def __init__(self, logs: Path, running: int) -> None:
        self.logs, self.running, self.calls = logs, running, 0

    def __call__(self, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        if argv[0] == "scontrol":
            return subprocess.CompletedProcess(argv, 1, "", "slurm_load_jobs error: Invalid job id specified\n")
        self.calls += 1
        state = "RUNNING" if self.calls <= self.running else "FAILED"
        row = (
            f"4242|4242|train|{state}|1:0|root|node[00-03]|gres/gpu=16,node=4|120|2025-03-01T08:00:00|Unknown|"
            f"/work|{self.logs}|sbatch train.sh\n"
        )
        return subprocess.CompletedProcess(argv, 0, row, "")


def run(options: WatchOptions, runner=subprocess.run) -> tuple[FinalReport, list[WatchReport]]:
    seen: list[WatchReport] = []
    clock = FakeClock()
    final = watch(options, seen.append, runner=runner, clock=clock, sleep=clock.sleep)
    return final, seen


def test_files_that_stop_growing_after_a_terminal_line_end_the_watch_with_the_triage(xid_job: Path) -> None:
    final, seen = run(WatchOptions(paths=[xid_job], idle_s=5))
    [root] = [r for r in seen if isinstance(r, RootCauseReport)]
    assert (root.failure_class, root.nodes, root.evidence[0].file) == (
        FailureClass.GPU_HARDWARE,
        ["node02"],
        "kernel-node02.log",
    )
    assert seen[-1] is final
    assert final.ended == "no growth for 5s after a terminal line"
    assert (final.failure_class, final.nodes) == (FailureClass.GPU_HARDWARE, ["node02"])
    assert final.drain == ["scontrol update NodeName=node02 State=DRAIN Reason='crashcart: gpu_hardware'"]


def test_a_slurm_job_ends_when_its_state_does(xid_job: Path) -> None:
    slurm = Slurm(xid_job, running=3)
    final, seen = run(WatchOptions(slurm_job="4242", state_every_s=1.0), runner=slurm)
    assert final.ended == "slurm state FAILED"
    assert [r.kind for r in seen] == ["root_cause", "final"]
    assert final.nodes == ["node02"]


class CtrlC(FakeClock):
    """A fake clock whose `after`-th sleep is interrupted, as Ctrl-C interrupts the watch loop's real sleep."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.left = after

    def sleep(self, seconds: float) -> None:
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt
        super().sleep(seconds)


def test_ctrl_c_ends_the_watch_with_the_diagnosis_of_the_lines_so_far(xid_job: Path) -> None:
    seen: list[WatchReport] = []
    clock = CtrlC(after=3)
    final = watch(WatchOptions(paths=[xid_job], idle_s=3600), seen.append, clock=clock, sleep=clock.sleep)
    assert final.interrupted and final.ended == "interrupted (Ctrl-C) before the job ended"
    assert (final.failure_class, final.nodes) == (FailureClass.GPU_HARDWARE, ["node02"])
    assert seen[-1] is final


def test_ctrl_c_before_any_file_is_found_or_during_the_last_triage_stops_the_watch_at_once(
    xid_job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = CtrlC(after=2)
    with pytest.raises(KeyboardInterrupt):  # an empty folder: nothing to diagnose
        watch(WatchOptions(paths=[tmp_path], idle_s=3600), lambda report: None, clock=clock, sleep=clock.sleep)

    def second_ctrl_c(paths: list[Path]) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("crashcart.watch.triage", second_ctrl_c)
    clock = CtrlC(after=2)
    with pytest.raises(KeyboardInterrupt):
        watch(WatchOptions(paths=[xid_job], idle_s=3600), lambda report: None, clock=clock, sleep=clock.sleep)


def test_nothing_to_watch_and_a_missing_path_are_errors_that_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="give log files or folders, or --slurm JOBID"):
        watch(WatchOptions(), lambda r: None)
    with pytest.raises(InputError, match="watch a folder to follow files not yet written"):
        watch(WatchOptions(paths=[tmp_path / "nope.log"]), lambda r: None)


def test_with_a_drain_command_configured_each_node_to_drain_is_drained_once(xid_job: Path, tmp_path: Path) -> None:
    drained = tmp_path / "drained"
    drained.mkdir()
    touch = "import pathlib, sys; pathlib.Path(sys.argv[1], sys.argv[2]).open('a').write('x')"
    said: list[str] = []
    clock = FakeClock()
    options = WatchOptions(paths=[xid_job], idle_s=5, drain_exec=[sys.executable, "-c", touch, str(drained), "{node}"])
    watch(options, lambda r: None, say=said.append, clock=clock, sleep=clock.sleep)
    assert {p.name: p.read_text() for p in drained.iterdir()} == {"node02": "x"}  # root cause and final: once
    assert len(said) == 1 and said[0].startswith("drain command ran: ")

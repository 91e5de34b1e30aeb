"""`crashcart watch` as a user runs it, beside a job that is writing its logs (crashcart/evals/live.py: the generator's
job appended at a pace by a writer process): an XID on one node is reported within 2 s of being written, with that
node; a job whose every rank stops is reported as stalled, naming the node that stopped first; Ctrl-C gives the
diagnosis so far and exits 130."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest

from crashcart.agent.watch_reports import REPORT, FinalReport, RootCauseReport, StallReport
from crashcart.knowledge.taxonomy import FailureClass

REPORT_WITHIN_S = 2.0  # issue 16: from the XID line on disk to its report read off watch's stdout
WAIT_S = 20.0


class Lines:
    """A pipe's lines as they arrive, each with the wall time it was read (a thread reads the pipe)."""

    def __init__(self, pipe: IO[str]) -> None:
        self._queue: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=self._pump, args=(pipe,), daemon=True).start()

    def _pump(self, pipe: IO[str]) -> None:
        for line in pipe:
            self._queue.put((time.time(), line))

    def next(self, timeout_s: float = WAIT_S) -> tuple[float, str]:
        try:
            return self._queue.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(f"no line in {timeout_s}s") from None


def start_watch(logs: Path, *args: str) -> tuple[subprocess.Popen[str], Lines, Path]:
    """`crashcart watch logs -v ...` with stdout read line by line; returns once it says it is watching."""
    err = logs.parent / "watch.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "crashcart.cli", "watch", str(logs), "-v", *args],
        stdout=subprocess.PIPE,
        stderr=err.open("w"),
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + WAIT_S
    while "crashcart: watching" not in err.read_text():
        assert proc.poll() is None, err.read_text()
        assert time.monotonic() < deadline, "watch did not start"
        time.sleep(0.05)
    return proc, Lines(proc.stdout), err


def start_writer(out: Path, *args: str) -> subprocess.Popen[str]:
    """The job as it runs: 4 nodes of 4 GPUs, 100 iterations 20 ms apart, then the end asked for."""
    argv = [sys.executable, "-m", "crashcart.evals.live", str(out), "--nodes", "4", "--gpus-per-node", "4"]
    argv += ["--iterations", "100", "--pace", "0.02", *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_an_xid_is_reported_within_two_seconds_of_being_written_with_its_node(tmp_path: Path, webhook) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    watch, out, err = start_watch(logs, "--idle", "2", "--notify", webhook.url("json", "/hook"))
    writer = start_writer(tmp_path, "--scenario", "xid79", "--fault-node", "2")
    try:
        assert writer.stdout is not None
        written = json.loads(writer.stdout.readline())  # printed once the fault's first line is on disk
        read_at, line = out.next()
        report = REPORT.validate_json(line)
        assert isinstance(report, RootCauseReport)
        assert read_at - written["written"] < REPORT_WITHIN_S
        assert (report.failure_class, report.nodes) == (FailureClass.GPU_HARDWARE, ["node02"])
        assert [(e.file, e.text) for e in report.evidence] == [(written["file"], written["line"])]
        assert written["file"] == "kernel-node02.log" and "Xid" in written["line"]
        final = REPORT.validate_json(out.next()[1])  # the job tears down, its files go quiet: the triage
        assert isinstance(final, FinalReport) and final.ended.endswith("after a terminal line")
        assert (final.failure_class, final.nodes) == (FailureClass.GPU_HARDWARE, ["node02"])
        assert watch.wait(timeout=WAIT_S) == 0
        assert "crashcart watch: root cause: gpu_hardware → drain_node_and_retry" in err.read_text()  # -v
        titles = [post.body["title"] for post in webhook.wait(2)]
        assert titles[0].startswith("crashcart watch: root cause: gpu_hardware")
        assert titles[1].startswith("crashcart watch: job ended")
    finally:
        stop(writer)
        stop(watch)


def test_a_job_whose_ranks_all_stop_is_reported_stalled_naming_the_node_that_stopped_first(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    watch, out, err = start_watch(logs, "--stall-after", "2")
    writer = start_writer(tmp_path, "--end", "stall", "--fault-node", "1")
    try:
        assert writer.wait(timeout=WAIT_S) == 0  # every rank has stopped: nothing more is written
        report = REPORT.validate_json(out.next()[1])
        assert isinstance(report, StallReport)
        assert (report.failure_class, report.nodes, report.iteration) == (
            FailureClass.COLLECTIVE_TIMEOUT,
            ["node01"],
            97,
        )
        assert report.why == "stopped first, at iteration 97 (others reached 100)"
        assert report.evidence[0].file == "node01.log" and "iteration       97/" in report.evidence[0].text
        assert report.stalled_s >= 2.0
        watch.send_signal(signal.SIGINT)  # Ctrl-C: the diagnosis of the lines so far, then exit 130
        final = REPORT.validate_json(out.next()[1])
        assert isinstance(final, FinalReport) and final.interrupted
        assert final.ended == "interrupted (Ctrl-C) before the job ended"
        assert watch.wait(timeout=WAIT_S) == 130
        assert "crashcart: interrupted" in err.read_text()
    finally:
        stop(writer)
        stop(watch)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "nothing to watch: give log files or folders, or --slurm JOBID"),
        (("no-such-folder",), "no such file or folder: no-such-folder; watch a folder"),
        (("-",), "watch follows files, not standard input: give the log files or their folder"),
        ((".", "--drain-exec", "scontrol update State=DRAIN"), "--drain-exec must hold {node}"),
    ],
)
def test_nothing_to_watch_is_one_line_naming_the_fix(cli, args: tuple[str, ...], message: str) -> None:
    code, out, err = cli("watch", *args)
    assert (code, out) == (2, "")
    assert err.startswith(f"crashcart: error: {message}") and len(err.splitlines()) == 1


def test_text_for_people_shows_each_report_as_its_notice(cli, tmp_path: Path) -> None:
    from crashcart.evals.generator import JobSpec, generate_job

    generate_job(tmp_path, JobSpec(nodes=4, gpus_per_node=4, total_mb=0.5, scenario="ib_link", fault_node=3))
    code, out, err = cli("watch", str(tmp_path / "logs"), "--idle", "0.5", "--format", "text")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "crashcart watch: root cause: network → drain_node_and_retry"
    assert "  where: node03" in lines
    assert (
        "  drain (not run): scontrol update NodeName=node03 State=DRAIN Reason='crashcart: net.ib.async_event'" in lines
    )
    assert any(line.startswith("crashcart watch: job ended (no growth for") for line in lines)

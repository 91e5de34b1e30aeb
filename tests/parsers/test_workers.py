"""parsers/workers.py: a child process ends when the process that started it does, however that one ended."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from proctree import alive, kill_when

from crashcart.parsers.workers import wait_for_exit, worker_pool

# A grandchild that watches the middle process (argv: mode, a file to touch once watching, the middle's pid) and
# sleeps; "poll" takes the pidfd away, as on macOS or a kernel before 5.3.
GRANDCHILD = """
import os, pathlib, sys, time
from crashcart.parsers import workers
if sys.argv[1] == "poll":
    del os.pidfd_open
    workers.POLL_SECONDS = 0.05
workers.watch_starter(int(sys.argv[3]))
pathlib.Path(sys.argv[2]).touch()
time.sleep(120)
"""
MIDDLE = "import os, subprocess, sys, time; subprocess.Popen([sys.executable, *sys.argv[1:], str(os.getpid())])"


@pytest.mark.parametrize("mode", ["pidfd", "poll"])
def test_a_watched_child_ends_when_its_starter_is_killed(tmp_path: Path, mode: str) -> None:
    ready = tmp_path / "watching"
    cmd = [sys.executable, "-c", MIDDLE + "; time.sleep(120)", "-c", GRANDCHILD, mode, str(ready)]
    recorded, left = kill_when(cmd, lambda pid, members: ready.exists() and len(members) == 2)
    assert len(recorded) == 2 and left == []


def test_waiting_for_a_process_that_already_exited_returns_at_once() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    while alive(proc.pid):  # exited, not yet reaped: a zombie counts as exited
        time.sleep(0.01)
    began = time.monotonic()
    wait_for_exit(proc.pid)
    assert time.monotonic() - began < 1
    proc.wait()
    wait_for_exit(proc.pid)  # reaped and gone


def test_waiting_returns_when_the_process_exits() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    waiter = threading.Thread(target=wait_for_exit, args=(proc.pid,))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()  # still running
    proc.wait()
    waiter.join(5)
    assert not waiter.is_alive()


def test_pool_workers_run_the_initializer_and_live_while_their_starter_does(tmp_path: Path) -> None:
    with worker_pool(1, context="forkserver", initializer=os.chdir, initargs=(str(tmp_path),)) as pool:
        first = pool.submit(os.getpid).result(timeout=60)
        time.sleep(0.3)
        assert pool.submit(os.getcwd).result(timeout=60) == str(tmp_path)
        assert pool.submit(os.getpid).result(timeout=60) == first and alive(first)

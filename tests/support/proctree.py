"""Kill a real crashcart command with SIGKILL and see what it leaves behind, from /proc (Linux).

The command runs in a session of its own, so everything it starts (a forkserver, its workers, a resource
tracker) shares its process group, whoever their parent is. `kill_when` records that group once the command has
started its helpers, SIGKILLs the command alone, and returns what is still alive a few seconds later.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

Ready = Callable[[int, dict[int, int]], bool]  # (the command's pid, {pid: ppid} of its group) -> start the kill


def group(pgid: int) -> dict[int, int]:
    """{pid: ppid} of the live (not zombie) processes in process group `pgid`."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and fields[2] not in "ZX" and int(fields[4]) == pgid:
                found[int(entry.name)] = int(fields[3])
    return found


def parents() -> dict[int, int]:
    """{pid: ppid} of every live (not zombie) process."""
    found = {}
    for entry in Path("/proc").iterdir():
        fields = _stat(int(entry.name)) if entry.name.isdigit() else None
        if fields is not None and fields[2] not in "ZX":
            found[int(entry.name)] = int(fields[3])
    return found


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (an orphan's zombie waits for init, it runs nothing)."""
    fields = _stat(pid)
    return fields is not None and fields[2] not in "ZX"


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name: [pid, comm, state, ppid, pgrp, ...]."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    head, _, rest = raw.rpartition(")")
    return [*head.split(" (", 1), *rest.split()]


def kill_when(cmd: Sequence[str], ready: Ready, *, start_timeout: float = 120, grace: float = 5) -> tuple[dict, list]:
    """Run `cmd`, SIGKILL it once `ready` says so, and return (the group as recorded, the pids alive after grace).

    Everything left in the group is killed before returning, so a failing test leaves no processes behind.
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        recorded = _wait_ready(proc, ready, start_timeout)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(alive(p) for p in recorded):
            time.sleep(0.05)
        return recorded, [p for p in recorded if p != proc.pid and alive(p)]
    finally:
        _kill_group(proc)


def _wait_ready(proc: subprocess.Popen, ready: Ready, timeout: float) -> dict[int, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        members = group(proc.pid)
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"{proc.args} ended (exit {proc.returncode}) before it was ready: {err[-2000:]}")
        if ready(proc.pid, members):
            return members
        time.sleep(0.02)
    raise AssertionError(f"{proc.args} was not ready within {timeout}s; its group: {group(proc.pid)}")


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait()
    if proc.stderr:
        proc.stderr.close()

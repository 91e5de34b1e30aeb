"""Worker processes that end with the process that started them, even when it is killed with SIGKILL.

A killed parent runs no cleanup, and multiprocessing's workers outlive it: they wait on a queue whose other end
they hold themselves, and a forkserver stays up while any of its children holds its "alive" pipe. So every worker
starts a thread that waits for its starter to exit, then ends the worker at once.

Why a thread and not PR_SET_PDEATHSIG: that signal fires when the parent *thread* that forked exits (a pool
started from a short-lived thread would lose its workers early), and a forkserver worker's parent is the
forkserver, which that very worker keeps alive. The thread works under every start method: it waits on a pidfd
(Linux 5.3+), woken the moment the starter exits (a zombie counts as exited), and polls where there is none.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

POLL_SECONDS = 0.5  # without a pidfd: how often the starter is looked for
EXIT_CODE = 70  # the worker's exit status once its starter is gone


def worker_pool(
    max_workers: int,
    *,
    context: str | None = None,
    initializer: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
) -> ProcessPoolExecutor:
    """A ProcessPoolExecutor whose workers end when this process does; `context` names the start method."""
    return ProcessPoolExecutor(
        max_workers=max_workers,
        mp_context=multiprocessing.get_context(context),
        initializer=_start_worker,
        initargs=(os.getpid(), initializer, initargs),
    )


def _start_worker(starter: int, initializer: Callable[..., object] | None, initargs: tuple[Any, ...]) -> None:
    watch_starter(starter)
    if initializer is not None:
        initializer(*initargs)


def watch_starter(starter: int) -> None:
    """End this process as soon as process `starter` has exited; call it first thing in a child process."""
    threading.Thread(target=_exit_after, args=(starter,), name="crashcart-watch-starter", daemon=True).start()


def _exit_after(starter: int) -> None:
    wait_for_exit(starter)
    os._exit(EXIT_CODE)


def wait_for_exit(pid: int) -> None:
    """Return once process `pid` has exited (at once if it already has)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # no pidfd here (not Linux, an old kernel, a seccomp filter): poll
        _poll_until_gone(pid, os.getppid())
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


def _poll_until_gone(pid: int, parent: int) -> None:
    while not _gone(pid, parent):
        time.sleep(POLL_SECONDS)


def _gone(pid: int, parent: int) -> bool:
    """Our own parent is gone once we are handed to another (its zombie is not waited for); another process,
    once signalling it fails."""
    if pid == parent:
        return os.getppid() != parent
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # it exists, under another user
    return False

"""The one command `crashcart watch` may run, and only when the operator configures it: draining a node.

By default a drain is a printed command. With `--drain-exec 'scontrol update NodeName={node} State=DRAIN
Reason={reason}'` the operator's text is split into an argv once, at start, and each node a report says to drain
is filled into it: as a whole argument or inside one, never through a shell, and only when it is a plain host
name (letters, digits, `.`, `_`, `-`), since it was read off a log line. Each node is drained once; the command
runs on a thread so no report waits for it, and its outcome is one line for the caller to print.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from crashcart.knowledge.errors import InputError

TIMEOUT_S = 60.0
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
NODE, REASON = "{node}", "{reason}"


def drain_argv(template: str) -> list[str]:
    """The operator's command as an argv; it must name `{node}` somewhere."""
    try:
        argv = shlex.split(template)
    except ValueError as exc:
        raise InputError(f"--drain-exec: {exc}: quote it as a shell would") from exc
    if not argv or not any(NODE in arg for arg in argv):
        raise InputError("--drain-exec must hold {node}: e.g. 'scontrol update NodeName={node} State=DRAIN'")
    return argv


class Drainer:
    """Runs the operator's drain command once per node, on its own thread."""

    def __init__(self, argv: list[str], tell: Callable[[str], None], runner: Callable[..., object] = subprocess.run):
        self.argv, self.tell, self.runner = argv, tell, runner
        self._done: set[str] = set()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="drain")

    def drain(self, node: str, reason: str) -> Future[None] | None:
        """Start draining `node` (once); None when it was drained already or is no plain host name."""
        if node in self._done:
            return None
        self._done.add(node)
        if not _HOST.fullmatch(node):
            self.tell(f"not draining {node!r}: not a plain host name")
            return None
        argv = [arg.replace(NODE, node).replace(REASON, reason) for arg in self.argv]
        return self._pool.submit(self._run, argv)

    def _run(self, argv: list[str]) -> None:
        try:
            proc = self.runner(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as exc:
            self.tell(f"drain command failed: {shlex.join(argv)}: {exc}")
            return
        code = getattr(proc, "returncode", 0)
        said = (getattr(proc, "stderr", "") or "").strip().splitlines()
        if code == 0:
            self.tell(f"drain command ran: {shlex.join(argv)}")
        else:
            self.tell(f"drain command exited {code} ({shlex.join(argv)})" + (f": {said[-1]}" if said else ""))

    def close(self) -> None:
        self._pool.shutdown(wait=True)

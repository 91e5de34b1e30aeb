"""Log files under the log roots, opened first and checked after: what triage reads is what was checked.

Checking a path and then reading it by name leaves a window in which a symlink swapped in sends the read out of
the roots. So every file is opened first, and the opened file's own path (/proc/self/fd/N) must lie under a root;
triage then reads it through that descriptor, by way of a folder of links to /proc/PID/fd/N named as the files
are (evidence still cites `node3/rank0.log`). The links name this process, so they hold in triage's worker
processes too, whatever their start method. The same pass caps what one ask may read. Linux only (/proc).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from crashcart.knowledge.errors import InputError
from crashcart.parsers.models import Skipped
from crashcart.parsers.sources import _SKIP_SUFFIXES  # the files a folder triage skips (checkpoints, images ...)

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY  # a FIFO or a terminal under the roots must not block the open


@dataclass(frozen=True)
class ReadLimits:
    """What one ask may read: bytes on disk and files, across everything its paths hold."""

    bytes: int
    files: int


@dataclass(frozen=True)
class Opened:
    """What to triage (links to the open files) and what could not be opened, named as triage names files."""

    paths: list[Path]
    skipped: list[Skipped]


def open_under_roots(
    paths: Sequence[Path], roots: Sequence[Path], view: Path, limits: ReadLimits, stack: ExitStack
) -> Opened:
    """Open every log file `paths` name (folders walked) and refuse the ask if one, once opened, is not under a
    root; the links in `view` lead to the open files, which stay open until `stack` closes. A file that cannot
    be opened is skipped, unless nothing can be."""
    paths = list(dict.fromkeys(paths))
    opener = _Opener([r.resolve() for r in roots], view, limits, stack)
    one_file = len(paths) == 1 and not paths[0].is_dir()
    base = paths[0].parent if one_file else Path(os.path.commonpath(paths))
    for path in paths:
        opener.add(path, path.relative_to(base))
    if opener.files == 0 and opener.skipped:
        reasons = "; ".join(f"{s.path}: {s.reason}" for s in opener.skipped[:3])
        raise InputError(f"no log file of {_named(paths)} could be read: {reasons}")
    if opener.files == 0:
        raise InputError(f"no log files under {_named(paths)}: expected text, .gz or .zst files")
    return Opened(paths=[view / paths[0].name] if one_file else [view], skipped=opener.skipped)


def _named(paths: Sequence[Path]) -> str:
    return str(paths[0]) if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"


class _Opener:
    def __init__(self, roots: list[Path], view: Path, limits: ReadLimits, stack: ExitStack) -> None:
        self.roots, self.view, self.limits, self.stack = roots, view, limits, stack
        self.files = self.bytes = 0
        self.skipped: list[Skipped] = []

    def add(self, path: Path, shown: Path) -> None:
        """A path the ask named: a folder is walked, a regular file linked, anything else refused."""
        opened = self._open(path, path, path)
        if opened is None:
            return
        fd, st = opened
        if stat.S_ISDIR(st.st_mode):
            self._walk(fd, path, shown)
        elif stat.S_ISREG(st.st_mode):
            self._link(fd, st, path, shown)
        else:
            raise InputError(f"{path} is not a regular file or folder")

    def _walk(self, dir_fd: int, asked: Path, shown: Path) -> None:
        """Every file below the opened folder, as triage's folder walk would pick them."""
        top = f"/proc/self/fd/{dir_fd}"

        def unlisted(exc: OSError) -> None:
            where = shown / os.path.relpath(exc.filename, top) if exc.filename else shown
            self.skipped.append(Skipped(path=str(where), reason=f"cannot list this folder ({exc.strerror or exc})"))

        for dirpath, dirnames, filenames in os.walk(top, onerror=unlisted):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.startswith(".") or Path(name).suffix.lower() in _SKIP_SUFFIXES:
                    continue
                rel = Path(os.path.relpath(os.path.join(dirpath, name), top))
                opened = self._open(Path(dirpath) / name, asked / rel, shown / rel)
                if opened is not None and stat.S_ISREG(opened[1].st_mode):
                    self._link(*opened, asked, shown / rel)

    def _open(self, path: Path, named: Path, shown: Path) -> tuple[int, os.stat_result] | None:
        """Open, then check where the opened file really is: a swapped symlink shows up here. None (and the
        file listed as skipped) when it cannot be opened."""
        try:
            fd = os.open(path, _FLAGS)
        except OSError as exc:
            self.skipped.append(Skipped(path=str(shown), reason=f"cannot read ({exc.strerror or exc})"))
            return None
        self.stack.callback(os.close, fd)
        real = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if not any(real.is_relative_to(root) for root in self.roots):
            raise InputError(
                f"{named} leads out of the log roots crashcart may read (it changed while crashcart opened it); "
                "ask about the files themselves"
            )
        return fd, os.fstat(fd)

    def _link(self, fd: int, st: os.stat_result, asked: Path, shown: Path) -> None:
        link = self.view / shown
        if link.is_symlink():  # named twice (a folder and a file in it)
            return
        self.files += 1
        self.bytes += st.st_size
        if self.files > self.limits.files:
            raise InputError(
                f"{asked} holds more than {self.limits.files:,} log files, over the bot's limit (max_read_files): "
                "ask about one job's folder, or triage it with the crashcart CLI"
            )
        if self.bytes > self.limits.bytes:
            raise InputError(
                f"{asked} holds more than {self.limits.bytes:,} bytes of logs, over the bot's limit (max_read_bytes): "
                "ask about one job's logs, or triage them with the crashcart CLI"
            )
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(f"/proc/{os.getpid()}/fd/{fd}")

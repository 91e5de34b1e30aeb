"""Following growing log files by polling their size and inode: new whole lines as they arrive.

Polling (os.stat), not inotify: inotify sees nothing of what another NFS or Lustre client writes, and a training
job's logs are on such filesystems. Each file is opened, read from its offset and closed on every poll that finds
it grown, so a job of thousands of per-rank files holds no descriptors. Memory is bounded: per file an offset, a
line count and the partial last line (at most MAX_PARTIAL), never the lines already handed on.

A file is known by its inode: a rename inside a watched folder (`train.log` -> `train.log.1`) carries its offset
with it, a new file at a watched path (rotation) or a file that shrank (truncation) is read again from its start.
Compressed files (.gz, .zst) are written whole by whoever compresses them: each is read once, when its size has
stopped changing for SETTLE_S.
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import zstandard

from crashcart.knowledge.errors import ReadError
from crashcart.parsers.sniff import SNIFF_BYTES, Compression, compression_of, decoded_head, not_text
from crashcart.parsers.sources import Source, printable, read_blocks, walk_logs

READ_BYTES = 1 << 20  # read at a time from a grown file: the most a chunk holds
MAX_READ_PER_POLL = 16 << 20  # read from one file per poll, so one fast writer cannot hold up the others' lines
MAX_PARTIAL = 1 << 20  # a partial line longer than this is handed on as a line: memory stays bounded
SETTLE_S = 2.0  # a compressed file is read once its size has not changed for this long


class Chunk(NamedTuple):
    """Whole lines of one file (each ends with b'\\n'); `base` lines of that file came before them."""

    file: str
    base: int
    data: bytes


class Note(NamedTuple):
    """Something the follower did that its user should hear of: a file restarted, skipped or unreadable."""

    file: str
    what: Literal["watching", "new", "rotated", "truncated", "skipped", "unreadable"]
    detail: str = ""


@dataclass(slots=True)
class _Followed:
    """One followed file: where its reading stands."""

    display: str
    path: Path
    inode: tuple[int, int]
    offset: int = 0
    lines: int = 0
    partial: bytes = b""
    compression: Compression = "none"
    settled_size: int = -1  # a compressed file: the size it last had, and since when
    settled_since: float = 0.0
    done: bool = False  # a compressed file read to its end, or a file that is not text


class Follower:
    """Follows files and folders; each `poll` returns the new whole lines of every file and notes on the way."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)
        self._files: dict[tuple[int, int], _Followed] = {}
        self._by_path: dict[Path, tuple[int, int]] = {}
        self.last_growth: float | None = None  # when a file last grew (monotonic); the first poll's time at first

    @property
    def files(self) -> int:
        return len(self._files)

    def poll(self, now: float | None = None) -> tuple[list[Chunk], list[Note]]:
        """Read what every file gained since the last poll; lines are cut at the last newline of each file."""
        now = time.monotonic() if now is None else now
        if self.last_growth is None:
            self.last_growth = now
        chunks: list[Chunk] = []
        notes: list[Note] = []
        found = list(self._stats())
        seen = {key for _, _, key, _ in found}
        for path, display, key, size in found:
            followed = self._track(path, display, key, seen, notes)
            if not followed.done and self._read(followed, size, now, chunks, notes):
                self.last_growth = now
        for key in [k for k in self._files if k not in seen]:  # deleted, or rotated away out of sight
            del self._files[key]
        self._by_path = {f.path: k for k, f in self._files.items()}
        return chunks, notes

    def _stats(self) -> Iterator[tuple[Path, str, tuple[int, int], int]]:
        """(path, display name, inode, size) of every file to follow now."""
        for path, display in self._candidates():
            try:
                st = os.stat(path)
            except OSError:
                continue  # gone between the listing and the stat: the next poll sees what replaced it
            yield path, display, (st.st_dev, st.st_ino), st.st_size

    def _candidates(self) -> Iterator[tuple[Path, str]]:
        """Every file to follow now: the files given, and the log files below the folders given (walked anew)."""
        alone = len(self.paths) == 1
        for root in self.paths:
            if root.is_dir():
                for path, error in walk_logs(root):
                    if error is None:
                        yield path, printable(path.relative_to(root) if alone else path)
            else:
                yield root, printable(root.name if alone else root)

    def _track(
        self, path: Path, display: str, key: tuple[int, int], seen: set[tuple[int, int]], notes: list[Note]
    ) -> _Followed:
        """The file's state: carried over from its inode (a rename keeps its offset), else a new file."""
        followed = self._files.get(key)
        if followed is not None:
            followed.path, followed.display = path, display
            return followed
        old = self._by_path.get(path)
        if old is not None and old in self._files:  # same path, new inode: rotated
            if old not in seen:  # the old file is out of sight; in sight, it is followed under its new name
                del self._files[old]
            notes.append(Note(display, "rotated", "a new file at this path: read from its start"))
        else:
            notes.append(Note(display, "new"))
        followed = self._files[key] = _Followed(display=display, path=path, inode=key)
        self._by_path[path] = key
        return followed

    def _read(self, f: _Followed, size: int, now: float, chunks: list[Chunk], notes: list[Note]) -> bool:
        """Hand on what the file gained; whether it grew."""
        if size < f.offset:  # truncated (copytruncate, or `>` on the file): its lines start over
            notes.append(Note(f.display, "truncated", f"shrank to {size:,} bytes: read from its start"))
            f.offset, f.lines, f.partial = 0, 0, b""
        if size == f.offset:
            return False
        if f.offset == 0 and not self._sniff(f, notes):
            return False
        if f.compression != "none":
            self._read_compressed(f, size, now, chunks, notes)
            return True
        try:
            with open(f.path, "rb") as fh:
                fh.seek(f.offset)
                left = MAX_READ_PER_POLL
                while left > 0:
                    data = fh.read(min(READ_BYTES, left))
                    if not data:
                        break
                    f.offset += len(data)
                    left -= len(data)
                    self._lines(f, data, chunks)
        except OSError as exc:
            notes.append(Note(f.display, "unreadable", exc.strerror or str(exc)))
        return True

    def _sniff(self, f: _Followed, notes: list[Note]) -> bool:
        """Whether the file is a log (text, or .gz/.zst), told by its head as triage's discovery tells it; a
        compressed file's text is checked once it has settled (its head may be cut short while being written)."""
        head = self._head(f, notes)
        if head is None:
            return False
        f.compression = compression_of(head)
        return f.compression != "none" or self._text(f, head, notes)

    def _head(self, f: _Followed, notes: list[Note]) -> bytes | None:
        try:
            with open(f.path, "rb") as fh:
                return fh.read(SNIFF_BYTES)
        except OSError as exc:
            notes.append(Note(f.display, "unreadable", exc.strerror or str(exc)))
            return None

    def _text(self, f: _Followed, head: bytes, notes: list[Note]) -> bool:
        try:
            reason = not_text(decoded_head(head, f.compression))
        except (zlib.error, zstandard.ZstdError) as exc:
            reason = f"corrupt {f.compression} data at the start ({exc})"
        if reason:
            f.done = True
            notes.append(Note(f.display, "skipped", reason))
        return reason is None

    def _read_compressed(self, f: _Followed, size: int, now: float, chunks: list[Chunk], notes: list[Note]) -> None:
        """Read a .gz/.zst file whole once its size has settled; until then, only note the size."""
        if size != f.settled_size:
            f.settled_size, f.settled_since = size, now
            return
        if now - f.settled_since < SETTLE_S:
            return
        f.offset, f.done = size, True
        head = self._head(f, notes)
        if head is None or not self._text(f, head, notes):
            return
        try:
            for block in read_blocks(Source(display=f.display, path=f.path, compression=f.compression, size=size)):
                self._lines(f, block, chunks)
        except (ReadError, OSError) as exc:
            notes.append(Note(f.display, "unreadable", exc.reason if isinstance(exc, ReadError) else str(exc)))
        self._flush(f, chunks)

    def _lines(self, f: _Followed, data: bytes, chunks: list[Chunk]) -> None:
        """Append data to the file's partial line and hand on the whole lines; a too long partial line goes too."""
        cut = data.rfind(b"\n") + 1
        if not cut:
            f.partial += data
            if len(f.partial) > MAX_PARTIAL:
                self._flush(f, chunks)
            return
        whole = f.partial + data[:cut] if f.partial else data[:cut]
        f.partial = data[cut:]
        chunks.append(Chunk(f.display, f.lines, whole))
        f.lines += whole.count(b"\n")

    def _flush(self, f: _Followed, chunks: list[Chunk]) -> None:
        """Hand on the partial line as a line (a file's last line without its newline, or an overlong one)."""
        if f.partial:
            chunks.append(Chunk(f.display, f.lines, f.partial + b"\n"))
            f.lines += 1
            f.partial = b""

"""Where log bytes come from: files, folders of per-node/per-rank files, .gz/.zst, or stdin.

Reading is streaming and block-wise: blocks end on a line boundary, so each stage after this one sees
whole lines and memory stays bounded by the block size (and, for pathological inputs, by MAX_LINE).
One bad file never sinks a job: discovery lists what it cannot read (unreadable, binary, corrupt at the start)
as skipped, with why, and only a job with nothing readable at all is an error; a file that stops being
readable part-way (truncated, corrupt, over a size cap) raises ReadError after the blocks before the fault.
"""

from __future__ import annotations

import io
import os
import sys
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

import zstandard
from pydantic import Field

from crashcart.knowledge.errors import InputError, ReadError
from crashcart.knowledge.records import Frozen, Strict
from crashcart.parsers.decompress import Truncated, gzip_chunks, zstd_chunks
from crashcart.parsers.models import Skipped
from crashcart.parsers.sniff import SNIFF_BYTES, Compression, compression_of, decoded_head, not_text

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

BLOCK_SIZE = 4 << 20
MAX_LINE = 8 << 20  # a longer line keeps its first MAX_LINE bytes; the rest of that line is passed over
STDIN = "<stdin>"
_SKIP_SUFFIXES = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".pdf",
        ".pt",
        ".pth",
        ".bin",
        ".safetensors",
        ".ckpt",
        ".npy",
        ".npz",
        ".pkl",
        ".pickle",
        ".tar",
        ".zip",
        ".so",
        ".whl",
        ".parquet",
        ".arrow",
        ".db",
        ".sqlite",
        ".index",
    }
)


class ReadCap(Frozen):
    """At most `bytes` of decompressed text per compressed file (a 100 KB upload can hold gigabytes).

    `setting` names what raises the limit, for the message: "max_decompressed_bytes in bot.yaml".
    """

    bytes: int = Field(gt=0)
    setting: str


class Source(Frozen):
    """One stream of log text and the name it is shown under in evidence."""

    display: str
    path: Path | None = None  # None means standard input
    compression: Compression = "none"
    size: int = 0  # bytes on disk (compressed size for .gz/.zst; 0 for stdin)
    start: int = 0  # a byte range of a plain file (a part of it scanned on its own); whole file by default
    end: int | None = None
    cap: ReadCap | None = None  # a compressed source stops with a ReadError past this much decompressed text
    head: bytes = b""  # stdin only: its first bytes, taken to tell the compression and put back when read


class Discovery(Strict):
    """What the paths hold: the sources to read, and what was left out, with why."""

    sources: list[Source]
    skipped: list[Skipped] = Field(default_factory=list)


def printable(path: str | Path) -> str:
    """A path as text that JSON and terminals take: bytes of a name that are not UTF-8 are shown as \\xNN."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def discover(paths: Sequence[str], cap: ReadCap | None = None) -> Discovery:
    """Expand the user's paths into sources; a missing path is an InputError, and so is nothing readable."""
    if not paths:
        raise InputError("no log path given: pass a file, a folder of logs, or - for stdin")
    found = Discovery(sources=[])
    for raw in paths:
        for item in _discover_path(raw, alone=len(paths) == 1):
            if isinstance(item, Skipped):
                found.skipped.append(item)
            else:
                found.sources.append(item.model_copy(update={"cap": cap}) if cap else item)
    if not found.sources:
        raise nothing_read(found.skipped)
    return found


def nothing_read(skipped: Sequence[Skipped]) -> InputError:
    """The error for a job of which nothing could be read: the first few reasons, and how many more."""
    shown = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return InputError(f"no log could be read: {shown}{more}")


def _discover_path(raw: str, alone: bool) -> list[Source | Skipped]:
    if raw == "-":
        return [_stdin_source()]
    path = Path(raw)
    try:
        is_dir, is_file, exists = path.is_dir(), path.is_file(), path.exists()
    except OSError as exc:  # a name too long for the system, say
        raise InputError(f"cannot read {printable(path)}: {exc.strerror or exc}") from exc
    if is_dir:
        return _discover_dir(path, relative=alone)
    if is_file:
        return [_file_source(path, printable(path.name if alone else path))]
    if exists:
        raise InputError(f"{printable(path)} is not a regular file or folder")
    raise InputError(f"no such file or folder: {printable(path)}")


def _discover_dir(root: Path, relative: bool = True) -> list[Source | Skipped]:
    """Every readable text log below root (recursively), binaries and unreadable files and folders skipped.

    Named relative to root when root is the only path given; with several paths, by the full path
    (as files are), so two folders with the same layout do not give two sources the same name.
    """
    found: list[Source | Skipped] = []
    for path, error in walk_logs(root):
        name = printable(path.relative_to(root) if relative and path != root else path)
        if error is not None:
            found.append(Skipped(path=name, reason=f"cannot list this folder ({error.strerror or error})"))
        else:
            found.append(_file_source(path, name))
    if not found:
        found.append(Skipped(path=printable(root), reason="holds no text, .gz or .zst log files"))
    return found


def walk_logs(root: Path) -> Iterator[tuple[Path, OSError | None]]:
    """Candidate log files below root in os.walk's order (a folder's files, then its sub-folders, by name).

    Iterative, so a tree 1,000 folders deep is walked like any other; a folder that cannot be listed comes with
    its error. Hidden names and the suffixes of checkpoints, images and archives are left out; symlinked
    folders are not followed.
    """
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
        except OSError as exc:
            yield folder, exc
            continue
        for entry in entries:
            if Path(entry.name).suffix.lower() not in _SKIP_SUFFIXES and _entry_is(entry, file=True):
                yield Path(entry.path), None
        stack += [Path(e.path) for e in reversed(entries) if _entry_is(e, file=False)]


def _entry_is(entry: os.DirEntry[str], file: bool) -> bool:
    try:
        return entry.is_file() if file else entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _file_source(path: Path, display: str) -> Source | Skipped:
    try:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
        size = path.stat().st_size
    except OSError as exc:
        return Skipped(path=display, reason=f"cannot read ({exc.strerror or exc})")
    return _sniffed(Source(display=display, path=path, size=size), head)


def _stdin_source() -> Source | Skipped:
    if sys.stdin is None:  # started with standard input closed
        raise InputError("no standard input to read: pipe a log into `crashcart triage -`, or give a path")
    try:
        head = sys.stdin.buffer.read(SNIFF_BYTES)
    except OSError as exc:
        return Skipped(path=STDIN, reason=f"cannot read ({exc.strerror or exc})")
    return _sniffed(Source(display=STDIN, head=head), head)


def _sniffed(src: Source, head: bytes) -> Source | Skipped:
    """The source with its compression (by magic bytes), or why it is not a log."""
    compression = compression_of(head)
    try:
        reason = not_text(decoded_head(head, compression))
    except (zlib.error, zstandard.ZstdError) as exc:
        reason = f"corrupt {compression} data at the start ({exc}); re-copy the file"
    if reason:
        return Skipped(path=src.display, reason=reason)
    return src.model_copy(update={"compression": compression})


def read_blocks(src: Source, block_size: int = BLOCK_SIZE) -> Iterator[bytes]:
    """Yield the decoded text in blocks that each start a line and end with b'\\n' (the last one may not).

    A line over MAX_LINE is cut there, and the rest of it passed over, so line numbers stay true. A file that
    stops being readable part-way raises ReadError after the blocks (and the part line) before the fault.
    """
    raw = _open_raw(src)
    try:
        yield from _line_blocks(_decoded_chunks(src, raw, block_size))
    finally:
        raw.close()


def numbered_lines(src: Source, first: int = 1, last: int | None = None) -> Iterator[tuple[int, str]]:
    """(line number, text) from line `first` to `last` of a source, streamed; the blocks before `first` are only
    counted (in native code). Read again after a scan, so a file gone or damaged since ends the lines early."""
    no = 0
    try:
        for block in read_blocks(src.model_copy(update={"start": 0, "end": None})):
            count = block.count(b"\n") + (not block.endswith(b"\n"))
            if no + count < first:
                no += count
                continue
            for raw in block.split(b"\n")[:count]:
                no += 1
                if no >= first:
                    if last is not None and no > last:
                        return
                    yield no, raw.decode("utf-8", errors="replace").rstrip("\r")
    except (OSError, ReadError):
        return


def _line_blocks(chunks: Iterator[bytes]) -> Iterator[bytes]:
    carry = b""
    passing = False  # inside a line cut at MAX_LINE: its rest, up to its newline, is passed over
    try:
        for chunk in chunks:
            if passing:
                end = chunk.find(b"\n")
                if end < 0:
                    continue
                chunk, passing = chunk[end + 1 :], False
            data = carry + chunk if carry else chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0 and len(data) >= MAX_LINE:
                yield data[:MAX_LINE]  # one enormous line: the first MAX_LINE bytes of it, as one line
                carry, passing = b"", True
            elif cut == 0:
                carry = data
            else:
                carry = data[cut:]
                yield data[:cut]
    except ReadError:
        if carry:
            yield carry  # the last line before the fault, as far as it goes: a node that died mid-write
        raise
    if carry:
        yield carry


def _open_raw(src: Source) -> IO[bytes]:
    if src.path is None:
        return io.BufferedReader(_Replay(src.head, sys.stdin.buffer))
    try:
        return src.path.open("rb")
    except OSError as exc:
        raise ReadError(src.display, f"cannot read ({exc.strerror or exc})") from exc


class _Replay(io.RawIOBase):
    """Standard input with the bytes discovery took from it put back in front (closing it leaves stdin open)."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        if self._head:
            data, self._head = self._head[: len(view)], self._head[len(view) :]
        else:
            data = self._rest.read(len(view))
        view[: len(data)] = data
        return len(data)


def _decoded_chunks(src: Source, raw: IO[bytes], size: int) -> Iterator[bytes]:
    try:
        if src.compression == "gzip":
            yield from _capped(src, gzip_chunks(raw, size))
        elif src.compression == "zstd":
            yield from _capped(src, zstd_chunks(raw, size))
        else:
            yield from _plain_chunks(src, raw, size)
    except Truncated as exc:
        raise ReadError(src.display, "truncated zstd stream (ends inside a frame); re-copy the file") from exc
    except (EOFError, zlib.error) as exc:
        raise ReadError(src.display, f"corrupt or truncated gzip ({exc}); re-copy the file") from exc
    except zstandard.ZstdError as exc:
        raise ReadError(src.display, f"corrupt zstd stream ({exc}); re-copy the file") from exc
    except OSError as exc:
        raise ReadError(src.display, f"cannot read ({exc.strerror or exc})") from exc


def _capped(src: Source, chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks, up to the source's cap on decompressed bytes; past it, a ReadError naming the setting."""
    if src.cap is None:
        yield from chunks
        return
    left = limit = src.cap.bytes
    for chunk in chunks:
        if len(chunk) > left:
            if left:
                yield chunk[:left]
            raise ReadError(
                src.display,
                f"decompresses to more than {limit:,} bytes, the limit set by {src.cap.setting}: "
                f"only the first {limit:,} were read (raise {src.cap.setting} to read it all)",
            )
        left -= len(chunk)
        yield chunk


def _plain_chunks(src: Source, raw: IO[bytes], size: int) -> Iterator[bytes]:
    if src.start:
        raw.seek(src.start)
    left = None if src.end is None else src.end - src.start
    while left is None or left > 0:
        chunk = raw.read(size if left is None else min(size, left))
        if not chunk:
            return
        if left is not None:
            left -= len(chunk)
        yield chunk


def split(src: Source, parts: int) -> list[Source]:
    """A plain file as up to `parts` byte ranges that start and end on line boundaries, to scan in parallel."""
    if parts < 2 or src.path is None or src.compression != "none" or src.start or src.end is not None:
        return [src]
    cuts = [0]
    try:
        with src.path.open("rb") as fh:
            for i in range(1, parts):
                fh.seek(max(cuts[-1], src.size * i // parts))
                fh.readline()  # to the start of the next line
                if fh.tell() < src.size and fh.tell() > cuts[-1]:
                    cuts.append(fh.tell())
    except OSError as exc:
        raise InputError(f"cannot read {src.path}: {exc.strerror or exc}") from exc
    cuts.append(src.size)
    return [src.model_copy(update={"start": a, "end": b}) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]

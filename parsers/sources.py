"""Where log bytes come from: files, folders of per-node/per-rank files, .gz/.zst, or stdin.

Reading is streaming and block-wise: blocks end on a line boundary, so each stage after this one sees
whole lines and memory stays bounded by the block size (and, for pathological inputs, by MAX_LINE).
"""

from __future__ import annotations

import gzip
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Literal

import zstandard

from crashcart.knowledge.errors import InputError
from crashcart.knowledge.records import Frozen

BLOCK_SIZE = 4 << 20
MAX_LINE = 8 << 20  # a longer line is cut here (the rest still read, as the next line)
SNIFF_BYTES = 8192
ZSTD_READ = 1 << 16  # compressed bytes per step: one step's output stays small even at extreme ratios
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
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
# Bytes that never occur in text logs (NUL and C0 controls other than \t \n \v \f \r ESC).
_BINARY_BYTES = bytes(set(range(32)) - {9, 10, 11, 12, 13, 27})

Compression = Literal["none", "gzip", "zstd"]


class Source(Frozen):
    """One stream of log text and the name it is shown under in evidence."""

    display: str
    path: Path | None = None  # None means standard input
    compression: Compression = "none"
    size: int = 0  # bytes on disk (compressed size for .gz/.zst; 0 for stdin)
    start: int = 0  # a byte range of a plain file (a part of it scanned on its own); whole file by default
    end: int | None = None


def discover(paths: list[str]) -> list[Source]:
    """Expand the user's paths into sources; every problem is an InputError that names the path."""
    if not paths:
        raise InputError("no log path given: pass a file, a folder of logs, or - for stdin")
    sources: list[Source] = []
    for raw in paths:
        if raw == "-":
            sources.append(Source(display="<stdin>"))
            continue
        path = Path(raw)
        if path.is_dir():
            found = _discover_dir(path, relative=len(paths) == 1)
            if not found:
                raise InputError(f"no log files under {path}: expected text, .gz or .zst files")
            sources.extend(found)
        elif path.is_file():
            src = _file_source(path, path.name if len(paths) == 1 else str(path))
            if _looks_binary(src):
                raise InputError(f"{path} is a binary file, not a log: pass the job's text/.gz/.zst logs")
            sources.append(src)
        elif path.exists():
            raise InputError(f"{path} is not a regular file or folder")
        else:
            raise InputError(f"no such file or folder: {path}")
    return sources


def _discover_dir(root: Path, relative: bool = True) -> list[Source]:
    """Every readable text log below root (recursively), binaries skipped.

    Named relative to root when root is the only path given; with several paths, by the full path
    (as files are), so two folders with the same layout do not give two sources the same name.
    """
    found: list[Source] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name.startswith(".") or path.suffix.lower() in _SKIP_SUFFIXES or not path.is_file():
                continue
            src = _file_source(path, str(path.relative_to(root)) if relative else str(path))
            if not _looks_binary(src):
                found.append(src)
    return found


def _file_source(path: Path, display: str) -> Source:
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    compression: Compression = "none"
    if magic.startswith(_GZIP_MAGIC):
        compression = "gzip"
    elif magic.startswith(_ZSTD_MAGIC):
        compression = "zstd"
    return Source(display=display, path=path, compression=compression, size=size)


def _looks_binary(src: Source) -> bool:
    """True when the first decoded bytes are mostly non-text (an image, a checkpoint, an executable)."""
    head = b""
    for block in read_blocks(src, block_size=SNIFF_BYTES, sniff=True):
        head = block[:SNIFF_BYTES]
        break
    if not head:
        return False
    odd = len(head) - len(head.translate(None, _BINARY_BYTES))
    return odd / len(head) > 0.10


def read_blocks(src: Source, block_size: int = BLOCK_SIZE, sniff: bool = False) -> Iterator[bytes]:
    """Yield the decoded text in blocks that end with b'\\n' (the last one may not).

    With sniff=True only the start is read and a truncated compressed stream is not an error.
    """
    raw = _open_raw(src)
    try:
        chunks = _decoded_chunks(src, raw, block_size, sniff)
        carry = b""
        for chunk in chunks:
            data = carry + chunk if carry else chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0 and len(data) < MAX_LINE:
                carry = data
                continue
            if cut == 0:
                cut = len(data)  # one enormous line: emit it cut at MAX_LINE rather than grow forever
            carry = data[cut:]
            yield data[:cut]
        if carry:
            yield carry
    finally:
        if src.path is not None:
            raw.close()


def _open_raw(src: Source) -> BinaryIO:
    if src.path is None:
        return sys.stdin.buffer
    try:
        return src.path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read {src.path}: {exc.strerror or exc}") from exc


def _decoded_chunks(src: Source, raw: BinaryIO, size: int, sniff: bool) -> Iterator[bytes]:
    try:
        if src.compression == "gzip":
            yield from _gzip_chunks(raw, size)
        elif src.compression == "zstd":
            yield from _zstd_chunks(src, raw, size, sniff)
        else:
            yield from _plain_chunks(src, raw, size)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        if not sniff:
            raise InputError(f"{src.display}: corrupt or truncated gzip ({exc}); re-copy the file") from exc
    except zstandard.ZstdError as exc:
        raise InputError(f"{src.display}: corrupt zstd stream ({exc}); re-copy the file") from exc
    except OSError as exc:
        raise InputError(f"cannot read {src.display}: {exc.strerror or exc}") from exc


def _plain_chunks(src: Source, raw: BinaryIO, size: int) -> Iterator[bytes]:
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


def _gzip_chunks(raw: BinaryIO, size: int) -> Iterator[bytes]:
    with gzip.GzipFile(fileobj=raw) as fh:
        while chunk := fh.read(size):
            yield chunk


def _zstd_chunks(src: Source, raw: BinaryIO, size: int, sniff: bool) -> Iterator[bytes]:
    """Decode concatenated zstd frames; a stream that ends inside a frame is truncated."""
    dctx = zstandard.ZstdDecompressor()
    dobj = dctx.decompressobj()
    in_frame = False  # bytes of the current frame consumed but its end not yet seen
    while chunk := raw.read(min(size, ZSTD_READ)):
        while chunk:
            in_frame = True
            out = dobj.decompress(chunk)
            if out:
                yield out
            chunk = b""
            if dobj.eof:
                chunk, in_frame = dobj.unused_data, False
                dobj = dctx.decompressobj()
    if in_frame and not sniff:
        raise InputError(f"{src.display}: truncated zstd stream (ends inside a frame); re-copy the file")

"""Decompressing gzip and zstd in bounded pieces: a 100 KB file that holds gigabytes never sits in memory whole.

zlib bounds each step's output (max_length). zstd's one-shot decompress() returns a whole frame, so zstd is
read through the streaming reader, at most one block a step; that reader says nothing when a stream stops
inside a frame, so the frame and block headers (RFC 8878) are followed as the compressed bytes go in, to tell
a copy cut short from a complete one.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING

import zstandard

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

GZIP_READ = 1 << 16  # compressed bytes fed per step
ZSTD_READ = 1 << 16
_ZSTD_FRAME = 0xFD2FB528
_SKIPPABLE_FRAME = 0x184D2A50  # the 16 magics 0x184D2A50..5F


class Truncated(Exception):
    """The compressed stream ended inside a frame."""


def gzip_chunks(raw: IO[bytes], size: int) -> Iterator[bytes]:
    """The decompressed bytes of concatenated gzip members, at most `size` a step; EOFError if one is cut short.

    zlib, not GzipFile: GzipFile.read drops what it decoded in the call that meets a truncation, and that is the
    last thing a node wrote before it died. Zero padding after a member is passed over, as gzip(1) does.
    """
    member, in_member, ended, data = zlib.decompressobj(wbits=31), False, False, b""
    while True:
        if not data and not ended:
            data = raw.read(GZIP_READ)
            ended = not data
        if not in_member:
            data = data.lstrip(b"\x00")
            if not data and ended:
                return
            if not data:
                continue
            member, in_member = zlib.decompressobj(wbits=31), True  # 31: a gzip header and trailer (CRC, size)
        out = member.decompress(data, size)
        if out:
            yield out
        if member.eof:
            data, in_member = member.unused_data, False
            continue
        data = member.unconsumed_tail
        if ended and not data and not out:
            raise EOFError("Compressed file ended before the end-of-stream marker was reached")


def zstd_chunks(raw: IO[bytes], size: int) -> Iterator[bytes]:
    """The decompressed bytes of concatenated zstd frames, at most `size` a step; Truncated if cut in a frame."""
    walk = FrameWalk()
    source = io.BufferedReader(_Watched(raw, walk.feed), ZSTD_READ)
    dctx = zstandard.ZstdDecompressor()
    with dctx.stream_reader(source, read_size=ZSTD_READ, read_across_frames=True, closefd=False) as reader:
        while chunk := reader.read(size):
            yield chunk
    if not walk.between_frames:
        raise Truncated


class _Watched(io.RawIOBase):
    """A readable stream that shows every byte read from it to `watch` on the way."""

    def __init__(self, raw: IO[bytes], watch: Callable[[bytes], None]) -> None:
        self._raw, self._watch = raw, watch

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self._raw.read(len(view))
        view[: len(data)] = data
        self._watch(data)
        return len(data)


class FrameWalk:
    """Follows zstd frame headers, block headers and skippable frames over the compressed bytes as they pass.

    It decodes nothing: it only knows where each frame ends, so that the end of the input can be told to fall
    between frames (a whole stream) or inside one (a truncated copy). Bytes that are not a frame stop the walk:
    the decoder reports those itself.
    """

    def __init__(self) -> None:
        self._head = bytearray()  # the header being read: a frame's (6 to 18 bytes) or a block's (3)
        self._skip = 0  # bytes to pass over: a block's content, a skippable frame, a frame's checksum
        self._in_frame = False  # after a frame header, until its last block
        self._checksum = False  # the current frame ends with a 4-byte content checksum
        self._lost = False

    @property
    def between_frames(self) -> bool:
        return self._lost or not (self._head or self._skip or self._in_frame)

    def feed(self, data: bytes) -> None:
        pos = 0
        while pos < len(data) and not self._lost:
            if self._skip:
                step = min(self._skip, len(data) - pos)
                self._skip -= step
                pos += step
                continue
            need = self._need()
            take = min(need - len(self._head), len(data) - pos)
            self._head += data[pos : pos + take]
            pos += take
            if len(self._head) == need == self._need():
                self._header(bytes(self._head))
                self._head.clear()

    def _need(self) -> int:
        """How long the header being read is, as far as its first bytes tell."""
        head = self._head
        if self._in_frame:
            return 3
        if len(head) < 4:
            return 4
        magic = int.from_bytes(head[:4], "little")
        if magic & 0xFFFFFFF0 == _SKIPPABLE_FRAME:
            return 8
        if magic != _ZSTD_FRAME or len(head) < 5:
            return max(5, len(head))
        fhd = head[4]  # Frame_Header_Descriptor: content-size field, single segment, checksum, dictionary id
        single = fhd >> 5 & 1
        return 5 + (1 - single) + (0, 1, 2, 4)[fhd & 3] + (single, 2, 4, 8)[fhd >> 6]

    def _header(self, head: bytes) -> None:
        if self._in_frame:
            block = int.from_bytes(head, "little")  # Last_Block (1 bit), Block_Type (2), Block_Size (21)
            kind, size = block >> 1 & 3, block >> 3
            self._skip = 1 if kind == 1 else size  # an RLE block holds one byte, repeated Block_Size times
            if block & 1:
                self._in_frame = False
                self._skip += 4 * self._checksum
            return
        magic = int.from_bytes(head[:4], "little")
        if magic & 0xFFFFFFF0 == _SKIPPABLE_FRAME:
            self._skip = int.from_bytes(head[4:8], "little")
        elif magic == _ZSTD_FRAME:
            self._in_frame, self._checksum = True, bool(head[4] >> 2 & 1)
        else:
            self._lost = True

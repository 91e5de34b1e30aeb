"""Is it a log? What the first bytes of a file say: how it is compressed, and whether its text is text.

Compression is told by magic bytes (gzip, zstd), never by the name. The decoded start is then checked twice:
against the magic bytes of binary formats a job folder holds (checkpoints, arrays, images, archives, executables
and core dumps, and compressors crashcart does not read), and by a text test. The text test alone cannot tell
compressed or encrypted data from text by control bytes: random bytes are ~10% C0 controls, as much as a log
with a few stray NULs; but such data is also mostly invalid UTF-8, which a log (UTF-8 or Latin-1, GBK ...) is
not at the same time as it is full of controls.
"""

from __future__ import annotations

import io
import zlib
from typing import Literal

import zstandard

Compression = Literal["none", "gzip", "zstd"]

SNIFF_BYTES = 8192
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAX_CONTROL = 0.10  # over this share of C0 controls: binary whatever the rest
MIN_CONTROL = 0.02  # ... and from this share, binary when the bytes are also mostly not UTF-8
MAX_NOT_UTF8 = 0.20

# (offset, magic, what it is). Only long or unmistakable signatures: a two-letter one ("BM", bitmaps) would
# reject a log whose first line starts with those letters. From the formats' specifications (and file(1)).
_FORMATS: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x7fELF", "an ELF executable or core dump"),
    (0, b"PK\x03\x04", "a zip archive (PyTorch checkpoints, .npz and wheels are zip files)"),
    (0, b"\x93NUMPY", "a NumPy array"),
    (0, b"\x89HDF\r\n\x1a\n", "an HDF5 file"),
    (0, b"PAR1", "a Parquet file"),
    (0, b"ARROW1", "an Arrow file"),
    (0, b"SQLite format 3\x00", "an SQLite database"),
    (0, b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (0, b"\xff\xd8\xff", "a JPEG image"),
    (0, b"GIF87a", "a GIF image"),
    (0, b"GIF89a", "a GIF image"),
    (0, b"%PDF-", "a PDF document"),
    (257, b"ustar", "a tar archive"),
    (0, b"\xfd7zXZ\x00", "xz-compressed data (crashcart reads gzip and zstd: decompress it first)"),
    (0, b"BZh", "bzip2-compressed data (crashcart reads gzip and zstd: decompress it first)"),
    (0, b"\x04\x22\x4d\x18", "lz4-compressed data (crashcart reads gzip and zstd: decompress it first)"),
    (0, b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (0, GZIP_MAGIC, "gzip data inside gzip or zstd (decompress the outer layer first)"),
    (0, ZSTD_MAGIC, "zstd data inside gzip or zstd (decompress the outer layer first)"),
)
_BZIP2_BLOCK = b"1AY&SY"  # after "BZh" and the block-size digit: "BZh" alone could begin a line of text
# Bytes that never occur in text logs: NUL and the C0 controls other than \t \n \v \f \r and ESC (colours).
_CONTROLS = bytes(set(range(32)) - {9, 10, 11, 12, 13, 27})


def compression_of(head: bytes) -> Compression:
    """gzip or zstd by the magic bytes at the start; anything else is read as it is."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return "none"


def decoded_head(head: bytes, compression: Compression) -> bytes:
    """Up to SNIFF_BYTES of text from the first raw bytes of a file (which may end mid-stream).

    Raises zlib.error or zstandard.ZstdError when the start is corrupt.
    """
    if compression == "gzip":
        return zlib.decompressobj(wbits=31).decompress(head, SNIFF_BYTES)  # 31: a gzip header and trailer
    if compression == "zstd":
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(head), read_across_frames=True)
        return reader.read(SNIFF_BYTES)
    return head[:SNIFF_BYTES]


def not_text(head: bytes) -> str | None:
    """Why the decoded start of a file is not a log (a binary format, or bytes that are not text); None if it is."""
    if not head:
        return None
    for offset, magic, name in _FORMATS:
        if head.startswith(magic, offset) and (magic != b"BZh" or head[4:10] == _BZIP2_BLOCK):
            return f"binary: {name}, not a log"
    if _safetensors(head):
        return "binary: safetensors weights, not a log"
    controls = (len(head) - len(head.translate(None, _CONTROLS))) / len(head)
    if controls > MAX_CONTROL or (controls >= MIN_CONTROL and _not_utf8(head) > MAX_NOT_UTF8):
        return "binary: not text (compressed or encrypted data, or an unknown binary format), not a log"
    return None


def _safetensors(head: bytes) -> bool:
    """A little-endian u64 header length, then a JSON header: text a byte test would take for a log."""
    return len(head) >= 10 and head[8:10] == b'{"' and int.from_bytes(head[:8], "little") < 100 << 20


def _not_utf8(head: bytes) -> float:
    """The share of bytes that are not part of valid UTF-8 (each becomes one replacement character)."""
    return head.decode("utf-8", "replace").count("\ufffd") / len(head)

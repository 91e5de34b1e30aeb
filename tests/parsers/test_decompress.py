"""parsers/decompress.py: gzip and zstd in bounded steps, and where zstd frames end."""

from __future__ import annotations

import gzip
import io
import random
import zlib

import pytest
import zstandard

from crashcart.parsers.decompress import FrameWalk, Truncated, gzip_chunks, zstd_chunks

# From hiyouga/LlamaFactory#7396.
LINE = (
    b"[rank4]:[E321 02:07:08.414640780 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught collective operation "
    b"timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) "
    b"ran for 600067 milliseconds before timing out.\n"
)


def _frames() -> list[bytes]:
    """Frames of every shape: checksum, no content size, several blocks, raw data, a skippable frame, an empty one."""
    rng = random.Random(3)
    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False) as writer:  # streamed: several blocks
        writer.write(LINE * 3000)
        writer.write(rng.randbytes(1000))
    skippable = (0x184D2A53).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"hello"
    return [
        zstandard.ZstdCompressor(write_checksum=True).compress(LINE * 400),
        skippable,
        zstandard.ZstdCompressor(write_content_size=False).compress(rng.randbytes(150_000)),  # raw blocks
        out.getvalue(),
        zstandard.ZstdCompressor().compress(b""),
    ]


def test_frame_walk_tells_frame_ends_from_cuts_inside_frames() -> None:
    frames = _frames()
    stream = b"".join(frames)
    ends = {0}
    for frame in frames:
        ends.add(max(ends) + len(frame))
    rng = random.Random(5)
    cuts = sorted(set(rng.sample(range(len(stream)), 400)) | ends | set(range(12)))
    wrong = []
    for cut in cuts:
        walk, pos = FrameWalk(), 0
        while pos < cut:  # fed in pieces of any size, as reads come
            step = min(rng.randint(1, 40_000), cut - pos)
            walk.feed(stream[pos : pos + step])
            pos += step
        if walk.between_frames != (cut in ends):
            wrong.append(cut)
    assert wrong == []


def test_zstd_steps_are_bounded_and_rebuild_the_frames() -> None:
    frames = _frames()
    chunks = list(zstd_chunks(io.BytesIO(b"".join(frames)), 1 << 16))
    assert max(map(len, chunks)) <= 1 << 16
    decoded = [frames[0], *frames[2:]]  # a skippable frame decodes to nothing
    want = b"".join(zstandard.ZstdDecompressor().stream_reader(f).read() for f in decoded)
    assert b"".join(chunks) == want


def test_zstd_cut_inside_a_frame_is_truncated_after_what_it_holds() -> None:
    body = b"".join(b"%d " % i + LINE for i in range(5000))
    blob = zstandard.ZstdCompressor().compress(body)
    got: list[bytes] = []
    with pytest.raises(Truncated):
        for chunk in zstd_chunks(io.BytesIO(blob[: len(blob) // 2]), 1 << 16):
            got.append(chunk)
    assert got and body.startswith(b"".join(got))


@pytest.mark.parametrize("size", [1, 100, 1 << 20])
def test_gzip_members_and_zero_padding(size: int) -> None:
    # Members one after another (as `cat a.gz b.gz` makes) and NUL padding after them, which gzip(1) accepts.
    blob = gzip.compress(LINE * 3) + gzip.compress(b"") + gzip.compress(LINE * 50) + b"\x00" * 300
    chunks = list(gzip_chunks(io.BytesIO(blob), size))
    assert b"".join(chunks) == LINE * 53
    assert max(map(len, chunks)) <= size


def test_gzip_bomb_steps_are_bounded() -> None:
    blob = gzip.compress(LINE * 200_000, compresslevel=9)  # 56 MB in ~200 KB
    sizes = [len(c) for c in gzip_chunks(io.BytesIO(blob), 1 << 20)]
    assert sum(sizes) == len(LINE) * 200_000 and max(sizes) <= 1 << 20


def test_truncated_gzip_gives_everything_before_the_cut() -> None:
    # GzipFile.read drops what it decoded in the call that meets the end: here, all of it.
    body = b"".join(b"%d " % i + LINE for i in range(20_000))
    blob = gzip.compress(body)
    cut = blob[: len(blob) // 2]
    got: list[bytes] = []
    with pytest.raises(EOFError, match="^Compressed file ended before the end-of-stream marker was reached$"):
        for chunk in gzip_chunks(io.BytesIO(cut), 4 << 20):
            got.append(chunk)
    assert b"".join(got) == zlib.decompressobj(wbits=31).decompress(cut)
    assert len(b"".join(got)) > 1_000_000


def test_gzip_garbage_after_a_member_is_an_error() -> None:
    with pytest.raises(zlib.error, match="incorrect header check"):
        list(gzip_chunks(io.BytesIO(gzip.compress(LINE) + b"garbage!"), 1 << 16))

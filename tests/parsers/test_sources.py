"""parsers/sources.py: discovering log sources and reading them as blocks of whole lines."""

from __future__ import annotations

import gzip
import io
import os
import random
import types
from pathlib import Path

import pytest
import zstandard

from crashcart.knowledge.errors import CrashcartError, InputError, ReadError
from crashcart.parsers import sources
from crashcart.parsers.models import Skipped
from crashcart.parsers.sources import MAX_LINE, ReadCap, Source, discover, printable, read_blocks

# Real lines (alibaba/RecIS#15 and MCZhi/GameFormer#17, dev cases r-code-attr-014 and r-ma-data-npz-unpickling-046;
# NCCL's version line from knowledge/healthy/nccl.log) around byte probes that are no program's output: a CRLF
# ending, bytes that are not UTF-8, ANSI colour codes, and a last line without its newline.
LOG = (
    b"[rank0]: Traceback (most recent call last):\n"
    b"[rank6]: Traceback (most recent call last):\r\n"
    b"\n"
    b"caf\xe9 \xff\xfe not utf-8\n"
    b"\x1b[31mERROR\x1b[0m colored\n"
    b"NCCL version 2.21.5+cuda12.4"
)
# Megatron iteration lines (epfLLM/Megatron-LLM#11, knowledge/healthy/megatron.log): a body long enough to compress
ITERATIONS = (
    b" iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration (ms): 86545.2 |"
    b" learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 | loss scale: 1.0 |"
    b" grad norm: 0.231 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
    b" iteration      123/  250000 | consumed samples:       125952 | elapsed time per iteration (ms): 87871.6 |"
    b" learning rate: 9.225E-06 | global batch size:  1024 | lm loss: 2.493043E+00 | loss scale: 1.0 |"
    b" grad norm: 0.236 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
)
BINARY = bytes(range(256)) * 8  # NULs and C0 controls: far over the 10% threshold


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _read(src: Source, **kw: int) -> bytes:
    return b"".join(read_blocks(src, **kw))


def _zstd_frames(*parts: bytes) -> bytes:
    cctx = zstandard.ZstdCompressor()
    return b"".join(cctx.compress(p) for p in parts)


# --- discovery ---------------------------------------------------------------------------------------


def test_single_file_is_named_by_its_file_name(tmp_path: Path) -> None:
    log = _write(tmp_path / "job" / "train.log", LOG)
    assert discover([str(log)]).sources == [Source(display="train.log", path=log, compression="none", size=len(LOG))]


def test_several_files_are_named_by_the_paths_given(tmp_path: Path) -> None:
    a = _write(tmp_path / "a" / "out.log", b"a\n")
    b = _write(tmp_path / "b" / "out.log", b"bb\n")
    assert [(s.display, s.size) for s in discover([str(a), str(b)]).sources] == [(str(a), 2), (str(b), 3)]


def test_folder_is_walked_recursively_sorted_and_named_relative(tmp_path: Path) -> None:
    root = tmp_path / "job"
    for rel in [
        "node10/rank_8.log",
        "node02/rank_1.log",
        "node02/rank_0.log",
        "node01/stdout.log",
        "launcher.out",
        "node01/sub/deeper.log",
    ]:
        _write(root / rel, f"{rel}\n".encode())
    _write(root / ".hidden.log", b"hidden\n")
    _write(root / ".cache" / "inside-hidden-dir.log", b"hidden\n")
    _write(root / "node01" / "core", BINARY)  # binary content, no telling suffix
    _write(root / "node01" / "model.pt", b"text, but a checkpoint suffix\n")
    _write(root / "weights.safetensors", b"text, but a weights suffix\n")
    _write(root / "node02" / "empty.log", b"")  # empty text is still a (trivial) log

    found = discover([str(root)]).sources

    assert [s.display for s in found] == [
        "launcher.out",
        "node01/stdout.log",
        "node01/sub/deeper.log",
        "node02/empty.log",
        "node02/rank_0.log",
        "node02/rank_1.log",
        "node10/rank_8.log",
    ]
    assert all(s.path == root / s.display for s in found)
    assert found[1].size == len(b"node01/stdout.log\n")


def test_two_folders_with_the_same_layout_give_distinct_names(tmp_path: Path) -> None:
    run1 = _write(tmp_path / "run1" / "node01" / "out.log", b"1\n").parent.parent
    run2 = _write(tmp_path / "run2" / "node01" / "out.log", b"2\n").parent.parent
    found = discover([str(run1), str(run2)]).sources
    assert [s.display for s in found] == [str(run1 / "node01" / "out.log"), str(run2 / "node01" / "out.log")]


@pytest.mark.parametrize(
    ("name", "data", "compression"),
    [
        ("plain.log", b"text\n", "none"),
        ("plain.log.gz", b"not compressed despite the name\n", "none"),
        ("gzipped.log", gzip.compress(b"text\n"), "gzip"),
        ("gzipped.zst", gzip.compress(b"text\n"), "gzip"),
        ("zstd.log", _zstd_frames(b"text\n"), "zstd"),
        ("zstd.txt.gz", _zstd_frames(b"text\n"), "zstd"),
    ],
)
def test_compression_is_detected_by_magic_bytes_not_extension(
    tmp_path: Path, name: str, data: bytes, compression: str
) -> None:
    path = _write(tmp_path / name, data)
    [src] = discover([str(path)]).sources
    assert (src.compression, src.size) == (compression, len(data))
    assert _read(src) == (b"text\n" if compression != "none" else data)


def test_stdin_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=io.BytesIO(LOG)))
    [src] = discover(["-"]).sources
    assert src == Source(display="<stdin>", path=None, compression="none", size=0, head=LOG)
    assert _read(src, block_size=5) == LOG


def test_stdin_mixed_with_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=io.BytesIO(b"from stdin\n")))
    log = _write(tmp_path / "a.log", b"from file\n")
    assert [s.display for s in discover(["-", str(log)]).sources] == ["<stdin>", str(log)]


def test_text_with_a_few_control_bytes_is_not_binary(tmp_path: Path) -> None:
    # 5 odd bytes in 100: under the 10% threshold (NCCL/tqdm logs carry the odd \x00 or \x08).
    data = b"a" * 94 + b"\x00\x08\x01\x02\x03" + b"\n"
    log = _write(tmp_path / "few.log", data)
    assert [s.display for s in discover([str(log)]).sources] == ["few.log"]


def test_random_bytes_in_a_folder_are_skipped_not_read_as_logs(tmp_path: Path) -> None:
    # Checkpoints, images and archives are compressed data: ~10% control bytes, which a 10% cut-off alone let
    # through as logs (8 files of these 40).
    rng = random.Random(7)
    for i in range(40):
        _write(tmp_path / "job" / f"blob{i}", rng.randbytes(20000))
    _write(tmp_path / "job" / "train.log", LOG)
    found = discover([str(tmp_path / "job")])
    assert [s.display for s in found.sources] == ["train.log"]
    assert len(found.skipped) == 40 and {s.reason.split(" (")[0] for s in found.skipped} == {"binary: not text"}


def test_gzip_holding_a_binary_is_skipped_in_a_folder(tmp_path: Path) -> None:
    _write(tmp_path / "job" / "blob.gz", gzip.compress(BINARY))
    _write(tmp_path / "job" / "ok.log.gz", gzip.compress(b"fine\n"))
    assert [s.display for s in discover([str(tmp_path / "job")]).sources] == ["ok.log.gz"]


# --- reading -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("block_size", [1, 2, 7, 13, 64, 4096])
@pytest.mark.parametrize(
    "data",
    [
        LOG,
        LOG + b"\n",
        b"\n\n\n",
        b"a\r\nb\r\n\r\nc\r\n",
        b"no newline at all",
        b"x" * 100 + b"\n" + b"y" * 3,
    ],
    ids=["mixed", "mixed-nl", "only-newlines", "crlf", "no-newline", "long-then-short"],
)
def test_blocks_end_on_newlines_and_rebuild_the_input(tmp_path: Path, data: bytes, block_size: int) -> None:
    [src] = discover([str(_write(tmp_path / "x.log", data))]).sources
    blocks = list(read_blocks(src, block_size=block_size))
    assert b"".join(blocks) == data
    assert all(blocks)
    assert all(b.endswith(b"\n") for b in blocks[:-1])
    # Lines are never split across blocks (nothing here is near MAX_LINE).
    assert [line for b in blocks for line in b.splitlines()] == data.splitlines()


@pytest.mark.parametrize("kind", ["gzip", "zstd", "zstd-multiframe", "gzip-multimember"])
@pytest.mark.parametrize("block_size", [3, 7, 1 << 20])
def test_compressed_blocks_rebuild_the_input(tmp_path: Path, kind: str, block_size: int) -> None:
    body = LOG + b"\n" + ITERATIONS * 250
    half = len(body) // 3
    blob = {
        "gzip": gzip.compress(body),
        "gzip-multimember": gzip.compress(body[:half]) + gzip.compress(body[half:]),
        "zstd": _zstd_frames(body),
        "zstd-multiframe": _zstd_frames(body[:half], body[half : 2 * half], b"", body[2 * half :]),
    }[kind]
    [src] = discover([str(_write(tmp_path / "job.log", blob))]).sources
    assert src.compression == kind.split("-")[0]
    blocks = list(read_blocks(src, block_size=block_size))
    assert b"".join(blocks) == body
    assert all(b.endswith(b"\n") for b in blocks[:-1])


def test_zstd_frames_split_across_reads(tmp_path: Path) -> None:
    # Many tiny frames, read 5 compressed bytes at a time: frame ends and headers fall mid-read.
    lines = [b"frame %d\n" % i for i in range(40)]
    [src] = discover([str(_write(tmp_path / "f.zst", _zstd_frames(*lines)))]).sources
    assert _read(src, block_size=5) == b"".join(lines)


def test_crlf_is_preserved(tmp_path: Path) -> None:
    [src] = discover([str(_write(tmp_path / "w.log", b"one\r\ntwo\r\n"))]).sources
    assert list(read_blocks(src)) == [b"one\r\ntwo\r\n"]
    assert list(read_blocks(src, block_size=4)) == [b"one\r\n", b"two\r\n"]


def test_empty_file_gives_no_blocks(tmp_path: Path) -> None:
    [src] = discover([str(_write(tmp_path / "empty.log", b""))]).sources
    assert (src.size, list(read_blocks(src))) == (0, [])


def test_empty_compressed_file_gives_no_blocks(tmp_path: Path) -> None:
    [gz] = discover([str(_write(tmp_path / "e.gz", gzip.compress(b"")))]).sources
    [zst] = discover([str(_write(tmp_path / "e.zst", _zstd_frames(b"")))]).sources
    assert (list(read_blocks(gz)), list(read_blocks(zst))) == ([], [])


def test_non_utf8_bytes_pass_through(tmp_path: Path) -> None:
    data = b"\xc3\x28 invalid \xa0\xa1 latin-1 caf\xe9 \xf0\x28\x8c\x28\n"
    [src] = discover([str(_write(tmp_path / "bytes.log", data))]).sources
    assert list(read_blocks(src)) == [data]


def test_line_longer_than_the_block_is_read_whole(tmp_path: Path) -> None:
    # A 6 MB line is longer than a 4 MB block but under MAX_LINE: it comes back as one piece.
    line = b"x" * (6 << 20) + b"\n"
    [src] = discover([str(_write(tmp_path / "wide.log", b"head\n" + line + b"tail\n"))]).sources
    blocks = list(read_blocks(src))
    assert [len(b) for b in blocks] == [len(b"head\n"), len(line) + len(b"tail\n")]
    assert blocks[1].startswith(line)


def test_ten_megabyte_line_keeps_its_first_max_line_bytes_as_one_line(tmp_path: Path) -> None:
    line = b"y" * (10 << 20) + b"\n"
    [src] = discover([str(_write(tmp_path / "huge.log", line + b"tail\n"))]).sources
    blocks = list(read_blocks(src))
    # Two 4 MB reads reach MAX_LINE (8 MB) with no newline: that much is the line; its last 2 MB are passed over,
    # so the next block starts the next line and "tail" is still line 2.
    assert [len(b) for b in blocks] == [MAX_LINE, len(b"tail\n")]
    assert blocks == [b"y" * MAX_LINE, b"tail\n"]


@pytest.mark.parametrize("block_size", [1, 3, 5, 16, 40])
def test_lines_over_max_line_are_cut_and_every_block_starts_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_size: int
) -> None:
    monkeypatch.setattr(sources, "MAX_LINE", 16)
    data = b"a" * 100 + b"\nshort\n" + b"b" * 37 + b"\n" + b"c" * 20
    [src] = discover([str(_write(tmp_path / "cut.log", data))]).sources
    blocks = list(read_blocks(src, block_size=block_size))
    # Line numbers stay true: as many lines as the file has. A line is cut to MAX_LINE when that much of it is
    # read before its newline (so it may keep up to one read more), and the rest of it is passed over.
    lines = [line for b in blocks for line in b.split(b"\n") if line]
    originals = data.split(b"\n")
    assert len(lines) == len(originals) == 4
    assert all(
        old.startswith(new) and (new == old or 16 <= len(new) < 16 + block_size)
        for new, old in zip(lines, originals, strict=True)
    )
    assert all(len(b) < 16 + block_size for b in blocks)


# --- errors ------------------------------------------------------------------------------------------


def test_no_paths() -> None:
    with pytest.raises(InputError) as info:
        discover([])
    assert str(info.value) == "no log path given: pass a file, a folder of logs, or - for stdin"
    assert isinstance(info.value, CrashcartError)


def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "train.log"
    with pytest.raises(InputError) as info:
        discover([str(missing)])
    assert str(info.value) == f"no such file or folder: {missing}"


def test_missing_path_after_a_good_one(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.log", b"ok\n")
    with pytest.raises(InputError, match="^no such file or folder: .*missing.log$"):
        discover([str(good), str(tmp_path / "missing.log")])


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ({}, "no log could be read: {root}: holds no text, .gz or .zst log files"),
        (
            {"model.pt": b"text\n", ".hidden.log": b"text\n"},
            "no log could be read: {root}: holds no text, .gz or .zst log files",
        ),
        (
            {"core.1234": BINARY, "sub/dump": BINARY},
            "no log could be read: core.1234: binary: not text (compressed or encrypted data, or an unknown binary "
            "format), not a log; sub/dump: binary: not text (compressed or encrypted data, or an unknown binary "
            "format), not a log",
        ),
    ],
    ids=["empty", "only-skipped-names", "only-binaries"],
)
def test_folder_without_logs(tmp_path: Path, layout: dict[str, bytes], message: str) -> None:
    root = tmp_path / "job"
    root.mkdir()
    for rel, data in layout.items():
        _write(root / rel, data)
    with pytest.raises(InputError) as info:
        discover([str(root)])
    assert str(info.value) == message.format(root=root)


def test_binary_file_given_directly(tmp_path: Path) -> None:
    path = _write(tmp_path / "core.1234", BINARY)
    with pytest.raises(InputError) as info:
        discover([str(path)])
    assert str(info.value) == (
        "no log could be read: core.1234: binary: not text (compressed or encrypted data, or an unknown binary "
        "format), not a log"
    )


def test_fifo_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError) as info:
        discover([str(fifo)])
    assert str(info.value) == f"{fifo} is not a regular file or folder"


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (
            gzip.compress(b"line\n" * 1000)[:-6],
            "t.log: corrupt or truncated gzip (Compressed file ended before the end-of-stream marker was reached); "
            "re-copy the file",
        ),
        (
            gzip.compress(b"line\n") + b"garbage!",
            "t.log: corrupt or truncated gzip (Error -3 while decompressing data: incorrect header check); "
            "re-copy the file",
        ),
        (
            _zstd_frames(b"line\n" * 1000, b"more\n")[:-3],
            "t.log: truncated zstd stream (ends inside a frame); re-copy the file",
        ),
        (_zstd_frames(b"line\n" * 1000)[:12], "t.log: truncated zstd stream (ends inside a frame); re-copy the file"),
    ],
    ids=["gzip-truncated", "gzip-trailing-garbage", "zstd-truncated-last-frame", "zstd-truncated-early"],
)
def test_corrupt_compressed_file_is_found_on_read(tmp_path: Path, blob: bytes, message: str) -> None:
    [src] = discover([str(_write(tmp_path / "t.log", blob))]).sources  # the sniff tolerates a truncated stream
    with pytest.raises(ReadError) as info:
        _read(src, block_size=64)
    assert str(info.value) == message
    assert (info.value.path, f"t.log: {info.value.reason}") == ("t.log", message)


# From hiyouga/LlamaFactory#7396: the watchdog line a rank prints before it is taken down.
WATCHDOG = (
    b"[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
    b"timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) "
    b"ran for 600060 milliseconds before timing out.\n"
)


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_truncated_file_gives_every_line_before_the_cut(tmp_path: Path, kind: str) -> None:
    # A node that died mid-write: its last lines are the evidence, so what decodes before the cut is read.
    body = b"".join(b"%d " % i + WATCHDOG for i in range(20000))
    blob = gzip.compress(body) if kind == "gzip" else _zstd_frames(body)
    [src] = discover([str(_write(tmp_path / "node03.log", blob[: len(blob) * 3 // 4]))]).sources
    got: list[bytes] = []
    with pytest.raises(ReadError, match="truncated"):
        for block in read_blocks(src, block_size=1 << 20):
            got.append(block)
    text = b"".join(got)
    assert len(text) > len(body) // 2 and body.startswith(text)  # a prefix, to the last byte decoded


def test_corrupt_zstd_data(tmp_path: Path) -> None:
    blob = bytearray(_zstd_frames(b"a line of log text\n" * 200))
    blob[4:] = b"\xff" * (len(blob) - 4)  # keep the magic, wreck the frame header and data
    path = _write(tmp_path / "bad.zst", bytes(blob))
    # Unlike a truncation, corruption shows in the first bytes: discovery skips the file, and it is all there is.
    start = r"^no log could be read: bad\.zst: corrupt zstd data at the start \(.+\); re-copy the file$"
    with pytest.raises(InputError, match=start):
        discover([str(path)])
    src = Source(display="bad.zst", path=path, compression="zstd", size=len(blob))
    with pytest.raises(ReadError, match=r"^bad\.zst: corrupt zstd stream \(zstd decompress error: .+\); re-copy"):
        _read(src)


def test_a_corrupt_file_among_good_ones_is_skipped_with_the_reason(tmp_path: Path) -> None:
    _write(tmp_path / "job" / "node01.log", WATCHDOG)
    _write(tmp_path / "job" / "node02.log.gz", gzip.compress(WATCHDOG)[:10] + b"\xff" * 40)  # a gzip header, no data
    found = discover([str(tmp_path / "job")])
    assert [s.display for s in found.sources] == ["node01.log"]
    [skipped] = found.skipped
    assert skipped.path == "node02.log.gz"
    assert skipped.reason == (
        "corrupt gzip data at the start (Error -3 while decompressing data: invalid block type); re-copy the file"
    )


def _deny_open(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    real_open = Path.open

    def fake_open(self: Path, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        if self == denied:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", fake_open)


def test_unreadable_file_on_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "secret.log", b"text\n")
    _deny_open(monkeypatch, path)
    with pytest.raises(InputError) as info:
        discover([str(path)])
    assert str(info.value) == "no log could be read: secret.log: cannot read (Permission denied)"


def test_unreadable_file_inside_a_folder_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "job" / "a.log", b"text\n")
    denied = _write(tmp_path / "job" / "b.log", b"text\n")
    _deny_open(monkeypatch, denied)
    found = discover([str(tmp_path / "job")])
    assert [s.display for s in found.sources] == ["a.log"]
    assert found.skipped == [Skipped(path="b.log", reason="cannot read (Permission denied)")]


def test_unreadable_sub_folder_is_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "job" / "node01" / "out.log", b"text\n")
    denied = _write(tmp_path / "job" / "node02" / "out.log", b"text\n").parent
    real_scandir = os.scandir

    def fake_scandir(path: object) -> object:
        if Path(str(path)) == denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "scandir", fake_scandir)
    found = discover([str(tmp_path / "job")])
    assert [s.display for s in found.sources] == ["node01/out.log"]
    assert found.skipped == [Skipped(path="node02", reason="cannot list this folder (Permission denied)")]


def test_unreadable_file_on_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "later.log", b"text\n")
    [src] = discover([str(path)]).sources
    _deny_open(monkeypatch, path)
    with pytest.raises(ReadError) as info:
        _read(src)
    assert str(info.value) == "later.log: cannot read (Permission denied)"


# --- hostile input: bombs, odd names, deep trees ----------------------------------------------------


def _bomb(kind: str, size: int) -> bytes:
    """`size` bytes of one repeated log line, compressed: a small file that decompresses to a great deal."""
    body = WATCHDOG * (size // len(WATCHDOG))
    if kind == "gzip":
        return gzip.compress(body, compresslevel=9)
    return zstandard.ZstdCompressor(level=19).compress(body)  # one frame: decompress() would return it whole


def test_a_zstd_bomb_is_read_in_bounded_blocks(tmp_path: Path) -> None:
    blob = _bomb("zstd", 64 << 20)
    assert len(blob) < 64 << 10  # 64 MiB in a few KB
    [src] = discover([str(_write(tmp_path / "bomb.log.zst", blob))]).sources
    sizes = [len(b) for b in read_blocks(src, block_size=1 << 20)]
    assert sum(sizes) == (64 << 20) // len(WATCHDOG) * len(WATCHDOG)
    assert max(sizes) <= (1 << 20) + len(WATCHDOG)  # a block and a part line: the whole frame was one, once


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_the_cap_on_decompressed_bytes_stops_a_bomb_with_a_message_naming_the_setting(
    tmp_path: Path, kind: str
) -> None:
    path = _write(tmp_path / "upload.log", _bomb(kind, 8 << 20))
    cap = ReadCap(bytes=1_000_000, setting="max_decompressed_bytes in the bot config")
    [src] = discover([str(path)], cap=cap).sources
    got: list[bytes] = []
    with pytest.raises(ReadError) as info:
        for block in read_blocks(src, block_size=1 << 16):
            got.append(block)
    assert str(info.value) == (
        "upload.log: decompresses to more than 1,000,000 bytes, the limit set by max_decompressed_bytes in the bot "
        "config: only the first 1,000,000 were read (raise max_decompressed_bytes in the bot config to read it all)"
    )
    assert sum(map(len, got)) == 1_000_000  # up to the cap, the last line as far as it goes


def test_the_cap_leaves_plain_files_and_small_compressed_ones_alone(tmp_path: Path) -> None:
    cap = ReadCap(bytes=len(WATCHDOG) * 10, setting="x")
    plain = _write(tmp_path / "plain.log", WATCHDOG * 100)
    small = _write(tmp_path / "small.log.gz", gzip.compress(WATCHDOG * 10))
    assert [_read(s) for s in discover([str(plain), str(small)], cap=cap).sources] == [WATCHDOG * 100, WATCHDOG * 10]


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_compressed_stdin_is_decompressed(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    body = LOG + b"\n" + WATCHDOG * 3000  # longer than the sniffed head: the rest comes after it
    blob = gzip.compress(body) if kind == "gzip" else _zstd_frames(body)
    monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=io.BytesIO(blob)))
    [src] = discover(["-"]).sources
    assert src.compression == kind
    assert _read(src, block_size=4096) == body


def test_binary_stdin_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=io.BytesIO(b"\x7fELF\x02\x01\x01" + BINARY)))
    with pytest.raises(InputError, match=r"^no log could be read: <stdin>: binary: an ELF executable or core dump"):
        discover(["-"])


def test_closed_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", None)
    with pytest.raises(InputError, match="^no standard input to read: pipe a log into `crashcart triage -`"):
        discover(["-"])


def test_a_name_that_is_not_utf8_is_shown_with_escapes(tmp_path: Path) -> None:
    root = tmp_path / "job"
    root.mkdir()
    (Path(os.fsdecode(bytes(root) + b"/caf\xe9.log"))).write_bytes(WATCHDOG)
    [src] = discover([str(root)]).sources
    assert src.display == "caf\\xe9.log"  # JSON and terminals take it; the file is still opened by its real name
    assert src.display.encode("utf-8") and _read(src) == WATCHDOG
    assert printable(os.fsdecode(b"/logs/\xff/x.log")) == "/logs/\\xff/x.log"


def test_a_tree_a_thousand_folders_deep(tmp_path: Path) -> None:
    _write(tmp_path / "job" / "a.log", WATCHDOG)
    deep = tmp_path / "job"
    for _ in range(1200):  # os.walk (and mkdir(parents=True)) recurse once a level: past the recursion limit
        deep /= "d"
        deep.mkdir()
    (deep / "out.log").write_bytes(WATCHDOG)
    try:
        found = discover([str(tmp_path / "job")])
    finally:  # pytest's clean-up (shutil.rmtree) recurses once a level too: the tree goes here, a level at a time
        (deep / "out.log").unlink()
        while deep != tmp_path / "job":
            deep.rmdir()
            deep = deep.parent
    assert [s.display for s in found.sources] == ["a.log", str(Path(*["d"] * 1200) / "out.log")]

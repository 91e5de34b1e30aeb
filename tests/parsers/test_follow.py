"""Following growing files: whole lines only, new files, rotation, truncation, renames, CRLF, odd bytes, gzip.

The lines are the generator's (crashcart/evals/generator.py, which names their sources): Megatron's iteration line,
the NVIDIA driver's Xid line in syslog, NCCL's IB warning.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from crashcart.parsers.follow import MAX_PARTIAL, SETTLE_S, Chunk, Follower

ITER = (
    b"[default3]: [2026-02-14 11:25:28] iteration        1/    4158 | consumed samples:         1024 | elapsed time"
    b" per iteration (ms): 5194.4 | throughput per GPU (TFLOP/s/GPU): 400.4 | learning rate: 1.500000E-07 |\n"
)
XID = (
    b"Feb 14 16:14:07 node02 kernel: [280407.738379] NVRM: Xid (PCI:0000:61:00): 79, pid=49491, name=python,"
    b" GPU has fallen off the bus.\n"
)
IB = b"[default3]:node02:49491:49655 [3] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error\n"


def lines_of(chunks: list[Chunk]) -> list[tuple[str, int, bytes]]:
    """(file, line number, line) of every line handed on."""
    out = []
    for chunk in chunks:
        for i, line in enumerate(chunk.data.splitlines(keepends=True)):
            out.append((chunk.file, chunk.base + i + 1, line))
    return out


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


def test_only_whole_lines_are_handed_on_and_the_partial_one_waits(tmp_path: Path) -> None:
    log = tmp_path / "node05.log"
    log.write_bytes(ITER + XID[:30])
    follower = Follower([log])
    chunks, notes = follower.poll(0.0)
    assert lines_of(chunks) == [("node05.log", 1, ITER)]
    assert [n.what for n in notes] == ["new"]
    assert follower.poll(0.1)[0] == []  # nothing new: the half line still waits
    append(log, XID[30:] + IB)
    assert lines_of(follower.poll(0.2)[0]) == [("node05.log", 2, XID), ("node05.log", 3, IB)]


def test_new_files_in_a_watched_folder_are_picked_up(tmp_path: Path) -> None:
    (tmp_path / "node01.log").write_bytes(ITER)
    follower = Follower([tmp_path])
    assert lines_of(follower.poll(0.0)[0]) == [("node01.log", 1, ITER)]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "kernel-node05.log").write_bytes(XID)
    chunks, notes = follower.poll(0.1)
    assert lines_of(chunks) == [("sub/kernel-node05.log", 1, XID)]
    assert [(n.file, n.what) for n in notes] == [("sub/kernel-node05.log", "new")]
    assert follower.files == 2


def test_rotation_reads_the_new_file_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(ITER * 3)
    follower = Follower([log])
    follower.poll(0.0)
    os.rename(log, tmp_path / "elsewhere.log")  # logrotate's move; the watched path is then made anew
    log.write_bytes(XID)
    chunks, notes = follower.poll(0.1)
    assert lines_of(chunks) == [("train.log", 1, XID)]
    assert [n.what for n in notes] == ["rotated"]


def test_truncation_reads_the_file_again_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(ITER * 3)
    follower = Follower([log])
    follower.poll(0.0)
    with log.open("r+b") as fh:  # copytruncate: same inode, emptied, then written on
        fh.truncate(0)
    append(log, IB)
    chunks, notes = follower.poll(0.1)
    assert lines_of(chunks) == [("train.log", 1, IB)]
    assert [n.what for n in notes] == ["truncated"]


def test_a_renamed_file_in_a_watched_folder_keeps_its_place(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(ITER * 2)
    follower = Follower([tmp_path])
    follower.poll(0.0)
    os.rename(log, tmp_path / "train.log.1")
    append(tmp_path / "train.log.1", IB)  # the writer still holds the old file open
    chunks, notes = follower.poll(0.1)
    assert lines_of(chunks) == [("train.log.1", 3, IB)]  # not read again from line 1
    assert notes == []


def test_crlf_and_bytes_that_are_not_utf8_pass_through_as_they_are(tmp_path: Path) -> None:
    log = tmp_path / "node05.log"
    odd = ITER.replace(b"learning", b"l\xe9arning")  # one byte that is not UTF-8, as a Latin-1 file holds them
    log.write_bytes(ITER.replace(b"\n", b"\r\n") + odd)
    chunks, _ = Follower([log]).poll(0.0)
    assert [line for _, _, line in lines_of(chunks)] == [ITER.replace(b"\n", b"\r\n"), odd]


def test_an_overlong_partial_line_is_handed_on_so_memory_stays_bounded(tmp_path: Path) -> None:
    log = tmp_path / "node05.log"
    log.write_bytes(b"x" * (MAX_PARTIAL + 10))
    follower = Follower([log])
    chunks, _ = follower.poll(0.0)
    assert [len(line) for _, _, line in lines_of(chunks)] == [MAX_PARTIAL + 11]  # its newline added
    append(log, b"tail\n")
    assert lines_of(follower.poll(0.1)[0]) == [("node05.log", 2, b"tail\n")]


def test_a_gzip_file_is_read_once_it_has_stopped_growing(tmp_path: Path) -> None:
    packed = tmp_path / "node05.log.gz"
    packed.write_bytes(gzip.compress(ITER + XID))
    follower = Follower([tmp_path])
    assert follower.poll(0.0)[0] == []  # its size is noted
    assert follower.poll(SETTLE_S / 2)[0] == []  # not settled yet
    chunks, _ = follower.poll(SETTLE_S + 0.1)
    assert lines_of(chunks) == [("node05.log.gz", 1, ITER), ("node05.log.gz", 2, XID)]
    assert follower.poll(SETTLE_S + 1)[0] == []  # read once


def test_a_binary_file_is_skipped_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "core").write_bytes(b"\x7fELF" + bytes(range(256)) * 8)
    follower = Follower([tmp_path])
    chunks, notes = follower.poll(0.0)
    assert chunks == []
    assert [(n.what, n.detail) for n in notes][-1] == ("skipped", "binary: an ELF executable or core dump, not a log")
    append(tmp_path / "core", b"more\n")
    assert follower.poll(0.1) == ([], [])  # skipped for good


def test_last_growth_moves_only_when_a_file_grows(tmp_path: Path) -> None:
    log = tmp_path / "node05.log"
    log.write_bytes(ITER)
    follower = Follower([log])
    follower.poll(5.0)
    follower.poll(9.0)
    assert follower.last_growth == 5.0
    append(log, ITER)
    follower.poll(12.0)
    assert follower.last_growth == 12.0


def test_rotation_inside_a_watched_folder_follows_both_files_without_reading_one_twice(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(ITER * 2)
    follower = Follower([tmp_path])
    follower.poll(0.0)
    os.rename(log, tmp_path / "train.log.1")  # train.log is listed before train.log.1: the old one must not restart
    append(tmp_path / "train.log.1", IB)
    log.write_bytes(XID)
    chunks, notes = follower.poll(0.1)
    assert sorted(lines_of(chunks)) == [("train.log", 1, XID), ("train.log.1", 3, IB)]
    assert [(n.file, n.what) for n in notes] == [("train.log", "rotated")]

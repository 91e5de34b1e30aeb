"""parsers/sniff.py: compression by magic bytes, binary formats by magic bytes, and the text test."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import random
import sqlite3
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest
import zstandard

from crashcart.parsers.sniff import SNIFF_BYTES, compression_of, decoded_head, not_text

# The CPython message for a missing script, with the strerror of glibc's translations (libc.mo, fr and zh_CN) as a
# machine with an fr_FR.ISO-8859-1 or zh_CN.GBK locale prints it: text, though not UTF-8.
LATIN1_LOG = "python3: can't open file '/data/train.py': [Errno 13] Permission non accordée\n".encode("latin-1")
GBK_LOG = "python3: can't open file '/data/train.py': [Errno 2] 没有那个文件或目录\n".encode("gbk")
# tqdm's progress bar as Lightning prints it (pytorch/pytorch#118369): \r-separated updates, block characters.
TQDM = "Epoch 0:   6%|██                               | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6]\r"
COLOURED = b"\x1b[31mERROR\x1b[0m torch.distributed.elastic.multiprocessing.api: failed (exitcode: 1) local_rank: 0\n"


# A Megatron iteration line (epfLLM/Megatron-LLM#11, knowledge/healthy/megatron.log): the text inside the archives
TRAIN_LINE = (
    b" iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration (ms): 86545.2 |"
    b" learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 | loss scale: 1.0 |"
    b" grad norm: 0.231 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
)


def _zip(tmp_path: Path) -> bytes:
    """A zip of a text file: torch.save's format (a zip with a pickle inside) starts the same way."""
    path = tmp_path / "ckpt.pt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", "a text member: the header alone says zip")
    return path.read_bytes()


def _tar(tmp_path: Path) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tf:
        data = TRAIN_LINE * 50
        info = tarfile.TarInfo("logs/train.log")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _sqlite(tmp_path: Path) -> bytes:
    path = tmp_path / "incidents.db"
    with sqlite3.connect(path) as db:
        db.execute("create table t (x text)")
    return path.read_bytes()


def _safetensors() -> bytes:
    """The safetensors layout: a u64 header size, a JSON header (text), then raw tensor bytes."""
    header = json.dumps(
        {f"layer.{i}.weight": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]} for i in range(200)}
    )
    return struct.pack("<Q", len(header)) + header.encode() + b"\x00" * 16


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda _: b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "an ELF executable or core dump"),
        (_zip, "a zip archive"),
        (_tar, "a tar archive"),
        (_sqlite, "an SQLite database"),
        (lambda _: _safetensors(), "safetensors weights"),
        (lambda _: b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a PNG image"),
        (lambda _: b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", "a NumPy array"),
        (lambda _: lzma.compress(TRAIN_LINE * 100), "xz-compressed data"),
        (lambda _: bz2.compress(TRAIN_LINE * 100), "bzip2-compressed data"),
        (lambda _: gzip.compress(TRAIN_LINE), "gzip data inside gzip or zstd"),
    ],
    ids=["elf", "zip", "tar", "sqlite", "safetensors", "png", "npy", "xz", "bzip2", "gzip"],
)
def test_binary_formats_are_named_by_their_magic_bytes(tmp_path: Path, make, named: str) -> None:  # type: ignore[no-untyped-def]
    reason = not_text(make(tmp_path)[:SNIFF_BYTES])
    assert reason is not None and reason.startswith(f"binary: {named}")


def test_random_bytes_are_never_text() -> None:
    # Compressed and encrypted data: ~10% control bytes, right at a control-byte-only cut-off (which took 1 such
    # file in 4 for a log), but mostly not UTF-8.
    rng = random.Random(7)
    heads = [rng.randbytes(SNIFF_BYTES) for _ in range(300)]
    assert [h for h in heads if not_text(h) is None] == []
    assert not_text(zstandard.ZstdCompressor().compress(rng.randbytes(20000))[4:]) is not None


@pytest.mark.parametrize(
    "head",
    [
        LATIN1_LOG * 100,
        GBK_LOG * 100,
        (TQDM * 60).encode(),
        COLOURED * 60,
        b"a" * 94 + b"\x00\x08\x01\x02\x03" + b"\n",  # a few stray controls (NCCL/tqdm logs carry the odd \x00, \x08)
        b"",
    ],
    ids=["latin-1", "gbk", "tqdm", "ansi-colours", "few-controls", "empty"],
)
def test_logs_are_text(head: bytes) -> None:
    assert not_text(head[:SNIFF_BYTES]) is None


@pytest.mark.parametrize(
    ("head", "compression"),
    [
        (gzip.compress(b"x\n"), "gzip"),
        (zstandard.ZstdCompressor().compress(b"x\n"), "zstd"),
        (b"\x1f", "none"),
        (COLOURED, "none"),
    ],
)
def test_compression_by_magic_bytes(head: bytes, compression: str) -> None:
    assert compression_of(head) == compression


def test_decoded_head_of_a_cut_stream_is_its_start() -> None:
    body = COLOURED * 5000
    for blob, kind in [(gzip.compress(body), "gzip"), (zstandard.ZstdCompressor().compress(body), "zstd")]:
        head = decoded_head(blob[:200], kind)  # type: ignore[arg-type]
        assert head and body.startswith(head) and len(head) <= SNIFF_BYTES

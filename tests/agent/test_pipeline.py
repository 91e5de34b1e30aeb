"""agent/pipeline.py: triage() over hostile and partial input: one path as a string, a size cap, files skipped."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import zstandard

from crashcart.agent.pipeline import triage
from crashcart.knowledge.errors import InputError
from crashcart.parsers.sources import ReadCap

# PyTorch's CUDA OOM as a rank prints it, after Megatron-LM's iteration lines (tests/crashcart/test_cli.py).
OOM_LOG = (
    "[rank0]: iteration      100/  5000 | lm loss: 2.31 |\n"
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB. GPU 3 has a total"
    " capacity of 79.10 GiB of which 98.00 MiB is free.\n"
)
HEALTHY = "[rank0]: iteration      101/  5000 | lm loss: 2.30 |\n"


@pytest.mark.parametrize("as_path", [False, True])
def test_one_path_given_alone_is_that_path_not_its_characters(tmp_path: Path, as_path: bool) -> None:
    # A string is a Sequence[str]: triage("/abs/path") read "/", "a", "b", ... and walked the whole disk.
    log = tmp_path / "train.log"
    log.write_text(OOM_LOG)
    report = triage(log if as_path else str(log), workers=1)
    assert report.paths == [str(log)]
    assert report.diagnosis.failure_class.value == "gpu_oom" and report.stats.files == 1


def test_an_upload_over_the_cap_is_read_to_the_cap_and_listed(tmp_path: Path) -> None:
    # The OOM first, then a great deal of repeated progress: a small .zst that holds far more than the bot reads.
    upload = tmp_path / "rank3.log.zst"
    upload.write_bytes(zstandard.ZstdCompressor(level=19).compress((OOM_LOG + HEALTHY * 200_000).encode()))
    cap = ReadCap(bytes=100_000, setting="max_decompressed_bytes in the bot config")
    report = triage([upload], read_cap=cap, workers=1)
    assert report.diagnosis.failure_class.value == "gpu_oom"
    assert report.stats.bytes == 100_000
    [skipped] = report.skipped
    assert skipped.path == "rank3.log.zst"
    assert skipped.reason.startswith(f"read {report.stats.lines:,} lines, ") and skipped.reason.endswith(
        "then: decompresses to more than 100,000 bytes, the limit set by max_decompressed_bytes in the bot config: "
        "only the first 100,000 were read (raise max_decompressed_bytes in the bot config to read it all)"
    )


def test_files_that_fail_part_way_or_at_the_start_are_listed_with_the_good_ones_read(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "node01.log").write_text(OOM_LOG)
    cut = gzip.compress((HEALTHY * 5000).encode())
    (job / "node02.log.gz").write_bytes(cut[: len(cut) // 2])
    (job / "node03.log.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\xff" * 64)  # zstd magic, then no frame
    report = triage([job], workers=1)
    assert report.diagnosis.failure_class.value == "gpu_oom"
    assert [(s.path, s.reason.split(" (")[0]) for s in report.skipped] == [
        ("node03.log.zst", "corrupt zstd data at the start"),
        ("node02.log.gz", f"read {report.stats.lines - 2:,} lines, then: corrupt or truncated gzip"),
    ]


def test_a_job_of_which_not_one_line_can_be_read_is_an_error(tmp_path: Path) -> None:
    body = "".join(f"{i} {HEALTHY}" for i in range(5000)).encode()
    cut = tmp_path / "only.log.zst"
    cut.write_bytes(zstandard.ZstdCompressor().compress(body)[:200])  # inside the first block
    with pytest.raises(InputError) as info:
        triage([cut], workers=1)
    assert str(info.value) == (
        "no log could be read: only.log.zst: read 0 lines, then: truncated zstd stream (ends inside a frame); "
        "re-copy the file"
    )

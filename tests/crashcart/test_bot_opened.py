"""crashcart/bot/opened.py: a path the bot checked is the file triage reads, even when a symlink is swapped in."""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path

import pytest

from crashcart.api import triage
from crashcart.bot.opened import ReadLimits, open_under_roots
from crashcart.bot.requests import safe_path
from crashcart.knowledge.errors import InputError

# PyTorch's allocator message (torch.OutOfMemoryError) and the CUDA runtime's illegal-address error, as jobs print.
INSIDE = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
OUTSIDE = "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
LIMITS = ReadLimits(bytes=1_000_000, files=100)


@pytest.fixture()
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """logs/job/rank0.log under the root, and secret/job/rank0.log beside it, outside."""
    root, secret = tmp_path / "logs", tmp_path / "secret"
    for base, text in ((root, INSIDE), (secret, OUTSIDE)):
        (base / "job").mkdir(parents=True)
        (base / "job" / "rank0.log").write_text(text)
    return root, secret


def _swap_in_symlink(root: Path, secret: Path) -> None:
    """What a user who owns logs/job can do after the bot checked logs/job/rank0.log: point job elsewhere."""
    (root / "job").rename(root / "job.old")
    (root / "job").symlink_to(secret / "job", target_is_directory=True)


def test_a_symlink_swapped_in_after_the_check_is_refused_once_opened(tree, tmp_path: Path) -> None:
    root, secret = tree
    checked = safe_path("job/rank0.log", [root])
    _swap_in_symlink(root, secret)
    assert checked.read_text() == OUTSIDE  # reading the checked name now reads the other file
    with ExitStack() as stack, pytest.raises(InputError, match="job/rank0.log leads out of the log roots"):
        open_under_roots([checked], [root], tmp_path / "view", LIMITS, stack)


def test_a_swap_after_opening_changes_nothing_triage_reads_the_checked_file(tree, tmp_path: Path) -> None:
    root, secret = tree
    checked = safe_path("job/rank0.log", [root])
    with ExitStack() as stack:
        paths = open_under_roots([checked], [root], tmp_path / "view", LIMITS, stack).paths
        _swap_in_symlink(root, secret)
        report = triage(paths, workers=1)
    assert paths == [tmp_path / "view" / "rank0.log"]
    [evidence] = [e for e in report.diagnosis.evidence if "CUDA" in e.text]
    assert (evidence.file, evidence.text) == ("rank0.log", INSIDE.strip())
    assert report.diagnosis.failure_class.value == "gpu_oom"


def test_a_folder_is_linked_file_by_file_as_a_folder_triage_would_read_it(tree, tmp_path: Path) -> None:
    root, _ = tree
    job = root / "job"
    (job / "node1").mkdir()
    (job / "node1" / "rank1.log").write_text(INSIDE)
    (job / ".hidden.log").write_text(INSIDE)
    (job / "model.pt").write_bytes(b"\0" * 4096)  # a checkpoint: never opened, never counted
    os.mkfifo(job / "stream.log")  # a FIFO would block a plain open: skipped
    with ExitStack() as stack:
        [view] = open_under_roots([job], [root], tmp_path / "view", LIMITS, stack).paths
        links = sorted(str(p.relative_to(view)) for p in view.rglob("*") if p.is_symlink())
        assert links == ["node1/rank1.log", "rank0.log"]
        assert (view / "node1" / "rank1.log").read_text() == INSIDE
        fds = os.listdir("/proc/self/fd")
    assert len(os.listdir("/proc/self/fd")) < len(fds)  # closed with the stack


def test_a_file_in_a_folder_swapped_for_a_symlink_out_is_refused(tree, tmp_path: Path) -> None:
    root, secret = tree
    checked = safe_path("job", [root])  # no symlink out when checked
    (root / "job" / "rank0.log").unlink()
    (root / "job" / "rank0.log").symlink_to(secret / "job" / "rank0.log")
    with ExitStack() as stack, pytest.raises(InputError, match="job/rank0.log leads out of the log roots"):
        open_under_roots([checked], [root], tmp_path / "view", LIMITS, stack)


def test_several_paths_are_named_from_their_common_folder(tree, tmp_path: Path) -> None:
    root, _ = tree
    out, err = root / "slurm" / "train-17.out", root / "slurm" / "train-17.err"
    out.parent.mkdir()
    out.write_text(INSIDE)
    err.write_text(OUTSIDE)
    with ExitStack() as stack:
        [view] = open_under_roots([out, err, out], [root], tmp_path / "view", LIMITS, stack).paths
        assert sorted(p.name for p in view.iterdir()) == ["train-17.err", "train-17.out"]


def test_what_one_ask_may_read_is_capped(tree, tmp_path: Path) -> None:
    root, _ = tree
    job = root / "job"
    for i in range(3):
        (job / f"rank{i + 1}.log").write_text(INSIDE * 10)
    with ExitStack() as stack, pytest.raises(InputError, match=r"over the bot's limit \(max_read_bytes\)"):
        open_under_roots([job], [root], tmp_path / "v1", ReadLimits(bytes=1000, files=100), stack)
    with ExitStack() as stack, pytest.raises(InputError, match=r"more than 3 log files, .*\(max_read_files\)"):
        open_under_roots([job], [root], tmp_path / "v2", ReadLimits(bytes=10**9, files=3), stack)


def test_what_is_not_a_log_file_is_refused(tree, tmp_path: Path) -> None:
    root, _ = tree
    os.mkfifo(root / "pipe.log")
    (root / "empty").mkdir()
    with ExitStack() as stack, pytest.raises(InputError, match="pipe.log is not a regular file or folder"):
        open_under_roots([root / "pipe.log"], [root], tmp_path / "v1", LIMITS, stack)
    with ExitStack() as stack, pytest.raises(InputError, match="no log files under .*empty: expected text"):
        open_under_roots([root / "empty"], [root], tmp_path / "v2", LIMITS, stack)


def test_a_file_that_cannot_be_opened_is_skipped_not_fatal(tree, tmp_path: Path) -> None:
    root, _ = tree
    gone = root / "job" / "rank1.log"
    gone.symlink_to(root / "job" / "rank1.log.1")  # rotated away: the link is left dangling
    with ExitStack() as stack:
        opened = open_under_roots([root / "job"], [root], tmp_path / "view", LIMITS, stack)
        assert [p.name for p in opened.paths[0].iterdir()] == ["rank0.log"]
    assert [(s.path, s.reason) for s in opened.skipped] == [("rank1.log", "cannot read (No such file or directory)")]
    with ExitStack() as stack, pytest.raises(InputError, match=r"no log file of .*rank1.log could be read: .*rank1"):
        open_under_roots([gone], [root], tmp_path / "v2", LIMITS, stack)

"""agent/actions.py: a full disk that the job's own cache filled is the owner's to fix, not the storage team's."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.agent.actions import FULL_CACHE_STEP, drain_command
from crashcart.api import triage
from crashcart.knowledge.taxonomy import Action, FailureClass

# hiyouga/LlamaFactory#275: the datasets cache on a 10 GB system disk fills while it writes its Arrow files
DATASETS_CACHE = """\
Traceback (most recent call last):
  File "/root/miniconda3/lib/python3.8/site-packages/datasets/builder.py", line 1894, in _prepare_split_single
    writer.write_table(table)
  File "/root/miniconda3/lib/python3.8/site-packages/datasets/arrow_writer.py", line 575, in write_table
    self.pa_writer.write_table(pa_table, writer_batch_size)
  File "pyarrow/ipc.pxi", line 525, in pyarrow.lib._CRecordBatchWriter.write_table
  File "/root/miniconda3/lib/python3.8/site-packages/fsspec/implementations/local.py", line 382, in write
    return self.f.write(*args, **kwargs)
OSError: [Errno 28] No space left on device
"""
# modelscope/ms-swift#3551 (rank-prefixed, cut at the top): the same writer seen through pyarrow's Cython frame
CUT_AT_THE_TOP = """\
[rank4]:   File "pyarrow/error.pxi", line 89, in pyarrow.lib.check_status
[rank4]:     return self.f.write(*args, **kwargs)
[rank4]: OSError: [Errno 28] No space left on device
"""
# AASHISHAG/deepspeech-german#5: a TensorFlow checkpoint write fills the disk: storage's own default stands
CHECKPOINT = (
    "E ../checkpoint/model.ckpt-10051.data-00000-of-00001.tempstate13871076945433806239; No space left on device\n"
)
# datasets' check of the cache filesystem before it builds (src/datasets/builder.py)
DATASETS_CHECK = "OSError: Not enough disk space. Needed: 3.45 GiB (download: 1.20 GiB, generated: 2.25 GiB\n"


def _triage(tmp_path: Path, text: str):
    log = tmp_path / "train.log"
    log.write_text(text)
    return triage([str(log)], memory=None).diagnosis


@pytest.mark.parametrize("text", [DATASETS_CACHE, CUT_AT_THE_TOP, DATASETS_CHECK], ids=["frames", "cut", "check"])
def test_a_disk_filled_by_the_jobs_own_cache_is_fix_job(tmp_path: Path, text: str) -> None:
    diagnosis = _triage(tmp_path, text)
    assert (diagnosis.failure_class, diagnosis.action) == (FailureClass.STORAGE, Action.FIX_JOB)
    assert diagnosis.mitigation[0] == FULL_CACHE_STEP


def test_a_checkpoint_that_fills_the_disk_stays_with_the_storage_team(tmp_path: Path) -> None:
    diagnosis = _triage(tmp_path, CHECKPOINT)
    assert (diagnosis.failure_class, diagnosis.action) == (FailureClass.STORAGE, Action.ESCALATE_INFRA)
    assert FULL_CACHE_STEP not in diagnosis.mitigation


def test_a_drain_command_quotes_what_came_from_a_log() -> None:
    assert drain_command("node02", "crashcart: gpu_hardware") == (
        "scontrol update NodeName=node02 State=DRAIN Reason='crashcart: gpu_hardware'"
    )
    # a host name is read off a log line: whatever it holds stays one word for the shell
    assert drain_command("n1;reboot", "why") == "scontrol update NodeName='n1;reboot' State=DRAIN Reason=why"

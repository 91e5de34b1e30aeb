"""crashcart/render.py: what was skipped shows in the terminal and in Markdown, one line each, then a count; a
model the rules' sure verdict overruled is named."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from rich.console import Console

from crashcart.agent.consult import LLMOptions
from crashcart.api import triage
from crashcart.render import MAX_SKIPPED, to_markdown, to_terminal

# PyTorch's CUDA OOM as a rank prints it (the line of tests/crashcart/test_cli.py's OOM_LOG).
OOM = (
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB. GPU 3 has a total"
    " capacity of 79.10 GiB of which 98.00 MiB is free.\n"
)


def _job_with_binaries(tmp_path: Path, binaries: int) -> Path:
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.log").write_text(OOM)
    rng = random.Random(1)
    for i in range(binaries):  # core dumps, compressed blobs: nothing a log reader can use
        (job / f"blob{i:02d}").write_bytes(rng.randbytes(4096))
    return job


def _terminal(report) -> str:  # type: ignore[no-untyped-def]
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(to_terminal(report))
    return console.export_text()


def test_a_few_skipped_files_are_listed_one_a_line(tmp_path: Path) -> None:
    report = triage([_job_with_binaries(tmp_path, 2)], workers=1)
    assert report.diagnosis.failure_class.value == "gpu_oom"
    text = _terminal(report)
    assert "skipped: 2 not read, or not to the end" in text
    assert "blob00: binary: not text" in text and "blob01: binary: not text" in text
    md = to_markdown(report)
    assert "**Skipped: 2 not read, or not to the end**" in md
    assert "- `blob00`: binary: not text (compressed or encrypted data" in md


def test_many_skipped_files_end_in_a_count(tmp_path: Path) -> None:
    report = triage([_job_with_binaries(tmp_path, MAX_SKIPPED + 5)], workers=1)
    assert len(report.skipped) == MAX_SKIPPED + 5
    md = to_markdown(report)
    assert md.count("- `blob") == MAX_SKIPPED
    assert "- ... and 5 more (the JSON report lists them all)" in md
    text = _terminal(report)
    assert "... and 5 more (the JSON report lists them all)" in text and "blob14" not in text


def test_nothing_skipped_shows_nothing(tmp_path: Path) -> None:
    report = triage([_job_with_binaries(tmp_path, 0)], workers=1)
    assert report.skipped == []
    assert "kipped" not in to_markdown(report) and "kipped" not in _terminal(report)


@pytest.mark.parametrize(
    ("cls", "action", "line"),
    [
        ("cancelled", "retry", "the model answered cancelled → retry; the rules' sure verdict stands"),
        ("unknown", "escalate_infra", "the model could not tell (unknown); the rules' verdict stands"),
    ],
)
def test_a_model_the_rules_overruled_is_named_in_both_formats(fake_chat, cls: str, action: str, line: str) -> None:
    xid79 = Path(__file__).resolve().parents[2] / "examples" / "xid79-job" / "logs"  # the bundled example job
    reply = (
        f'{{"failure_class": "{cls}", "action": "{action}", "evidence": [{{"file": "kernel-node07.log", "line": 2}}], '
        '"rationale": "What the model read."}'
    )
    report = triage([xid79], chat_model=fake_chat([reply]), llm_options=LLMOptions(always=True))
    assert report.diagnosis.failure_class.value == "gpu_hardware"
    assert line in _terminal(report) and f"_{line}_" in to_markdown(report)


def test_a_model_that_was_asked_and_fell_back_says_so_and_why_in_both_formats(tmp_path: Path, fake_chat) -> None:
    from fakes.chat import bad_request_error

    log = tmp_path / "train.log"
    log.write_text(OOM)
    prose = "It looks like the GPU ran out of memory, I think."  # no JSON: rejected, re-asked, then given up
    report = triage(
        [str(log)],
        chat_model=fake_chat([prose, prose, prose]),
        llm_options=LLMOptions(always=True),
    )
    assert report.llm is not None and report.llm.fallback
    line = "was asked and the rules' diagnosis stands: invalid answer"
    assert line in _terminal(report) and line in to_markdown(report)
    report = triage([str(log)], chat_model=fake_chat([bad_request_error()]), llm_options=LLMOptions(always=True))
    assert report.llm is not None and report.llm.errors  # a client error is not retried: it is the reason given
    assert f"was asked and the rules' diagnosis stands: {report.llm.errors[-1][:60]}" in _terminal(report)


# loguru's colours as datatrove wrote them to a log file (huggingface/datatrove#131)
COLOURED = (
    "\x1b[32m2024-03-22 07:26:34.220\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36mdatatrove.utils.logging\x1b[0m:"
    "\x1b[36madd_task_logger\x1b[0m:\x1b[36m47\x1b[0m - \x1b[1mLaunching pipeline for rank=275\x1b[0m\n"
)


def test_log_text_and_file_names_reach_the_terminal_and_markdown_escaped(tmp_path: Path) -> None:
    job = _job_with_binaries(tmp_path, 1)
    (job / "run\x1b]0;pwned\x07.log").write_text(COLOURED + OOM)  # a file name may hold any byte but /
    (job / "blob\x1b[2J00").write_bytes((job / "blob00").read_bytes())  # skipped: its name is shown too
    report = triage([job], workers=1)
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(to_terminal(report))
    for text in (out.getvalue(), to_markdown(report)):
        assert "\x1b" not in text and "\x07" not in text
        assert "run\\x1b]0;pwned\\x07.log:" in text and "blob\\x1b[2J00" in text

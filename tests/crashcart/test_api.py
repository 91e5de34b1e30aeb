"""crashcart.api.triage on mutated real log lines: a Report or a CrashcartError, never another exception.

The seeds are real lines: the healthy corpus (knowledge/healthy/*.log, sources in its sources.yaml) and every
shipped rule's examples (knowledge/signatures/*.yaml, each with where it was seen). Mutations are what real logs
do to lines: counters past any limit, NULs from a crashed writer, undecodable bytes, CR from progress bars,
colour codes, megabyte tokens, cut lines, brackets left open, and odd file names. Every report is rendered
too, since a crash in the renderer is a crash of the command. Derandomised, so a run is reproducible; set
CRASHCART_FUZZ_EXAMPLES to explore further.
"""

from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from crashcart.api import Report, triage
from crashcart.knowledge.errors import CrashcartError
from crashcart.knowledge.healthy import healthy_corpus
from crashcart.knowledge.rules import load_rules
from crashcart.render import to_json, to_markdown, to_terminal

FAILING = sorted({line for rule in load_rules() for line in rule.examples})
HEALTHY = healthy_corpus()
EXAMPLES = int(os.environ.get("CRASHCART_FUZZ_EXAMPLES", "60"))

_INSERTS = [
    b"\x00",
    b"\r",
    b"\x1b[31m",
    b"\x1b]0;title\x07",
    b"\x9b",
    b"\xed\xa0\x80",  # a lone surrogate (U+D800) as a UTF-8 encoder that allows them writes it
    b"\xff\xfe",
    b"\xc3",  # a multi-byte character cut in half
    b"[",
    b"]",
    b"[rank",
    b"(",
    b"\\",
    b"\t",
]
_NAMES = [
    "train.log",
    "rank_" + "9" * 240 + ".log",  # a file name holds 255 bytes at most
    "slurm-1234-" + "9" * 240 + ".out",
    "node\x1b]0;t\x07-07.log",
    "n\nl.log",
    os.fsdecode(b"\xffnode07.log"),  # an undecodable name, as os.listdir gives it
    "x[/].log".replace("/", "]["),
]


# The crashes issue 9 found, kept as fixed cases: shipped examples with one number past int()'s 4,300 digits.
BIG = "9" * 5000
ISSUE_9 = [
    "[rank2]:[E ProcessGroupNCCL.cpp:754] [Rank 2] Watchdog caught collective operation timeout: "
    f"WorkNCCL(SeqNum={BIG}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600381 "
    "milliseconds before timing out.",
    f"srun: error: gpu-node-12: task {BIG}: Exited with exit code 137",
    f"gpu-node-01:2211:2290 [0] NCCL INFO comm 0x55d4c2a0 rank {BIG} nranks 16 cudaDev 0 nvmlDev 0 busId 18000 "
    "commId 0x8a4b1c2d3e4f5a6b - Init COMPLETE",
]


@st.composite
def mutated_line(draw: st.DrawFn) -> bytes:
    line = draw(st.sampled_from(FAILING) | st.sampled_from(HEALTHY)).encode()
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["number", "number", "insert", "token", "cut", "prefix"]))
        at = draw(st.integers(0, len(line)))
        if kind == "number":  # one of the line's numbers, or a new one
            runs = [m.span() for m in re.finditer(rb"\d+", line)] or [(at, at)]
            start, end = runs[draw(st.integers(0, len(runs) - 1))]
            line = line[:start] + b"9" * draw(st.sampled_from([21, 4301, 20_000])) + line[end:]
        elif kind == "insert":
            line = line[:at] + draw(st.sampled_from(_INSERTS) | st.binary(min_size=1, max_size=6)) + line[at:]
        elif kind == "token":
            line = line[:at] + b"A" * draw(st.sampled_from([5_000, 300_000])) + line[at:]
        elif kind == "cut":
            line = line[:at]
        else:
            line = draw(st.sampled_from([b"[rank", b"[default", b"[1,", b""])) + b"9" * 5000 + b"]: " + line
    return line


@st.composite
def log_file(draw: st.DrawFn) -> tuple[str, bytes]:
    lines = draw(st.lists(mutated_line(), min_size=1, max_size=12))
    newline = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    return draw(st.sampled_from(_NAMES)), newline.join(lines) + draw(st.sampled_from([newline, b""]))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@example(files=[("train.log", "\n".join(ISSUE_9).encode() + b"\n")])
@example(files=[(os.fsdecode(b"\xffnode07.log"), ISSUE_9[1].encode())])
@given(files=st.lists(log_file(), min_size=1, max_size=3, unique_by=lambda f: f[0]))
def test_mutated_real_lines_give_a_report_or_a_crashcart_error(tmp_path: Path, files: list[tuple[str, bytes]]) -> None:
    job = tmp_path / "job"
    shutil.rmtree(job, ignore_errors=True)
    job.mkdir()
    for name, data in files:
        (job / name).write_bytes(data)
    try:
        report = triage([job], workers=1)
    except CrashcartError:
        return
    assert isinstance(report, Report)
    Console(file=io.StringIO(), width=120).print(to_terminal(report))
    to_markdown(report)
    to_json(report)

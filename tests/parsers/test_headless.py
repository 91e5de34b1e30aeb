"""A traceback the log starts inside of: frames and the exception, the header cut away above them."""

from __future__ import annotations

from crashcart.knowledge.records import LineRef
from crashcart.parsers.headless import HEADLESS_LINES, headless_start, read_headless

# mlfoundations/open_clip#935: the excerpt starts at the last frame
CUT = [
    'File "./src/training/data.py", line 281, in group_by_keys_nothrow',
    '    fname, value = filesample["fname"], filesample["data"]',
    "KeyError: 'fname'",
]
# TongkunGuan/CCD#13, cut below its header: the job's own line, then the frames
CUT_BELOW_A_LINE = [
    "[2024-04-11 16:02:33,141 train.py:52 INFO pre_tiny_65536] Construct dataset.",
    '  File "train.py", line 417, in _get_dataset',
    "    subfolders = [f.path for f in os.scandir(p) if f.is_dir()]",
    "FileNotFoundError: [Errno 2] No such file or directory: '/data/gx/OCR-CC/data_lmdb/training/label/Synth/'",
]


def make_ref(text: str, no: int) -> LineRef:
    return LineRef(file="excerpt.log", line=no, text=text)


def test_frames_at_the_top_of_a_file_are_a_traceback_with_its_exception() -> None:
    assert headless_start(CUT) == 0
    record, used = read_headless(CUT, 1, make_ref)
    assert record is not None and used == 3
    (exc,) = record.chain
    assert (exc.exc_type, exc.message, exc.ref.line) == ("KeyError", "'fname'", 3)
    assert [(f.function, f.source) for f in exc.frames] == [
        ("group_by_keys_nothrow", 'fname, value = filesample["fname"], filesample["data"]')
    ]


def test_the_first_frame_may_follow_a_few_other_lines() -> None:
    at = headless_start(CUT_BELOW_A_LINE)
    assert at == 1
    record, _ = read_headless(CUT_BELOW_A_LINE[at:], at + 1, make_ref)
    assert record is not None and record.chain[-1].exc_type == "FileNotFoundError"


def test_a_file_whose_traceback_has_its_header_is_left_to_the_header() -> None:
    whole = [CUT_BELOW_A_LINE[0], "Traceback (most recent call last):", *CUT_BELOW_A_LINE[1:]]
    assert headless_start(whole) is None


def test_frames_deep_in_a_file_are_not_looked_for() -> None:
    # torch/distributed/run.py's start-up note (pytorch/pytorch#101281), then the cut traceback
    note = "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default"
    assert headless_start([note] * HEADLESS_LINES + CUT) is None


def test_frames_with_no_exception_after_them_are_no_record() -> None:
    assert read_headless(CUT[:2], 1, make_ref) == (None, 1)

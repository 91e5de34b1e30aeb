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


# princeton-nlp/MeZO#12: the excerpt starts inside rich's box, its first line without the box's left edge, and
# Colab's tqdm (no bar drawn) prints right under the exception
CUT_BOX = [
    "/content/MeZO/large_models/trainer.py:555 in _inner_training_loop            │",
    "│                                                                              │",
    "│   552 │   │   │   │   self.current_flos += float(self.floating_point_ops(inp │",
    "│   553 │   │   │   │                                                          │",
    "│   554 │   │   │   │   # Optimizer step for deepspeed must be called on every │",
    "│ ❱ 555 │   │   │   │   if self.deepspeed:                                     │",
    "│   556 │   │   │   │   │   self.deepspeed.step()                              │",
    "╰──────────────────────────────────────────────────────────────────────────────╯",
    "AttributeError: 'OurTrainer' object has no attribute 'deepspeed'",
    "  0% 0/625 [00:01<?, ?it/s]",
]


def test_a_rich_box_cut_at_its_top_is_a_traceback_too() -> None:
    assert headless_start(CUT_BOX) == 0
    record, used = read_headless(CUT_BOX, 1, make_ref)
    assert record is not None and record.kind == "rich" and used == 9
    (exc,) = record.chain
    assert (exc.exc_type, exc.message, exc.ref.line) == (
        "AttributeError",
        "'OurTrainer' object has no attribute 'deepspeed'",
        9,
    )
    assert [(f.file, f.function, f.source) for f in exc.frames] == [
        ("/content/MeZO/large_models/trainer.py", "_inner_training_loop", "if self.deepspeed:")
    ]


def test_box_lines_with_no_frame_in_them_are_no_record() -> None:
    # a rich table at the top of a log is box-drawn too, but holds no frame: Lightning's RichModelSummary rows as a
    # public training log printed them, then an exception line of another log (CUT's)
    table = [
        "│ 0 │ model   │ Transformer      │ 56.3 M │",
        "│ 1 │ loss_fn │ CrossEntropyLoss │      0 │",
        "└───┴─────────┴──────────────────┴────────┘",
        CUT[-1],
    ]
    assert headless_start(table) == 0
    assert read_headless(table, 1, make_ref)[0] is None

"""A traceback the log starts inside of: frames and the exception, the header cut away above them."""

from __future__ import annotations

from crashcart.knowledge.records import LineRef
from crashcart.parsers.frames import in_call_order
from crashcart.parsers.headless import (
    HEADLESS_LINES,
    chain_head,
    headless_start,
    headless_starts,
    may_start_inside,
    read_headless,
)
from crashcart.parsers.models import Frame
from crashcart.parsers.printers import Cursor, printed_lines
from crashcart.parsers.pytracebacks import read_frames

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


# -- cut tracebacks behind a printer's prefix, later parts of a chain, frames listed innermost first ------------

# qibin0506/Cortex#13: torchrun's `[rank1]:` prefix on every line, the excerpt cut below the header
RANK_PREFIXED = [
    '[rank1]:   File "/home/youwei/github/Cortex/.venv/lib/python3.12/site-packages/llm_trainer/dataset.py", line 45, in __init__',  # noqa: E501
    "[rank1]:     for line in f:",
    "[rank1]:                 ^",
    '[rank1]:   File "<frozen codecs>", line 322, in decode',
    "[rank1]: UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80 in position 0: invalid start byte",
]
# Theodore-PKU/MC-DDPM#1: the excerpt starts at the tail of the chain's first exception (its message, its type
# line cut), then the frames of the second with no header above them, innermost first, and no exception line
CHAIN_TAIL_REVERSED = [
    "'LOCAL_RANK'",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    '  File "/hdd1/MC_DDPM/utils/dist_util.py", line 22, in setup_dist',
    '    th.cuda.set_device(int(os.environ["LOCAL_RANK"]))',
    '  File "/hdd1/MC_DDPM/kspace_train.py", line 26, in main',
    "    is_distributed, rank = dist_util.setup_dist()",
    '  File "/hdd1/MC_DDPM/kspace_train.py", line 98, in <module>',
    "    main()",
]


def test_a_cut_traceback_behind_a_rank_prefix_is_read_with_its_printers_lines() -> None:
    [start] = headless_starts(RANK_PREFIXED)
    assert (start.at, start.prefix, start.lead) == (0, len("[rank1]: "), None)
    record, used = read_headless(RANK_PREFIXED, 1, make_ref, prefix=start.prefix)
    assert record is not None and used == 5
    (exc,) = record.chain
    assert (exc.exc_type, exc.ref.line) == ("UnicodeDecodeError", 5)
    assert [(f.function, f.source) for f in exc.frames] == [("__init__", "for line in f:"), ("decode", None)]


def test_interleaved_ranks_each_start_a_cut_traceback_of_their_own() -> None:
    # RANK_PREFIXED as two ranks running the same code print it, their lines interleaved as a launcher merges them
    rank0 = [line.replace("[rank1]:", "[rank0]:", 1) for line in RANK_PREFIXED]
    merged = [line for pair in zip(rank0, RANK_PREFIXED, strict=True) for line in pair]
    starts = headless_starts(merged)
    assert [(s.at, s.prefix) for s in starts] == [(0, 9), (1, 9)]
    for start, rank in zip(starts, ("[rank0]:", "[rank1]:"), strict=True):
        record, used = read_headless(merged[start.at :], start.at + 1, make_ref, prefix=start.prefix)
        assert record is not None
        (exc,) = record.chain
        assert exc.ref.text.startswith(rank) and exc.exc_type == "UnicodeDecodeError" and len(exc.frames) == 2
        assert used == 9  # up to its own exception line, the other rank's lines between counted


def test_frames_below_a_chain_separator_are_a_later_part_even_with_no_exception_line() -> None:
    [start] = headless_starts(CHAIN_TAIL_REVERSED)
    assert (start.at, start.lead) == (4, 0)
    lead = CHAIN_TAIL_REVERSED[start.lead : start.at]
    record, used = read_headless(CHAIN_TAIL_REVERSED[start.at :], start.at + 1, make_ref, lead=lead)
    assert record is not None and used == 6
    assert record.chain == [] and (record.start.line, record.start.text) == (1, "'LOCAL_RANK'")
    # listed innermost first: put back in Python's order, the frame that reads the variable last
    assert [(f.function, f.source) for f in record.unfinished] == [
        ("<module>", "main()"),
        ("main", "is_distributed, rank = dist_util.setup_dist()"),
        ("setup_dist", 'th.cuda.set_device(int(os.environ["LOCAL_RANK"]))'),
    ]


def test_frames_without_a_separator_above_them_still_need_their_exception_line() -> None:
    frames = CHAIN_TAIL_REVERSED[4:]
    [start] = headless_starts(frames)
    assert start.lead is None and read_headless(frames, 1, make_ref) == (None, 1)


def test_frames_in_pythons_order_are_kept_as_they_are() -> None:
    frames = traceback_frames(CHAIN_TAIL_REVERSED[4:])  # as read, innermost first
    forward = frames[::-1]  # <module> first, as Python prints it
    assert in_call_order(forward) == forward
    assert in_call_order(frames) == forward
    # one frame, or frames whose sources call none of the others: nothing to go by, left as printed
    assert in_call_order(forward[:1]) == forward[:1]
    # TongkunGuan/CCD#13's frames, cut below the header: `train(config)` calls the frame after it
    ccd = traceback_frames(CCD_FRAMES)
    assert [f.function for f in in_call_order(ccd)] == ["<module>", "train", "_get_dataset"]


CCD_FRAMES = [
    '  File "train.py", line 457, in <module>',
    "    train(config)",
    '  File "train.py", line 53, in train',
    "    train_dataloader = _get_databaunch(config)",
    '  File "train.py", line 417, in _get_dataset',
    "    subfolders = [f.path for f in os.scandir(p) if f.is_dir()]",
]


def traceback_frames(lines: list[str]) -> list[Frame]:
    return read_frames(Cursor(printed_lines(lines, 0).lines))


# hkust-nlp/simpleRL-reason#19: a Ray actor's lines, each behind Ray's `(Name pid=N) ` prefix, the excerpt cut inside
# the traceback; Ray's deduplication tagged a frame other workers printed too
RAY_PREFIXED = [
    "(ActorModelRayActorBOX pid=499618)     self.checkpoint_engine.save(zero_sd, zero_checkpoint_name)",
    '(ActorModelRayActorBOX pid=499618)   File "/root/miniconda3/envs/zero/lib/python3.10/site-packages/torch/serialization.py", line 849, in save [repeated 2x across cluster]',  # noqa: E501
    "(ActorModelRayActorBOX pid=499618)     torch.save(state_dict, path)",
    "(ActorModelRayActorBOX pid=499618)     with _open_zipfile_writer(f) as opened_zipfile:",
    '(ActorModelRayActorBOX pid=499618)   File "/root/miniconda3/envs/zero/lib/python3.10/site-packages/torch/serialization.py", line 690, in __exit__',  # noqa: E501
    "(ActorModelRayActorBOX pid=499618)     self.file_like.write_end_of_file()",
    "(ActorModelRayActorBOX pid=499618) RuntimeError: [enforce fail at inline_container.cc:603] . unexpected pos 2368 vs 2262",  # noqa: E501
]


def test_a_cut_traceback_behind_a_ray_workers_prefix_is_read_too() -> None:
    [start] = headless_starts(RAY_PREFIXED)
    assert (start.at, start.prefix) == (1, len("(ActorModelRayActorBOX pid=499618) "))
    record, used = read_headless(RAY_PREFIXED[1:], 2, make_ref, prefix=start.prefix)
    assert record is not None and used == 6
    (exc,) = record.chain
    assert (exc.exc_type, exc.ref.line) == ("RuntimeError", 7)
    assert [(f.function, f.source) for f in exc.frames] == [
        ("save", "torch.save(state_dict, path)"),  # Ray's ` [repeated 2x across cluster]` is not the function's
        ("__exit__", "self.file_like.write_end_of_file()"),
    ]


# shijx12/XNM-Net#11: an IPython traceback cut inside its last frame's source, the exception under it
IPYTHON_CUT = [
    "     91         with open(scene_pt_path, 'rb') as f:",
    "     92             print(f)",
    "---> 93             conn_matrixes = pickle.load(f)",
    "     94             print(f)",
    "     95             edge_matrixes = pickle.load(f)",
    "",
    "EOFError: Ran out of input",
]


def test_an_ipython_traceback_cut_inside_a_frames_source_is_read_from_there() -> None:
    [start] = headless_starts(IPYTHON_CUT)
    assert start.at == 0
    record, used = read_headless(IPYTHON_CUT, 1, make_ref)
    assert record is not None and used == 7
    (exc,) = record.chain
    assert (exc.exc_type, exc.message, exc.ref.line) == ("EOFError", "Ran out of input", 7)
    assert [(f.line, f.source) for f in exc.frames] == [(93, "conn_matrixes = pickle.load(f)")]


def test_numbered_lines_with_no_arrow_among_them_are_no_ipython_frame() -> None:
    # the same excerpt without its failing line: a numbered listing is not enough
    listing = IPYTHON_CUT[:2] + IPYTHON_CUT[3:]
    [start] = headless_starts(listing)  # only the exception line, read alone: the listing gives no frame
    assert listing[start.at].startswith("EOFError")
    record, _ = read_headless(listing[start.at :], start.at + 1, make_ref)
    assert record is not None and [e.frames for e in record.chain] == [[]]


# Visual-AI/3DRS#7: a paste that lost its indentation (frames and sources flush left, no blank lines around the
# separator), cut at its head and inside the second part of its chain
DEDENTED = [
    'File "/root/miniconda3/envs/3drs/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1132, in _try_get_data',  # noqa: E501
    "data = self._data_queue.get(timeout=timeout)",
    'File "/root/miniconda3/envs/3drs/lib/python3.10/queue.py", line 180, in get',
    "self.not_empty.wait(remaining)",
    'File "/root/miniconda3/envs/3drs/lib/python3.10/threading.py", line 324, in wait',
    "gotit = waiter.acquire(True, timeout)",
    'File "/root/miniconda3/envs/3drs/lib/python3.10/site-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler',  # noqa: E501
    "_error_if_any_worker_fails()",
    "RuntimeError: DataLoader worker (pid 108439) is killed by signal: Killed.",
    "The above exception was the direct cause of the following exception:",
    "Traceback (most recent call last):",
    'File "/root/paddlejob/workspace/env_run/dkliang/a100/xjwu/3DRS/llava/train/train_3d.py", line 1919, in train',
    "trainer.train()",
    'File "/root/paddlejob/workspace/env_run/dkliang/a100/xjwu/3DRS/transformers/src/transformers/trainer.py", line 1806, in train',  # noqa: E501
    "return inner_training_loop(",
]


def test_a_paste_that_lost_its_indentation_keeps_each_frames_source() -> None:
    record, used = read_headless(DEDENTED, 1, make_ref)
    assert record is not None and used == len(DEDENTED)
    (exc,) = record.chain
    assert (exc.exc_type, exc.ref.line) == ("RuntimeError", 9)
    assert [(f.function, f.source) for f in exc.frames] == [
        ("_try_get_data", "data = self._data_queue.get(timeout=timeout)"),
        ("get", "self.not_empty.wait(remaining)"),
        ("wait", "gotit = waiter.acquire(True, timeout)"),
        ("handler", "_error_if_any_worker_fails()"),
    ]
    # the chain's next part, cut before its exception line: its frames are kept, not dropped with the lines
    assert [(f.function, f.source) for f in record.unfinished] == [
        ("train", "trainer.train()"),
        ("train", "return inner_training_loop("),
    ]


def test_a_flush_left_exception_line_under_a_flush_left_frame_is_no_source() -> None:
    record, _ = read_headless(DEDENTED[6:9], 7, make_ref)
    assert record is not None
    (exc,) = record.chain
    assert exc.frames[0].source == "_error_if_any_worker_fails()" and exc.ref.line == 9
    record, _ = read_headless([DEDENTED[6], DEDENTED[8]], 7, make_ref)
    assert record is not None
    (exc,) = record.chain
    assert exc.frames[0].source is None and exc.exc_type == "RuntimeError"


# hpcaitech/Open-Sora#146 pasted the exception line alone; above it, a line of prose as open-mmlab/mmsegmentation#2085
# opens its excerpt
LONE_EXCEPTION = [
    "After the model starts training for a while, an error is reported:",
    "huggingface_hub.utils._validators.HFValidationError: Repo id must be in the form 'repo_name' or"
    " 'namespace/repo_name': './pretrained_models/t5_ckpts/t5-v1_1-xxl'. Use `repo_type` argument if needed.",
]


def test_an_exception_line_with_no_frames_is_a_frameless_traceback() -> None:
    [start] = headless_starts(LONE_EXCEPTION)
    assert start.at == 1
    record, _ = read_headless(LONE_EXCEPTION[1:], 2, make_ref)
    assert record is not None
    (exc,) = record.chain
    assert (exc.exc_type, exc.ref.line, exc.frames) == ("huggingface_hub.utils._validators.HFValidationError", 2, [])


def test_a_line_that_only_looks_typed_is_no_exception() -> None:
    # `Name: text` lines that no exception printed, from knowledge/healthy's Megatron and Slurm logs
    head = [
        "libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0",
        "salloc: Nodes ioctl are ready for job",
    ]  # NVIDIA/Megatron-LM#51, NVIDIA/pyxis#28
    assert headless_starts(head) == []


def test_every_head_with_a_start_bears_a_mark_and_a_plain_head_none() -> None:
    heads = [CUT, CUT_BELOW_A_LINE, CUT_BOX, RANK_PREFIXED, CHAIN_TAIL_REVERSED, RAY_PREFIXED, IPYTHON_CUT, DEDENTED]
    heads.append(LONE_EXCEPTION)
    assert all(headless_starts(head) for head in heads)
    assert all(may_start_inside(head) for head in heads)
    nccl = [  # a rank file's first lines (NVIDIA/nccl's INFO lines), nothing cut above them
        "node00:20011:20011 [1] NCCL INFO Bootstrap : Using ib0:10.64.0.2<0>",
        "node00:20011:20011 [1] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)",
        "node00:20011:20175 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via P2P/CUMEM",  # an arrow, not IPython's
        "node00:20011:20175 [1] NCCL INFO Connected all rings",
    ]
    assert not may_start_inside(nccl) and not headless_starts(nccl) and chain_head(nccl) is None

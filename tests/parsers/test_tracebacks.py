"""read_structure on real tracebacks and hang dumps: the lines as printed, next to the record they give.

Every log below is copied from the public thread named above it; where a test arranges real lines the way a
launcher or a console would have printed them (ranks interleaved, an 80-column console), it says so.
"""

from __future__ import annotations

import time

import hyperscan
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from crashcart.knowledge.records import LineRef
from crashcart.parsers.headers import find_header
from crashcart.parsers.models import StackDump, Traceback
from crashcart.parsers.raised import MAX_MESSAGE_CHARS
from crashcart.parsers.tracebacks import HEADER_PATTERNS, MAX_WINDOW_LINES, read_structure


def ref(text: str, line: int) -> LineRef:
    return LineRef(file="train.log", line=line, text=text)


def lines_of(log: str) -> list[str]:
    return log.strip("\n").split("\n")


def read(log: str | list[str], first_line: int = 1) -> tuple[Traceback | StackDump | None, int]:
    return read_structure(lines_of(log) if isinstance(log, str) else log, first_line, ref)


def traceback_of(log: str | list[str]) -> Traceback:
    record, _ = read(log)
    assert isinstance(record, Traceback)
    return record


def stack_of(log: str | list[str]) -> StackDump:
    record, _ = read(log)
    assert isinstance(record, StackDump)
    return record


# -- the header patterns -----------------------------------------------------------------------------------


def test_every_header_pattern_compiles_in_hyperscan_and_in_re2() -> None:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(
        expressions=[p.encode() for p in HEADER_PATTERNS],
        ids=list(range(len(HEADER_PATTERNS))),
        elements=len(HEADER_PATTERNS),
        flags=[hyperscan.HS_FLAG_MULTILINE] * len(HEADER_PATTERNS),
    )
    for pattern in HEADER_PATTERNS:
        re2.compile(pattern)


HEADERS = [
    "Traceback (most recent call last):",
    "[rank1]: Traceback (most recent call last):",  # vllm-project/vllm#10453
    "Original Traceback (most recent call last):",  # Suanmd/TR-MISR#3
    # bmaltais/kohya_ss#1105: rich's box after a progress bar that printed no newline
    "steps:   0%|                                                                                  | 0/1200 [00:00<?, ?it/s]╭─────────────────────────────── Traceback (most recent call last) ────────────────────────────────╮",  # noqa: E501
    "terminate called after throwing an instance of 'c10::Error'",  # xieyuser/GS-LIVM#12
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",  # Vision-CAIR/MiniGPT-4#237
    "RuntimeError: Caught RuntimeError in DataLoader worker process 0.",  # Suanmd/TR-MISR#3
    "Current thread 0x00007fa2972464c0 (most recent call first):",  # ziyanx02/Genesis-backflip#2
    "Thread 0x00007f6f01c8d700:",  # pychess/pychess#899: Python 2's faulthandler
    'Thread 187 (idle): "MainThread"',  # sgl-project/sglang#31178: py-spy dump
    "Thread 0x7F4AA36D9700 (active)",  # ray-project/ray#3187: py-spy dump before thread names
]
NOT_HEADERS = [
    # xieyuser/GS-LIVM#12: a c10::Error's own stack, part of its message
    "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44 (most recent call first):",
    # NVIDIA/TensorRT-LLM#2560: gdb's threads
    'Thread 4 (Thread 0x7fd09a759000 (LWP 3913167) "cuda00006000019"):',
    "Exception in thread Thread-1:",  # PaddlePaddle/PaddleDetection#7831 (the dev set's d-storage-io-003)
]


def test_the_header_patterns_match_first_lines_and_only_those() -> None:
    hs = [re2.compile(p) for p in HEADER_PATTERNS]
    for line in HEADERS:
        assert any(p.search(line) for p in hs), line
    for line in NOT_HEADERS:
        assert not any(p.search(line) for p in hs), line


def test_the_scanners_header_check_finds_every_header_past_its_substring_prefilter() -> None:
    assert all(find_header(line) is not None for line in HEADERS)
    assert all(find_header(line) is None for line in NOT_HEADERS)


# -- Python tracebacks -------------------------------------------------------------------------------------

# hhj1897/face_parsing#3
UNPICKLING = """
Traceback (most recent call last):
  File "face_parsing_test.py", line 141, in <module>
    main()
  File "face_parsing_test.py", line 50, in main
    face_parser = RTNetPredictor(
  File "/home/ml/radishevskii/face_parsing/ibug/face_parsing/parser.py", line 81, in __init__
    ckpt = torch.load(ckpt, 'cpu')
  File "/home/ml/radishevskii/anaconda3/envs/inga_vlad/lib/python3.8/site-packages/torch/serialization.py", line 593, in load
    return _legacy_load(opened_file, map_location, pickle_module, **pickle_load_args)
  File "/home/ml/radishevskii/anaconda3/envs/inga_vlad/lib/python3.8/site-packages/torch/serialization.py", line 762, in _legacy_load
    magic_number = pickle_module.load(f, **pickle_load_args)
_pickle.UnpicklingError: invalid load key, 'v'.
"""  # noqa: E501


def test_a_traceback_gives_its_frames_their_packages_and_the_dotted_exception_type() -> None:
    record, consumed = read(UNPICKLING, first_line=40)
    assert isinstance(record, Traceback) and record.kind == "python" and consumed == 12
    (exc,) = record.chain
    assert (exc.exc_type, exc.message) == ("_pickle.UnpicklingError", "invalid load key, 'v'.")
    assert (exc.ref.line, exc.ref.text) == (51, "_pickle.UnpicklingError: invalid load key, 'v'.")
    assert record.start.line == 40
    assert [(f.function, f.package) for f in exc.frames] == [
        ("<module>", None),
        ("main", None),
        ("__init__", None),
        ("load", "torch"),
        ("_legacy_load", "torch"),
    ]
    assert exc.frames[0].file == "face_parsing_test.py" and exc.frames[0].line == 141
    assert exc.frames[-1].source == "magic_number = pickle_module.load(f, **pickle_load_args)"


# maszhongming/MatchSum#11
BARE_ASSERT = """
Traceback (most recent call last):
  File "train_matching.py", line 150, in <module>
    train_model(args)
  File "train_matching.py", line 70, in train_model
    assert args.batch_size % len(devices) == 0
AssertionError
"""


def test_a_bare_assertion_error_keeps_the_asserted_expression() -> None:
    (exc,) = traceback_of(BARE_ASSERT).chain
    assert (exc.exc_type, exc.message) == ("AssertionError", "")
    assert exc.assertion == "args.batch_size % len(devices) == 0"


# fla-org/flame#43: transformers' KeyError, then, while handling it, the ValueError that says what it means
CONTEXT_CHAIN = """
Traceback (most recent call last):
  File "/home/xxx/miniconda3/envs/flame/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py", line 1309, in from_pretrained
    config_class = CONFIG_MAPPING[config_dict["model_type"]]
                   ~~~~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/home/xxx/miniconda3/envs/flame/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py", line 1004, in __getitem__
    raise KeyError(key)
KeyError: 'transformer'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/home/xxx/miniconda3/envs/flame/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py", line 1311, in from_pretrained
    raise ValueError(
ValueError: The checkpoint you are trying to load has model type `transformer` but Transformers does not recognize this architecture. This could be because of an issue with the checkpoint, or because your version of Transformers is out of date.
"""  # noqa: E501


def test_a_chain_is_one_record_oldest_exception_first() -> None:
    record, consumed = read(CONTEXT_CHAIN)
    assert isinstance(record, Traceback) and consumed == len(lines_of(CONTEXT_CHAIN))
    first, second = record.chain
    assert (first.exc_type, first.message, first.relation) == ("KeyError", "'transformer'", None)
    assert first.frames[0].source == 'config_class = CONFIG_MAPPING[config_dict["model_type"]]'  # carets skipped
    assert (second.exc_type, second.relation) == ("ValueError", "context")
    assert second.message.startswith("The checkpoint you are trying to load has model type `transformer`")
    assert (second.frames[0].file, second.frames[0].source, second.frames[0].package) == ("<string>", None, None)
    assert second.frames[1].package == "transformers"


# Chinese-Llama-2-7b's launcher, interrupted (LinkSoul-AI/Chinese-Llama-2-7b#27); the thread's log ends at the
# separator, so the exception that followed it is not in the window.
SEPARATOR_AT_THE_END = """
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/agent/server/api.py", line 736, in run
    result = self._invoke_run(role)
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/agent/server/api.py", line 877, in _invoke_run
    time.sleep(monitor_interval)
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/multiprocessing/api.py", line 62, in _terminate_process_handler
    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)
torch.distributed.elastic.multiprocessing.api.SignalException: Process 1313 got signal: 2

During handling of the above exception, another exception occurred:
"""  # noqa: E501


def test_a_separator_with_no_traceback_after_it_is_left_unread() -> None:
    record, consumed = read(SEPARATOR_AT_THE_END)
    assert isinstance(record, Traceback) and consumed == 8
    (exc,) = record.chain
    assert exc.exc_type == "torch.distributed.elastic.multiprocessing.api.SignalException"
    assert exc.message == "Process 1313 got signal: 2"


# nanoporetech/taiyaki#66 (the dev set's d-storage-001): the log ends at the exception and GNU time's line
TRUNCATED = """
Traceback (most recent call last):
  File "/home/s953272/sw/taiyaki/bin/train_flipflop.py", line 530, in <module>
    main()
  File "/home/s953272/sw/taiyaki/bin/train_flipflop.py", line 456, in main
    None if args.gradient_cap_fraction is None else gradient_cap)
  File "/home/s953272/TAIYAKI_ENV/lib/python3.6/site-packages/taiyaki-5.0.1-py3.6-linux-x86_64.egg/taiyaki/helpers.py", line 233, in record
    self.write("{:5.4f}\\t{:5.4f}\\t".format(loss, gradientnorm))
"""  # noqa: E501


def test_a_traceback_cut_before_its_exception_keeps_the_frames_it_printed() -> None:
    record = traceback_of(TRUNCATED)
    assert record.chain == []
    assert [(f.function, f.package) for f in record.unfinished] == [
        ("<module>", None),
        ("main", None),
        ("record", "taiyaki"),
    ]


# -- DataLoader workers ------------------------------------------------------------------------------------

# Suanmd/TR-MISR#3: the main process re-raises what DataLoader worker 0 raised
WORKER_RERAISE = r"""
RuntimeError: Caught RuntimeError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "C:\Users\user\anaconda3\envs\endo\lib\site-packages\torch\utils\data\_utils\worker.py", line 302, in _worker_loop
    data = fetcher.fetch(index)
  File "C:\Users\user\anaconda3\envs\endo\lib\site-packages\torch\utils\data\_utils\fetch.py", line 52, in fetch
    return self.collate_fn(data)
  File "C:\Users\user\Desktop\TR-MISR-master\src\utils.py", line 65, in __call__
    return self.collateFunction(batch)
  File "C:\Users\user\Desktop\TR-MISR-master\src\utils.py", line 118, in collateFunction
    padded_lr_batch = torch.stack(lr_batch, dim=0)
RuntimeError: stack expects each tensor to be equal size, but got [24, 32, 64] at entry 0 and [24, 64, 32] at entry 1
"""  # noqa: E501


def test_a_worker_reraise_puts_the_workers_exception_before_the_main_processes() -> None:
    record = traceback_of(WORKER_RERAISE)
    assert (record.kind, record.worker) == ("python", "DataLoader worker process 0")
    worker, main = record.chain
    assert worker.message.startswith("stack expects each tensor to be equal size")
    assert [f.package for f in worker.frames] == ["torch", "torch", None, None]
    assert worker.ref.line == 11
    assert (main.message, main.relation, main.ref.line) == (
        "Caught RuntimeError in DataLoader worker process 0.",
        "cause",
        1,
    )


# dbolya/yolact#644; the thread's excerpt stops inside the worker's frames
WORKER_INSIDE_MAIN = """
Traceback (most recent call last):
  File "./yolact/train.py", line 504, in <module>
    train()
  File "./yolact/train.py", line 270, in train
    for datum in data_loader:
  File "/usr/local/lib/python3.7/dist-packages/torch/utils/data/dataloader.py", line 345, in __next__
    data = self._next_data()
  File "/usr/local/lib/python3.7/dist-packages/torch/utils/data/dataloader.py", line 856, in _next_data
    return self._process_data(data)
  File "/usr/local/lib/python3.7/dist-packages/torch/utils/data/dataloader.py", line 881, in _process_data
    data.reraise()
  File "/usr/local/lib/python3.7/dist-packages/torch/_utils.py", line 394, in reraise
    raise self.exc_type(msg)
KeyError: Caught KeyError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "/usr/local/lib/python3.7/dist-packages/torch/utils/data/_utils/worker.py", line 178, in _worker_loop
    data = fetcher.fetch(index)
  File "/usr/local/lib/python3.7/dist-packages/torch/utils/data/_utils/fetch.py", line 44, in fetch
    data = [self.dataset[idx] for idx in possibly_batched_index]
  File "/usr/local/lib/python3.7/dist-packages/torch/utils/data/_utils/fetch.py", line 44, in <listcomp>
    data = [self.dataset[idx] for idx in possibly_batched_index]
"""  # noqa: E501


def test_the_workers_traceback_inside_the_main_one_is_part_of_its_record() -> None:
    record, consumed = read(WORKER_INSIDE_MAIN)
    assert isinstance(record, Traceback) and consumed == len(lines_of(WORKER_INSIDE_MAIN))
    (main,) = record.chain
    assert (main.exc_type, record.worker) == ("KeyError", "DataLoader worker process 0")
    assert main.frames[-1].function == "reraise" and len(main.frames) == 6
    assert [f.function for f in record.unfinished] == ["_worker_loop", "fetch", "<listcomp>"]


# -- torchrun's ChildFailedError ---------------------------------------------------------------------------

# Vision-CAIR/MiniGPT-4#237
CHILD_FAILED = """
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2023-05-19_16:39:58
  host      : n136-117-136.byted.org
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 78971)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2023-05-19_16:39:58
  host      : n136-117-136.byted.org
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 78970)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""  # noqa: W291


def test_torchruns_summary_gives_the_root_causes_fields_as_printed() -> None:
    record, consumed = read(CHILD_FAILED)
    assert isinstance(record, Traceback) and record.kind == "child_failed"
    assert consumed == len(lines_of(CHILD_FAILED))
    (exc,) = record.chain
    assert exc.exc_type == "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"
    assert exc.message.splitlines() == [
        "train.py FAILED",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2023-05-19_16:39:58",
        "  host      : n136-117-136.byted.org",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : 1 (pid: 78970)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    ]


# lzhxmu/CPPO#6: the child was killed by SIGKILL
CHILD_KILLED = """
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
src/open_r1/grpo_gsm.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-05-21_15:43:03
  host      : mlxlab115rp2n7682d40d9-20250521025625-6dyyd3-8nir8b-worker
  rank      : 0 (local_rank: 0)
  exitcode  : -9 (pid: 14750)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 14750
============================================================
"""  # noqa: W291


def test_torchruns_summary_names_the_signal_that_killed_the_child() -> None:
    (exc,) = traceback_of(CHILD_KILLED).chain
    assert "  exitcode  : -9 (pid: 14750)" in exc.message.splitlines()
    assert exc.message.splitlines()[-1] == "  traceback : Signal 9 (SIGKILL) received by PID 14750"


# hpcaitech/ColossalAI#3571; the thread's excerpt ends inside the root cause
LAUNCHER_TRACEBACK = """
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.8/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 345, in wrapper
    return f(*args, **kwargs)
  File "/usr/local/lib/python3.8/dist-packages/torch/distributed/run.py", line 724, in main
    run(args)
  File "/usr/local/lib/python3.8/dist-packages/torch/distributed/run.py", line 715, in run
    elastic_launch(
  File "/usr/local/lib/python3.8/dist-packages/torch/distributed/launcher/api.py", line 131, in __call__
    return launch_agent(self._config, self._entrypoint, list(args))
  File "/usr/local/lib/python3.8/dist-packages/torch/distributed/launcher/api.py", line 245, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
"""  # noqa: E501, W291


def test_the_launchers_traceback_ending_in_the_summary_is_one_child_failed_record() -> None:
    record = traceback_of(LAUNCHER_TRACEBACK)
    assert record.kind == "child_failed"
    (exc,) = record.chain
    assert [f.function for f in exc.frames][-1] == "launch_agent"
    assert exc.frames[0].package is None and exc.frames[-1].package == "torch"
    assert exc.message == "train.py FAILED\nRoot Cause (first observed failure):\n[0]:"
    assert exc.ref.line == 14


# -- C++ terminate -----------------------------------------------------------------------------------------

# xieyuser/GS-LIVM#12; the thread's excerpt ends inside frame #4
TERMINATE = """
terminate called after throwing an instance of 'c10::Error'
  what():  CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.

Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >) + 0x6b (0x7f8f788e56bb in /home/shu/catkin_GSL/src/GS-LIVM/thirdparty/libtorch/lib/libc10.so)
frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&) + 0xbf (0x7f8f788e05ef in /home/shu/catkin_GSL/src/GS-LIVM/thirdparty/libtorch/lib/libc10.so)
frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x58f (0x7f8f78b77f5f in /home/shu/catkin_GSL/src/GS-LIVM/thirdparty/libtorch/lib/libc10_cuda.so)
frame #3: <unknown function> + 0x11d6d04 (0x7f8f7a011d04 in /home/shu/catkin_GSL/src/GS-LIVM/thirdparty/libtorch/lib/libtorch_cuda.so)
"""  # noqa: E501


def test_a_cpp_terminate_gives_the_cpp_type_and_the_whole_what_text() -> None:
    record, consumed = read(TERMINATE)
    assert isinstance(record, Traceback) and record.kind == "cpp_terminate"
    assert consumed == len(lines_of(TERMINATE))
    (exc,) = record.chain
    assert exc.exc_type == "c10::Error" and exc.ref.line == 2
    lines = exc.message.splitlines()
    assert lines[0] == "CUDA error: an illegal memory access was encountered"
    assert "For debugging consider passing CUDA_LAUNCH_BLOCKING=1." in lines
    assert lines[5].startswith("Exception raised from c10_cuda_check_implementation")  # past the blank line
    assert lines[-1].startswith("frame #3: <unknown function>")


# sgl-project/sglang#1693; the thread's excerpt ends inside frame #2
WATCHDOG_TERMINATE = """
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG 3 Rank 5] Process group watchdog thread terminated with exception: [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3b6d41df86 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)
frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f3b6e71a8d2 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)
"""  # noqa: E501


def test_a_watchdogs_terminate_is_a_dist_backend_error() -> None:
    (exc,) = traceback_of(WATCHDOG_TERMINATE).chain
    assert exc.exc_type == "c10::DistBackendError"
    assert "Watchdog caught collective operation timeout" in exc.message.splitlines()[0]
    assert exc.message.splitlines()[-1].startswith("frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout")


# -- hard-wrapped consoles ---------------------------------------------------------------------------------

# huggingface/open-r1#620: eight ranks' terminates at once on a 137-column console (each cut line is exactly
# 137 characters); the thread's excerpt ends inside frame #2
WRAPPED_AT_137 = """
terminate called after throwing an instance of 'c10::DistBackendErrorterminate called after throwing an instance of ''
terminate called after throwing an instance of 'terminate called after throwing an instance of 'terminate called after throwing an instan
ce of 'c10::DistBackendErrorc10::DistBackendError'
terminate called after throwing an instance of 'c10::DistBackendErrorc10::DistBackendError'
c10::DistBackendError'
'
'
  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: [Rank 3] Watchdog caught colle
ctive operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800011 millisecond
s before timing out.
Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f5a9616c1b6 in /home/tanhuajie/miniconda3/envs/openr1/lib/python
3.11/site-packages/torch/lib/libc10.so)
frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x2b4 (0x
7f5a4441bc74 in /home/tanhuajie/miniconda3/envs/openr1/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so)
"""  # noqa: E501


def test_lines_cut_at_the_consoles_width_are_joined_again() -> None:
    record, consumed = read(WRAPPED_AT_137)
    assert isinstance(record, Traceback) and consumed == len(lines_of(WRAPPED_AT_137))
    (exc,) = record.chain
    assert exc.exc_type == "c10::DistBackendError" and exc.ref.line == 8
    what, raised_from, frame0, frame1 = exc.message.splitlines()
    assert what == (
        "[PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: [Rank 3] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, "
        "NumelOut=112, Timeout(ms)=1800000) ran for 1800011 milliseconds before timing out."
    )
    assert raised_from.startswith("Exception raised from checkTimeout")
    assert frame0.endswith("/home/tanhuajie/miniconda3/envs/openr1/lib/python3.11/site-packages/torch/lib/libc10.so)")
    assert frame1.endswith(
        "(0x7f5a4441bc74 in /home/tanhuajie/miniconda3/envs/openr1/lib/python3.11/site-packages/torch/lib/"
        "libtorch_cuda.so)"
    )


# vllm-project/vllm#10453: rank 1's traceback behind torchrun's prefix
RANK1 = """
[rank1]: Traceback (most recent call last):
[rank1]:   File "/vllm-workspace/test.py", line 8, in <module>
[rank1]:     dist.all_reduce(data, op=dist.ReduceOp.SUM)
[rank1]:   File "/usr/local/lib/python3.12/dist-packages/torch/distributed/c10d_logger.py", line 83, in wrapper
[rank1]:     return func(*args, **kwargs)
[rank1]:            ^^^^^^^^^^^^^^^^^^^^^
[rank1]:   File "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py", line 2501, in all_reduce
[rank1]:     work = group.allreduce([tensor], opts)
[rank1]:            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5
[rank1]: ncclInternalError: Internal check failed.
[rank1]: Last error:
"""  # noqa: E501
NCCL_MESSAGE = (
    "NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, internal error - please report this issue to "
    "the NCCL developers, NCCL version 2.21.5\nncclInternalError: Internal check failed.\nLast error:"
)


def as_80_column_console(lines: list[str]) -> list[str]:
    """The lines as an 80-column terminal captures them: each cut every 80 characters."""
    return [line[i : i + 80] for line in lines for i in range(0, max(len(line), 1), 80)]


def test_an_80_column_console_cuts_a_prefixed_line_and_its_rest_carries_no_prefix() -> None:
    cut = as_80_column_console(lines_of(RANK1))
    assert cut[12] == "buted/c10d/NCCLUtils.hpp:317, internal error - please report this issue to the N"
    record, consumed = read(cut)
    assert isinstance(record, Traceback) and consumed == len(cut)
    (exc,) = record.chain
    assert exc.message == NCCL_MESSAGE
    assert [f.file for f in exc.frames] == [
        "/vllm-workspace/test.py",
        "/usr/local/lib/python3.12/dist-packages/torch/distributed/c10d_logger.py",
        "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py",
    ]


def test_a_window_whose_lines_stop_short_of_80_columns_is_never_rejoined() -> None:
    (exc,) = traceback_of(BARE_ASSERT).chain  # no line reaches 80 columns: nothing was cut
    assert len(exc.frames) == 2 and exc.frames[1].source == "assert args.batch_size % len(devices) == 0"


# -- interleaved ranks -------------------------------------------------------------------------------------


def interleaved(*ranks: list[str]) -> list[str]:
    """Ranks' lines alternating, as two processes writing through one launcher's pipe interleave them."""
    out: list[str] = []
    for group in zip(*ranks, strict=True):
        out.extend(group)
    return out


# vllm-project/vllm#10453: "every rank prints it" (rank 0's copy: the same lines behind its own prefix)
RANK0 = [line.replace("[rank1]:", "[rank0]:", 1) for line in lines_of(RANK1)]


def test_interleaved_ranks_each_read_their_own_lines() -> None:
    log = interleaved(lines_of(RANK1), RANK0)
    rank1, consumed = read(log)
    assert isinstance(rank1, Traceback) and consumed == 1  # rank 0's header is read in its own turn
    assert rank1.chain[0].message == NCCL_MESSAGE and rank1.chain[0].ref.text.startswith("[rank1]: torch.")
    assert rank1.chain[0].ref.line == 19
    rank0, consumed = read(log[1:], first_line=2)
    assert isinstance(rank0, Traceback) and consumed == len(log) - 1
    assert rank0.chain[0].message == NCCL_MESSAGE and rank0.chain[0].ref.line == 20


# OEvortex/unsloth#10: the launcher's own (unprefixed) record; azshue/AutoPoison#6: an extension's print
LAUNCHER_RECORD = "W0801 13:23:17.366000 32974 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 33051 closing signal SIGTERM"  # noqa: E501
UNPREFIXED_PRINT = "Loading extension module cpu_adam..."


def test_an_unprefixed_line_ends_a_prefixed_traceback_only_if_it_is_a_record_of_its_own() -> None:
    lines = lines_of(RANK1)
    skipped = traceback_of([*lines[:5], UNPREFIXED_PRINT, *lines[5:]])
    assert skipped.chain[0].message == NCCL_MESSAGE
    ended = traceback_of([*lines[:5], LAUNCHER_RECORD, *lines[5:]])
    assert ended.chain == [] and [f.function for f in ended.unfinished] == ["<module>", "wrapper"]


# pytorch/pytorch#113128 (the dev set's d-gpu-ecc-001): torchrun's local prefix before the global one
LOCAL_AND_GLOBAL_PREFIX = """
[default0]:[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 12] Process group watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered
[default0]:Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""  # noqa: E501


def test_srun_labels_are_a_printers_prefix_too() -> None:
    # srun --label puts the task's number before each line it relays; MatchSum's traceback as task 1 prints it,
    # between task 0's lines (pytorch/pytorch#113128's, relabelled)
    task1 = ["1: " + line for line in lines_of(BARE_ASSERT)]
    task0 = ["0: " + line for line in lines_of(LOCAL_AND_GLOBAL_PREFIX)] * 3
    (exc,) = traceback_of(interleaved(task1, task0[: len(task1)])).chain
    assert exc.assertion == "args.batch_size % len(devices) == 0" and exc.ref.text == "1: AssertionError"


# -- rich --------------------------------------------------------------------------------------------------

# typer's docs, docs/tutorial/exceptions.md (fastapi/typer): typer's rich traceback with
# pretty_exceptions_short=False, 69 columns wide, its color markup removed
RICH = """
╭──────────────── Traceback (most recent call last) ────────────────╮
│ /home/user/code/superapp/main.py:12 in <module>                   │
│                                                                   │
│    9                                                              │
│   10                                                              │
│   11 if __name__ == "__main__":                                   │
│ ❱ 12 │   app()                                                    │
│   13                                                              │
│                                                                   │
│ ╭─────────────────────────── locals ────────────────────────────╮ │
│ │ __annotations__ = {}                                          │ │
│ │    __builtins__ = <module 'builtins' (built-in)>              │ │
│ │      __cached__ = None                                        │ │
│ │         __doc__ = None                                        │ │
│ │        __file__ = 'main.py'                                   │ │
│ │      __loader__ = <_frozen_importlib_external.SourceFileLoad… │ │
│ │                   object at 0x7f047db1c050>                   │ │
│ │        __name__ = '__main__'                                  │ │
│ │     __package__ = None                                        │ │
│ │        __spec__ = None                                        │ │
│ │             app = <typer.main.Typer object at 0x7f047db51d90> │ │
│ │            main = <function main at 0x7f047db56830>           │ │
│ │           typer = <module 'typer' from                        │ │
│ │                   '/home/user/code/superapp/env/lib/python3.… │ │
│ ╰───────────────────────────────────────────────────────────────╯ │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/typer/ma │
│ in.py:328 in __call__                                             │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/typer/ma │
│ in.py:311 in __call__                                             │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/click/co │
│ re.py:1130 in __call__                                            │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/typer/co │
│ re.py:723 in main                                                 │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/typer/co │
│ re.py:216 in _main                                                │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/click/co │
│ re.py:1404 in invoke                                              │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/click/co │
│ re.py:760 in invoke                                               │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/typer/ma │
│ in.py:683 in wrapper                                              │
│                                                                   │
│ /home/user/code/superapp/main.py:8 in main                        │
│                                                                   │
│    5                                                              │
│    6 @app.command()                                               │
│    7 def main(name: str = "morty"):                               │
│ ❱  8 │   print(name + 3)                                          │
│    9                                                              │
│   10                                                              │
│   11 if __name__ == "__main__":                                   │
│                                                                   │
│ ╭──── locals ────╮                                                │
│ │ name = 'morty' │                                                │
│ ╰────────────────╯                                                │
╰───────────────────────────────────────────────────────────────────╯
TypeError: can only concatenate str (not "int") to str
"""


def test_a_rich_traceback_gives_the_same_record_with_folded_paths_joined() -> None:
    record, consumed = read(RICH)
    assert isinstance(record, Traceback) and record.kind == "rich" and consumed == len(lines_of(RICH))
    (exc,) = record.chain
    assert (exc.exc_type, exc.message) == ("TypeError", 'can only concatenate str (not "int") to str')
    assert [(f.file.rsplit("/", 2)[-2:], f.line, f.function) for f in exc.frames[:3]] == [
        (["superapp", "main.py"], 12, "<module>"),
        (["typer", "main.py"], 328, "__call__"),
        (["typer", "main.py"], 311, "__call__"),
    ]
    assert [f.package for f in exc.frames] == [None, "typer", "typer", "click", "typer", "typer"] + [
        "click",
        "click",
        "typer",
        None,
    ]
    assert (exc.frames[0].source, exc.frames[-1].source) == ("app()", "print(name + 3)")


# bmaltais/kohya_ss#1105: the box starts after a progress bar; the thread's excerpt ends at the ❱ line
RICH_AFTER_PROGRESS = r"""
steps:   0%|                                                                                  | 0/1200 [00:00<?, ?it/s]╭─────────────────────────────── Traceback (most recent call last) ────────────────────────────────╮
│ C:\SD Kohya\kohya_ss\train_network.py:873 in <module>                                            │
│                                                                                                  │
│   870 │   args = parser.parse_args()                                                             │
│   871 │   args = train_util.read_config_from_file(args, parser)                                  │
│   872 │                                                                                          │
│ ❱ 873 │   train(args)
"""  # noqa: E501


def test_a_rich_box_after_a_progress_bar_is_read_from_its_corner() -> None:
    record = traceback_of(RICH_AFTER_PROGRESS)
    assert record.kind == "rich" and record.chain == []
    (frame,) = record.unfinished
    assert (frame.file, frame.line, frame.function, frame.source) == (
        r"C:\SD Kohya\kohya_ss\train_network.py",
        873,
        "<module>",
        "train(args)",
    )


# -- hang dumps --------------------------------------------------------------------------------------------

# ziyanx02/Genesis-backflip#2: faulthandler on a segmentation fault; the thread's excerpt ends inside a frame
FAULTHANDLER = """
Thread 0x00007f9fb1cff700 (most recent call first):
  <no Python frame>

Thread 0x00007fa040e2b700 (most recent call first):
  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/threading.py", line 324 in wait
  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/queue.py", line 180 in get
  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/site-packages/tensorboard/summary/writer/event_file_writer.py", line 269 in _run
  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/site-packages/tensorboard/summary/writer/event_file_writer.py", line 244 in run
  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/threading.py", line 1016 in _bootstrap_inner
  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/threading.py", line 973 in _bootstrap

Current thread 0x00007fa2972464c0 (most recent call first):
  File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/reward_wrapper.py", line 88 in _reward_feet_air_time
  File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", line 498 in compute_reward
  File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", line 546 in post_physics_step
  File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", line 754 in step
"""  # noqa: E501


def test_faulthandler_gives_one_stack_per_thread_innermost_frame_last() -> None:
    lines = lines_of(FAULTHANDLER)
    idle, consumed = read(lines)
    assert isinstance(idle, StackDump) and (idle.frames, consumed) == ([], 2)
    waiting, consumed = read(lines[3:], first_line=4)
    assert isinstance(waiting, StackDump) and consumed == 7
    assert waiting.thread == "Thread 0x00007fa040e2b700 (most recent call first)"
    assert [(f.function, f.package) for f in waiting.frames] == [
        ("_bootstrap", "python"),
        ("_bootstrap_inner", "python"),
        ("run", "tensorboard"),
        ("_run", "tensorboard"),
        ("get", "python"),
        ("wait", "python"),
    ]
    current = stack_of(lines[11:])
    assert current.thread == "Current thread 0x00007fa2972464c0 (most recent call first)"
    assert [f.function for f in current.frames] == [
        "step",
        "post_physics_step",
        "compute_reward",
        "_reward_feet_air_time",
    ]
    assert current.frames[-1].line == 88 and current.start.line == 1


# blakeblackshear/frigate#6316: faulthandler through a logger that stamps every line
STAMPED = """
2023-04-28 09:54:07.274300119  Thread 0x00007f93feffd6c0 (most recent call first):
2023-04-28 09:54:07.274332698    File "/usr/lib/python3.9/threading.py", line 312 in wait
2023-04-28 09:54:07.274395607    File "/usr/lib/python3.9/multiprocessing/queues.py", line 233 in _feed
2023-04-28 09:54:07.274434998    File "/usr/lib/python3.9/threading.py", line 892 in run
2023-04-28 09:54:07.274483181    File "/usr/lib/python3.9/threading.py", line 954 in _bootstrap_inner
2023-04-28 09:54:07.274523712    File "/usr/lib/python3.9/threading.py", line 912 in _bootstrap
2023-04-28 09:54:07.274531443
2023-04-28 09:54:07.274532387  Thread 0x00007f93fffff6c0 (most recent call first):
"""


def test_a_timestamp_prefix_is_a_printers_prefix_whatever_its_digits() -> None:
    record, consumed = read(STAMPED)
    assert isinstance(record, StackDump) and consumed == 6
    assert [f.function for f in record.frames] == ["_bootstrap", "_bootstrap_inner", "run", "_feed", "wait"]
    assert record.frames[-1].file == "/usr/lib/python3.9/threading.py"


# h4/lywsd02#18: faulthandler through journald, host and tag behind the timestamp
JOURNALD = """
Apr 08 23:05:29 fett docker[26736]: Thread 0x00007fcc72c3fb20 (most recent call first):
Apr 08 23:05:29 fett docker[26736]:   File "/usr/local/lib/python3.7/threading.py", line 300 in wait
Apr 08 23:05:29 fett docker[26736]:   File "/usr/local/lib/python3.7/site-packages/zeroconf/__init__.py", line 2178 in wait
Apr 08 23:05:29 fett docker[26736]:   File "/usr/local/lib/python3.7/site-packages/zeroconf/__init__.py", line 1486 in run
Apr 08 23:05:29 fett docker[26736]:   File "/usr/local/lib/python3.7/site-packages/sentry_sdk/integrations/threading.py", line 67 in run
Apr 08 23:05:29 fett docker[26736]:   File "/usr/local/lib/python3.7/threading.py", line 926 in _bootstrap_inner
Apr 08 23:05:29 fett docker[26736]:   File "/usr/local/lib/python3.7/threading.py", line 890 in _bootstrap
"""  # noqa: E501


def test_a_journald_prefix_keeps_its_host_and_tag() -> None:
    record = stack_of(JOURNALD)
    assert [f.package for f in record.frames] == ["python", "python", "sentry_sdk", "zeroconf", "zeroconf", "python"]


# sgl-project/sglang#31178: py-spy dump --native, one thread after another
PYSPY = """
Thread 187 (idle): "MainThread"
    0x7f1398316d71 (libc.so.6)
    0x7f1398322fb8 (libc.so.6)
    PyThread_acquire_lock_timed (python3.12)
    _shutdown (threading.py:1622)
    _bootstrap (multiprocessing/process.py:332)
    _main (multiprocessing/spawn.py:135)
    spawn_main (multiprocessing/spawn.py:122)
    <module> (<string>:1)
    0x7f13982a81ca (libc.so.6)
Thread 2228 (idle): "tqdm_monitor"
    0x7f1398316d71 (libc.so.6)
    0x7f13983222be (libc.so.6)
    PyThread_acquire_lock_timed (python3.12)
    wait (threading.py:359)
    wait (threading.py:655)
    run (tqdm/_monitor.py:69)
    _bootstrap_inner (threading.py:1073)
    _bootstrap (threading.py:1030)
    0x7f139831aaa4 (libc.so.6)
    __gconv_open (libc.so.6)
"""


def test_a_py_spy_dump_gives_one_stack_per_thread_innermost_frame_last() -> None:
    lines = lines_of(PYSPY)
    main, consumed = read(lines)
    assert isinstance(main, StackDump) and consumed == 10
    assert main.thread == 'Thread 187 (idle): "MainThread"'
    assert [(f.function, f.file, f.line, f.package) for f in main.frames[:4]] == [
        ("0x7f13982a81ca", "libc.so.6", None, None),
        ("<module>", "<string>", 1, None),
        ("spawn_main", "multiprocessing/spawn.py", 122, "python"),
        ("_main", "multiprocessing/spawn.py", 135, "python"),
    ]
    monitor = stack_of(lines[10:])
    assert [(f.function, f.package) for f in monitor.frames if f.line is not None][2:4] == [
        ("run", None),
        ("wait", "python"),
    ]


# ray-project/ray#3187: py-spy before thread names, frames behind a tab
PYSPY_OLD = "Thread 0x7F4AA36D9700 (active)\n\t _periodically_flush_profile_events (ray/profiling.py:97)\n\t run (threading.py:864)\n\t _bootstrap_inner (threading.py:916)\n\t _bootstrap (threading.py:884)\nThread 0x7F4AA2ED8700 (active)\n\t recv (redis/_compat.py:79)"  # noqa: E501


def test_an_older_py_spy_dump_reads_the_same() -> None:
    record, consumed = read(PYSPY_OLD)
    assert isinstance(record, StackDump) and consumed == 5
    assert record.thread == "Thread 0x7F4AA36D9700 (active)"
    assert [f.function for f in record.frames] == [
        "_bootstrap",
        "_bootstrap_inner",
        "run",
        "_periodically_flush_profile_events",
    ]


# -- bounds ------------------------------------------------------------------------------------------------

# ymcui/Chinese-LLaMA-Alpaca-2#97 (the dev set's d-loss-scale-001): tqdm's bar, which ends no line, right before
# the header; repeated here the way such a line grows to megabytes, and a real message line likewise.
BAR = "  0%|                                                        | 95/97976 [1:28:37<1514:49:16, 55.71s/it]"


def test_a_ten_megabyte_line_costs_one_pass_and_a_message_stays_bounded() -> None:
    header = BAR * 100_000 + "Traceback (most recent call last):"
    exception = "RuntimeError: " + "CUDA error: an illegal memory access was encountered " * 200_000
    started = time.perf_counter()
    record, consumed = read([header, *lines_of(UNPICKLING)[1:-1], exception])
    assert time.perf_counter() - started < 2.0
    assert isinstance(record, Traceback) and consumed == 12
    assert len(record.chain[0].message) <= MAX_MESSAGE_CHARS


def test_a_window_is_read_no_further_than_max_window_lines() -> None:
    frames = lines_of(UNPICKLING)[1:3] * MAX_WINDOW_LINES
    record, consumed = read(["Traceback (most recent call last):", *frames])
    assert isinstance(record, Traceback) and record.chain == []
    assert consumed == MAX_WINDOW_LINES


REAL_LINES = [
    line
    for log in (UNPICKLING, CONTEXT_CHAIN, WORKER_RERAISE, CHILD_FAILED, TERMINATE, RICH, PYSPY)
    for line in lines_of(log)
]


@settings(max_examples=300, deadline=None)
@given(
    header=st.sampled_from(HEADERS),
    rest=st.lists(
        st.one_of(st.sampled_from(REAL_LINES), st.sampled_from(["", " ", "│", "╰─╯", "[rank1]: "])), max_size=60
    ),
)
def test_any_window_that_starts_at_a_header_reads_without_failing(header: str, rest: list[str]) -> None:
    record, consumed = read([header, *rest])
    assert 1 <= consumed <= len(rest) + 1
    assert record is None or isinstance(record, Traceback | StackDump)

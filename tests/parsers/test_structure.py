"""Structures found while streaming: a traceback's window carried over a block boundary, progress numbers."""

from __future__ import annotations

from crashcart.knowledge.records import LineRef
from crashcart.parsers.structure import (
    LATE_HEADERS_PER_BLOCK,
    MAX_TRACEBACKS,
    PARSE_BUDGET,
    ProgressFinder,
    StructureReader,
    Structures,
    merge_structures,
)

# TongkunGuan/CCD#13 (shared dev set, d-config-path-001): a torchrun job whose dataset path does not exist
TRACEBACK = [
    "[2024-04-11 16:02:33,141 train.py:52 INFO pre_tiny_65536] Construct dataset.",
    "Traceback (most recent call last):",
    '  File "train.py", line 457, in <module>',
    "    train(config)",
    '  File "train.py", line 53, in train',
    "    train_dataloader = _get_databaunch(config)",
    '  File "train.py", line 434, in _get_databaunch',
    "    train_ds = _get_dataset(dataset_class, config.dataset_train_roots, True, config, **ds_kwargs)",
    '  File "train.py", line 417, in _get_dataset',
    "    subfolders = [f.path for f in os.scandir(p) if f.is_dir()]",
    "FileNotFoundError: [Errno 2] No such file or directory: '/data/gx/OCR-CC/data_lmdb/training/label/Synth/'",
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 3692921) of binary:"
    " /home/gx/anaconda3/envs/CCD/bin/python",
]
# epfLLM/Megatron-LLM#11 (Megatron's training_log line)
PROGRESS = (
    " iteration      182/  250000 | consumed samples:       186368 | elapsed time per iteration (ms): 126995.3 |"
    " learning rate: 1.365E-05 | global batch size:  1024 | lm loss: 2.382640E+00 | loss scale: 1.0 |"
    " grad norm: 0.227 | number of skipped iterations:   0 | number of nan iterations:   0 |"
)


def make_ref(text: str, no: int) -> LineRef:
    return LineRef(file="train.log", line=no, text=text)


def read(blocks: list[list[str]]) -> Structures:
    reader = StructureReader(make_ref)
    base = 0
    for lines in blocks:
        reader.feed("".join(line + "\n" for line in lines).encode(), base, len(lines))
        base += len(lines)
    return reader.finish()


def test_a_traceback_in_one_block_is_one_record_cited_at_its_exception_line() -> None:
    [tb] = read([[PROGRESS] * 3 + TRACEBACK]).tracebacks
    exc = tb.chain[-1]
    assert (tb.start.line, exc.exc_type, exc.ref.line) == (5, "FileNotFoundError", 14)
    assert [f.function for f in exc.frames] == ["<module>", "train", "_get_databaunch", "_get_dataset"]


def test_a_traceback_cut_by_a_block_boundary_is_read_whole() -> None:
    for cut in range(2, len(TRACEBACK)):
        [tb] = read([[PROGRESS] + TRACEBACK[:cut], TRACEBACK[cut:] + [PROGRESS]]).tracebacks
        assert tb.chain[-1].exc_type == "FileNotFoundError", cut
        assert tb.chain[-1].ref.line == 12, cut


# NCCL's bootstrap line, no progress in it (knowledge/healthy/nccl.log)
UNRELATED = "678c7278cb2d:26023:26023 [0] NCCL INFO Bootstrap : Using eth0:172.17.2.7<0>"
# torch/distributed/run.py's start-up note (pytorch/pytorch#64926, dev case n2-config-rdzv-multi-nic-015)
OMP_NOTE = (
    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being"
    " overloaded, please further tune the variable for optimal performance in your application as needed."
)


def test_progress_lines_become_points_with_their_line_numbers() -> None:
    found = read([[PROGRESS, UNRELATED], [PROGRESS]])
    assert [(p.line, p.iteration, p.loss) for p in found.metrics] == [(1, 182, 2.38264), (3, 182, 2.38264)]


def test_a_file_without_structure_has_none() -> None:
    found = read([[OMP_NOTE] * 50])
    assert found == Structures([], [], [])


def test_parts_of_a_split_file_merge_with_their_line_offsets() -> None:
    first, second = read([TRACEBACK]), read([[PROGRESS]])
    merged = merge_structures([(0, first), (len(TRACEBACK), second)])
    assert merged.tracebacks[0].chain[-1].ref.line == 11
    assert [p.line for p in merged.metrics] == [len(TRACEBACK) + 1]


def test_a_header_at_the_end_of_a_huge_progress_bar_line_is_found() -> None:
    bar = " 14%|█▍        | 378/2724 [13:58:09<86:18:35, 132.44s/it]\r" * 400  # tqdm redraws (Chinese-LLaMA-Alpaca#534)
    [tb] = read([[bar + TRACEBACK[1], *TRACEBACK[2:]]]).tracebacks
    assert tb.chain[-1].exc_type == "FileNotFoundError"


# maszhongming/MatchSum#11: a batch size the devices do not divide
BARE_ASSERT = [
    "Traceback (most recent call last):",
    '  File "train_matching.py", line 150, in <module>',
    "    train_model(args)",
    '  File "train_matching.py", line 70, in train_model',
    "    assert args.batch_size % len(devices) == 0",
    "AssertionError",
]


def test_a_crash_loop_of_thousands_of_tracebacks_still_reads_the_last_one() -> None:
    many = TRACEBACK[1:] * 1000 + BARE_ASSERT  # the same job failing again and again, then failing otherwise
    found = read([many[:4000], many[4000:]])
    assert found.tracebacks[-1].chain[-1].exc_type == "AssertionError"
    assert found.tracebacks[-1].chain[-1].ref.line == len(many)
    assert len(found.tracebacks) <= MAX_TRACEBACKS


def test_the_reader_parses_at_most_its_budget_and_each_blocks_last_headers() -> None:
    reader = StructureReader(make_ref)
    many = TRACEBACK[1:] * 1000
    reader.feed("".join(line + "\n" for line in many).encode(), 0, len(many))
    reader.finish()
    assert reader.parsed <= PARSE_BUDGET + LATE_HEADERS_PER_BLOCK


# fla-org/flame#43 (the chain of tests/parsers/test_tracebacks.py), the excerpt cut at its head: it starts at the
# first exception's line, its frames and header gone, then the separator and the second part with its header
CHAIN_CUT_AT_ITS_FIRST_EXCEPTION = [
    "KeyError: 'transformer'",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "<string>", line 1, in <module>',
    '  File "/home/xxx/miniconda3/envs/flame/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py", line 1311, in from_pretrained',  # noqa: E501
    "    raise ValueError(",
    "ValueError: The checkpoint you are trying to load has model type `transformer` but Transformers does not recognize this architecture. This could be because of an issue with the checkpoint, or because your version of Transformers is out of date.",  # noqa: E501
]
# qibin0506/Cortex#13: every line behind torchrun's `[rank1]:`, the excerpt cut below the header
RANK_PREFIXED_CUT = [
    '[rank1]:   File "/home/youwei/github/Cortex/.venv/lib/python3.12/site-packages/llm_trainer/dataset.py", line 45, in __init__',  # noqa: E501
    "[rank1]:     for line in f:",
    "[rank1]:                 ^",
    '[rank1]:   File "<frozen codecs>", line 322, in decode',
    "[rank1]: UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80 in position 0: invalid start byte",
]


def test_a_file_cut_at_a_chains_first_exception_line_keeps_it_in_the_chain() -> None:
    [tb] = read([CHAIN_CUT_AT_ITS_FIRST_EXCEPTION]).tracebacks
    first, second = tb.chain
    assert (first.exc_type, first.message, first.ref.line, first.frames) == ("KeyError", "'transformer'", 1, [])
    assert (second.exc_type, second.relation, second.ref.line) == ("ValueError", "context", 9)
    assert tb.start.line == 1


def test_the_chain_head_is_only_kept_for_the_header_right_below_it() -> None:
    # the same lines with TRACEBACK's job line between the separator and the header: no chain to continue
    lines = CHAIN_CUT_AT_ITS_FIRST_EXCEPTION[:4] + TRACEBACK[:1] + CHAIN_CUT_AT_ITS_FIRST_EXCEPTION[4:]
    [tb] = read([lines]).tracebacks
    assert [e.exc_type for e in tb.chain] == ["ValueError"] and tb.chain[0].relation is None


def test_a_rank_prefixed_file_cut_below_its_header_is_read_from_its_first_frame() -> None:
    [tb] = read([RANK_PREFIXED_CUT, [PROGRESS]]).tracebacks
    (exc,) = tb.chain
    assert (tb.start.line, exc.exc_type, exc.ref.line) == (1, "UnicodeDecodeError", 5)
    assert [f.function for f in exc.frames] == ["__init__", "decode"]


# NVIDIA/NeMo-Aligner#502: the excerpt starts at the chain's first exception and ends inside the second part
CHAIN_CUT_AT_BOTH_ENDS = [
    "OSError: [Errno 5] Input/output error",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    '  File "/opt/NeMo-Aligner/examples/nlp/gpt/train_gpt_sft.py", line 173, in main',
    "    sft_trainer.fit()",
    '  File "/opt/NeMo-Aligner/nemo_aligner/algorithms/supervised.py", line 249, in fit',
]


def test_the_chain_head_is_kept_when_the_excerpt_ends_before_the_next_exception() -> None:
    [tb] = read([CHAIN_CUT_AT_BOTH_ENDS]).tracebacks
    (first,) = tb.chain
    assert (first.exc_type, first.message, first.ref.line) == ("OSError", "[Errno 5] Input/output error", 1)
    assert [f.function for f in tb.unfinished] == ["main", "fit"]


def test_the_progress_finder_gives_the_start_of_every_progress_line_of_a_block() -> None:
    block = "\n".join([UNRELATED, PROGRESS, UNRELATED, PROGRESS, PROGRESS]).encode() + b"\n"
    starts = ProgressFinder().starts(block)
    lines = block.split(b"\n")
    offsets = [sum(len(line) + 1 for line in lines[:i]) for i in (1, 3, 4)]
    assert sorted(starts) == offsets
    assert ProgressFinder().starts(UNRELATED.encode()) == []

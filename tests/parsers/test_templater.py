"""parsers/templater.py: Drain3 templates behind a digit cache and a masked-line cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from drain3.drain import Drain
from traceback_lines import traceback_source_lines

from crashcart.parsers import templater as templater_module
from crashcart.parsers.templater import (
    KEPT_LINE_BYTES,
    LEAF_CLUSTERS,
    MAX_CLUSTERS,
    TEMPLATE_CHARS,
    TemplateCounts,
    Templater,
    template_id,
)

HEALTHY = Path(__file__).resolve().parents[2] / "knowledge" / "healthy"


@pytest.fixture
def tpl() -> Templater:
    return Templater()


@pytest.mark.parametrize(
    ("lines", "template"),
    [
        # Megatron's iteration lines (epfLLM/Megatron-LLM#11, knowledge/healthy/megatron.log)
        (
            [
                b" iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration"
                b" (ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss:"
                b" 2.504220E+00 | loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 |"
                b" number of nan iterations:   0 |",
                b" iteration      123/  250000 | consumed samples:       125952 | elapsed time per iteration"
                b" (ms): 87871.6 | learning rate: 9.225E-06 | global batch size:  1024 | lm loss:"
                b" 2.493043E+00 | loss scale: 1.0 | grad norm: 0.236 | number of skipped iterations:   0 |"
                b" number of nan iterations:   0 |",
                b" iteration      124/  250000 | consumed samples:       126976 | elapsed time per iteration"
                b" (ms): 89474.8 | learning rate: 9.300E-06 | global batch size:  1024 | lm loss:"
                b" 2.559583E+00 | loss scale: 1.0 | grad norm: 0.242 | number of skipped iterations:   0 |"
                b" number of nan iterations:   0 |",
            ],
            "iteration <NUM>/ <NUM> | consumed samples: <NUM> | elapsed time per iteration (ms): <NUM> |"
            " learning rate: <NUM> | global batch size: <NUM> | lm loss: <NUM> | loss scale: <NUM> |"
            " grad norm: <NUM> | number of skipped iterations: <NUM> | number of nan iterations: <NUM> |",
        ),
        # the same C++ frame from three installs: deepspeedai/DeepSpeedExamples#592, nv-tlabs/3dgrut#191 (dev cases
        # r-cuda-illegal-013, r-cuda-unknown-015), deepseek-ai/DeepSeek-MoE#47 (shared dev set, d-cuda-ulf-001)
        (
            [
                b"frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int,"
                b" bool) + 0x118 (0x7f1b1fdafb58 in"
                b" /root/miniconda3/lib/python3.8/site-packages/torch/lib/libc10_cuda.so)",
                b"frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int,"
                b" bool) + 0x118 (0x75b35c5b3128 in"
                b" /home/edwu/miniconda3/envs/3dgrut/lib/python3.11/site-packages/torch/lib/libc10_cuda.so)",
                b"frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int,"
                b" bool) + 0x118 (0x7ef4bb404918 in"
                b" /home/amd00/anaconda3/envs/DeepSeek-MoE/lib/python3.10/site-packages/torch/lib/libc10_cuda."
                b"so)",
            ],
            "frame #<NUM>: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int,"
            " bool) + <HEX> (<HEX> in <PATH>)",
        ),
        # NCCL's bootstrap line of three runs (knowledge/healthy/nccl.log)
        (
            [
                b"678c7278cb2d:26023:26023 [0] NCCL INFO Bootstrap : Using eth0:172.17.2.7<0>",
                b"VM-0-14-tencentos:162637:162637 [6] NCCL INFO Bootstrap : Using eth0:172.17.0.14<0>",
                b"036260b61d3a:33347:33347 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>",
            ],
            "<HOST> [<NUM>] NCCL INFO Bootstrap : Using eth0:<IP>",
        ),
        # behind torchrun's [rankN]: and bare: alibaba/RecIS#15, MCZhi/GameFormer#17 (dev cases r-code-attr-014,
        # r-ma-data-npz-unpickling-046), TongkunGuan/CCD#13 (shared dev set, d-config-path-001)
        (
            [
                b"[rank0]: Traceback (most recent call last):",
                b"[rank6]: Traceback (most recent call last):",
                b"Traceback (most recent call last):",
            ],
            "Traceback (most recent call last):",
        ),
        # the same line with the CR of a CRLF file (knowledge/healthy/nccl.log)
        (
            [
                b"678c7278cb2d:26023:26023 [0] NCCL INFO Bootstrap : Using eth0:172.17.2.7<0>\r",
                b"678c7278cb2d:26023:26023 [0] NCCL INFO Bootstrap : Using eth0:172.17.2.7<0>",
            ],
            "<HOST> [<NUM>] NCCL INFO Bootstrap : Using eth0:<IP>",
        ),
    ],
    ids=["numbers", "paths", "nccl-host-ip", "rank-prefixes", "crlf"],
)
def test_lines_differing_only_in_values_share_a_template(tpl: Templater, lines: list[bytes], template: str) -> None:
    indexes = {tpl.template_index(line) for line in lines}
    assert len(indexes) == 1
    assert tpl.template(indexes.pop()) == template


def test_different_messages_get_different_templates(tpl: Templater) -> None:
    lines = [
        # Megatron's iteration line (epfLLM/Megatron-LLM#11)
        b" iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration"
        b" (ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss:"
        b" 2.504220E+00 | loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 |"
        b" number of nan iterations:   0 |",
        # DeepSpeed saving a checkpoint (xuyuzhuang11/OneBit#6)
        b"[2024-06-26 04:16:12,291] [INFO] [logging.py:96:log_dist] [Rank 0] Saving model checkpoint:"
        b" /ssd/name/code/OneBit/scripts/ckpt_Llama-2-7b-hf/checkpoint-5000/global_step5000/zero_pp_ra"
        b"nk_0_mp_rank_00_model_states.pt",
        # Megatron loading one (intelligent-machine-learning/dlrover#977)
        b" loading checkpoint from /nas/megatron_gpt/ at iteration 100",
        # deepspeedai/DeepSpeedExamples#592 (dev case r-cuda-illegal-013)
        b"  what():  CUDA error: an illegal memory access was encountered",
        # QwenLM/Qwen3-Coder#174 (shared dev set, d-gpuoom-001)
        b"2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate"
        b" 132.00 MiB. GPU 3 has a total capacity of 79.10 GiB of which 98.00 MiB is free. Process"
        b" 387746 has 78.89 GiB memory in use. Of the allocated memory 70.12 GiB is allocated by"
        b" PyTorch, and 765.81 MiB is reserved by PyTorch but unallocated. If reserved but"
        b" unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
        b" to avoid fragmentation.  See documentation for Memory Management "
        b" (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        # TongkunGuan/CCD#13 (shared dev set, d-config-path-001)
        b"Traceback (most recent call last):",
    ]
    indexes = [tpl.template_index(line) for line in lines]
    assert indexes == list(range(len(lines)))  # indexes are handed out in order of first sight
    assert [tpl.template(i) for i in indexes] == [
        "iteration <NUM>/ <NUM> | consumed samples: <NUM> | elapsed time per iteration (ms): <NUM> |"
        " learning rate: <NUM> | global batch size: <NUM> | lm loss: <NUM> | loss scale: <NUM> |"
        " grad norm: <NUM> | number of skipped iterations: <NUM> | number of nan iterations: <NUM> |",
        "[<NUM>-<NUM>-<NUM> <NUM>:<NUM>:<NUM>] [INFO] [logging.py:<NUM>:log_dist] [Rank <RANK>]"
        " Saving model checkpoint: <PATH>",
        "loading checkpoint from <PATH> at iteration <NUM>",
        "what(): CUDA error: an illegal memory access was encountered",
        "<NUM>-<NUM>-<NUM> <NUM>:<NUM>:<NUM> [rank <RANK>]: torch.OutOfMemoryError: CUDA out of"
        " memory. Tried to allocate <NUM> MiB. GPU <NUM> has a total capacity of <NUM> GiB of which"
        " <NUM> MiB is free. Process <NUM> has <NUM> GiB memory in use. Of the allocated memory"
        " <NUM> GiB is allocated by PyTorch, and <NUM> MiB is reserved by PyTorch but unallocated."
        " If reserved but unallocated memory is large try setting"
        " PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation. See documentation"
        " for Memory Management (https:/<PATH>#environment-variables)",
        "Traceback (most recent call last):",
    ]


def test_drain_generalises_words_that_vary(tpl: Templater) -> None:
    first = tpl.template_index(b"Loading dataset train")
    assert tpl.template(first) == "Loading dataset train"
    assert tpl.template_index(b"Loading dataset valid") == first
    assert tpl.template(first) == "Loading dataset <*>"


BLOCK = (
    b"starting job\n"  # 11
    b"[rank0]: iteration 1 loss 2.5\n"  # 12
    b"[rank1]: iteration 1 loss 2.6\n"  # 13
    b"\n"  # 14: counted as a line, not templated
    b"[rank0]: iteration 2 loss 2.4\r\n"  # 15
    b"[rank1]: iteration 2 loss 2.3\n"  # 16
    b"[rank0]: iteration 3 loss 2.2\n"  # 17
    b"[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"  # 18
)


def test_count_block_per_template(tpl: Templater) -> None:
    counts = TemplateCounts()
    tpl.count_block(BLOCK, 10, counts, ranked=False)
    start, it, err = (
        tpl.template_index(x)
        for x in (
            b"starting job",
            b"iteration 1 loss 1",
            b"RuntimeError: CUDA error: an illegal memory access was encountered",
        )
    )
    assert (start, it, err) == (0, 1, 2)
    assert counts.lines == 8
    assert counts.stats == {
        (None, start): [1, 11, b"starting job", 11, b"starting job"],
        (None, it): [5, 12, b"[rank0]: iteration 1 loss 2.5", 17, b"[rank0]: iteration 3 loss 2.2"],
        (None, err): [
            1,
            18,
            b"[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered",
            18,
            b"[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered",
        ],
    }


def test_count_block_ranked_splits_by_rank_prefix(tpl: Templater) -> None:
    counts = TemplateCounts()
    tpl.count_block(BLOCK, 10, counts, ranked=True)
    it = tpl.template_index(b"iteration 1 loss 1")
    assert counts.lines == 8
    assert counts.stats[(0, it)] == [3, 12, b"[rank0]: iteration 1 loss 2.5", 17, b"[rank0]: iteration 3 loss 2.2"]
    assert counts.stats[(1, it)] == [2, 13, b"[rank1]: iteration 1 loss 2.6", 16, b"[rank1]: iteration 2 loss 2.3"]
    assert set(counts.stats) == {(None, 0), (0, it), (1, it), (1, 2)}  # the banner has no rank prefix


def test_crlf_line_is_kept_raw_in_the_tallies(tpl: Templater) -> None:
    counts = TemplateCounts()
    tpl.count_block(b"step 1 done\r\nstep 2 done\r\n", 0, counts, ranked=False)
    assert counts.stats == {(None, 0): [2, 1, b"step 1 done\r", 2, b"step 2 done\r"]}
    assert tpl.template(0) == "step <NUM> done"
    assert tpl.template_index(b"step 3 done") == 0


@pytest.mark.parametrize(
    ("block", "lines", "templated"),
    [
        (b"", 0, 0),
        (b"\n", 1, 0),
        (b"\n\n\n", 3, 0),
        (b"a\n\nb", 3, 2),
        (b"a\n\nb\n", 3, 2),
        (b"no newline", 1, 1),
        (b"\r\n\r\n", 2, 0),
        (b"a\r\n\r\nb\r\n", 3, 2),
        (b"a\r\n\r\r\nb", 3, 2),
    ],
)
def test_empty_lines_are_counted_but_not_templated(tpl: Templater, block: bytes, lines: int, templated: int) -> None:
    counts = TemplateCounts()
    tpl.count_block(block, 0, counts, ranked=False)
    assert counts.lines == lines
    assert sum(entry[0] for entry in counts.stats.values()) == templated


def test_counting_across_blocks_continues_line_numbers(tpl: Templater) -> None:
    counts = TemplateCounts()
    for block in (b"step 1 done\nhello world\n", b"step 2 done\n", b"\nstep 3 done\n"):
        tpl.count_block(block, counts.lines, counts, ranked=False)
    step, hello = tpl.template_index(b"step 1 done"), tpl.template_index(b"hello world")
    assert counts.lines == 5
    assert counts.stats == {
        (None, step): [3, 1, b"step 1 done", 5, b"step 3 done"],
        (None, hello): [1, 2, b"hello world", 2, b"hello world"],
    }


def test_long_lines_are_templated_on_their_head(tpl: Templater) -> None:
    head = b"x" * (TEMPLATE_CHARS - 10) + b" payload z"
    assert len(head) == TEMPLATE_CHARS
    a = tpl.template_index(head + b"tail one " * 50)
    b = tpl.template_index(head + b" another tail " * 90)
    assert a == b
    assert tpl.template(a) == head.decode()


def test_non_utf8_line_is_templated(tpl: Templater) -> None:
    index = tpl.template_index(b"caf\xe9 error 12 \xff")
    assert tpl.template(index) == "caf\ufffd error <NUM> \ufffd"


def test_fast_cache_reset_keeps_answers(tpl: Templater, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(templater_module, "FAST_CACHE_MAX", 2)
    lines = [b"step 1 done", b"job 22 started", b"step 333 done", b"job 4 started", b"rank 5 ok", b"step 66 done"]
    assert [tpl.template_index(line) for line in lines] == [0, 1, 0, 1, 2, 0]
    assert len(tpl._fast) <= 2


def test_template_id_is_stable_and_by_value() -> None:
    # Fixed values: ids must agree across processes and runs (files are scanned in parallel).
    assert template_id("iteration <NUM> loss <NUM>") == "ef9a21c05584"
    assert template_id("") == "ddd9c40767f9"
    assert template_id("Saving checkpoint to <PATH>") == template_id("Saving checkpoint to <PATH>")
    assert template_id("Saving checkpoint to <PATH>") != template_id("Loading checkpoint from <PATH>")


def test_separate_templaters_agree_on_template_text() -> None:
    lines = [b"iteration 10 loss 2.5", b"Saving checkpoint to /a/b", b"[rank3]: step 4 done"]
    one, two = Templater(), Templater()
    texts_one = [one.template(one.template_index(line)) for line in lines]
    texts_two = [two.template(two.template_index(line)) for line in reversed(lines)]
    assert [template_id(t) for t in texts_one] == [template_id(t) for t in reversed(texts_two)]


def _live_clusters_per_leaf(drain: Drain) -> list[int]:
    leaves, todo = [], [drain.root_node]
    while todo:
        node = todo.pop()
        todo.extend(node.key_to_child_node.values())
        if node.cluster_ids:
            leaves.append(sum(1 for cid in node.cluster_ids if cid in drain.id_to_cluster))
    return leaves


def test_a_leaf_holds_a_bounded_number_of_clusters(tpl: Templater) -> None:
    lines = [line.encode() for line in traceback_source_lines(10_000, words=4)]
    indexes = [tpl.template_index(line) for line in lines]
    leaves = _live_clusters_per_leaf(tpl._drain)
    assert len(tpl._clusters) > 20 * LEAF_CLUSTERS  # the lines did overflow leaves (plain Drain: 1,925 in one)
    assert max(leaves) <= LEAF_CLUSTERS + 1  # the one just added, until the leaf's next match retires one
    assert [tpl.template_index(line) for line in lines] == indexes  # a line keeps the template it was given


def test_the_bound_changes_nothing_on_the_healthy_corpus() -> None:
    """Real logs of every kind the corpus holds fill no leaf: the templates are plain Drain's, line for line."""
    bounded, plain = Templater(), Templater()
    plain._drain = Drain(sim_th=0.4, depth=4, max_children=100, max_clusters=MAX_CLUSTERS)
    lines = [line for path in sorted(HEALTHY.glob("*.log")) for line in path.read_bytes().splitlines()]
    assert len(lines) > 1900  # 1,977 lines since the generated job prints only real timer lines
    got = [bounded.template_index(line) for line in lines]
    want = [plain.template_index(line) for line in lines]
    assert [bounded.template(i) for i in got] == [plain.template(i) for i in want]


def _missing_keys_line(layers: int) -> bytes:
    """PyTorch's load_state_dict error lists every missing key on one line (torch/nn/modules/module.py:
    'Missing key(s) in state_dict: {}. '), tens of KB for a large model; Llama's parameter names."""
    params = [b"self_attn.q_proj.weight", b"self_attn.k_proj.weight", b"self_attn.v_proj.weight", b"mlp.up_proj.weight"]
    keys = b", ".join(b'"model.layers.%d.%s"' % (i, name) for i in range(layers) for name in params)
    return b"\tMissing key(s) in state_dict: " + keys + b". "


def test_stored_first_and_last_lines_are_capped_with_their_line_numbers(tpl: Templater) -> None:
    first_line, last_line = _missing_keys_line(80), _missing_keys_line(96)
    assert len(first_line) > 5 * KEPT_LINE_BYTES
    header = b"RuntimeError: Error(s) in loading state_dict for GPTModel:\n"  # two ranks fail alike
    block = header + first_line + b"\n" + header + last_line + b"\n"
    counts = TemplateCounts()
    tpl.count_block(block, 40, counts, ranked=False)
    [(count, first_no, first, last_no, last)] = [e for e in counts.stats.values() if e[2].startswith(b"\tMissing")]
    assert (count, first_no, last_no) == (2, 42, 44)  # the line numbers of the whole lines
    assert (first, last) == (first_line[:KEPT_LINE_BYTES], last_line[:KEPT_LINE_BYTES])

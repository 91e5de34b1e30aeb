"""parsers/rulefilter.py: one Hyperscan pass over a block, every candidate line confirmed by RE2."""

from __future__ import annotations

import hyperscan
import pytest

from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.rules import Rule, load_rules
from crashcart.parsers import rulefilter
from crashcart.parsers.rulefilter import (
    BlockHit,
    RuleFilter,
    adopt_database,
    compile_database,
    line_at,
    serialize_database,
)


def _rule(rule_id: str, pattern: str, examples: list[str], **kw: object) -> Rule:
    return Rule(
        id=rule_id,
        pattern=pattern,
        failure_class=kw.pop("failure_class", "unknown"),
        role=kw.pop("role", "symptom"),
        priority=kw.pop("priority", 50),
        explanation="a rule written for a test",
        examples=examples,
        **kw,
    )


# Real lines, each as its thread shows it.
NCCL_VERSION = "NCCL version 2.21.5+cuda12.4"  # knowledge/healthy/nccl.log
# oobabooga/textgen#1490 (dev case r-gpuoom-lora-ckpt-save-textgen-663): the older message, with "(GPU n;"
OOM_WITH_GPU = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 68.00 MiB (GPU 0; 23.99 GiB total capacity;"
    " 22.07 GiB already allocated; 0 bytes free; 22.99 GiB reserved in total by PyTorch) If reserved memory is >>"
    " allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management"
    " and PYTORCH_CUDA_ALLOC_CONF"
)
# NVIDIA/Megatron-LM#735 (shared dev set, d-timeout-001)
WATCHDOG_LINE = (
    "[rank2]:[E ProcessGroupNCCL.cpp:754] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=305,"
    " OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600381 milliseconds before timing out."
)
# the NVIDIA forum thread of dev case r-gpu-gsp-012 (forums.developer.nvidia.com, xid-62-xid-154-gsp-pmu-halt-crash)
XID_LINE = "Mar 27 17:40:36 kernel: NVRM: Xid (PCI:0000:01:00): 45, pid=12542, name=VLLM::Worker, channel 0x00000002"
# aws/aws-ofi-nccl#161 (dev case n-net-efa-request-rc21-sagemaker-031): "error" twice, one hit
OFI_ERROR = "NCCL WARN NET/OFI Request completed with error. RC: 21. Error: unknown error"
# QwenLM/Qwen3-Coder#174 (shared dev set, d-gpuoom-001): the newer message, no "(GPU n;" to capture
OOM_NO_GPU_GROUP = (
    "2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB. GPU 3 has"
    " a total capacity of 79.10 GiB of which 98.00 MiB is free. Process 387746 has 78.89 GiB memory in use. Of the"
    " allocated memory 70.12 GiB is allocated by PyTorch, and 765.81 MiB is reserved by PyTorch but unallocated. If"
    " reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid"
    " fragmentation.  See documentation for Memory Management "
    " (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)
# NVIDIA/gpu-operator#1146: an Xid whose message says "error"
XID_48 = (
    "Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>,"
    " An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fffa8860"
    " partition 7, subpartition 1."
)

WATCHDOG = _rule(
    "nccl.watchdog",
    r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)",
    [WATCHDOG_LINE],
)
OOM = _rule(
    "cuda.oom",
    r"CUDA out of memory\. Tried to allocate (?P<size>[\d.]+ [GM]iB)(?: \(GPU (?P<gpu>\d+))?",
    [OOM_WITH_GPU],
)
XID = _rule("xid", r"NVRM: Xid \(PCI:[0-9a-f:.]+\): (?P<xid>\d+)", [XID_LINE])
ERROR = _rule("error.word", r"\berror\b", [OFI_ERROR])

BLOCK = "\n".join([NCCL_VERSION, OOM_WITH_GPU, WATCHDOG_LINE, XID_LINE, OFI_ERROR, OOM_NO_GPU_GROUP]).encode()
# (no newline at the end of the block)


def _lines_of(block: bytes) -> list[tuple[int, int]]:
    """(start, end) of each line, end excluding the newline."""
    spans, pos = [], 0
    for line in block.split(b"\n"):
        spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    return spans


def test_hits_in_position_order_with_offsets_text_and_captures() -> None:
    hits = RuleFilter([ERROR, XID, WATCHDOG, OOM]).scan(BLOCK)
    lines = _lines_of(BLOCK)
    assert hits == [
        BlockHit(3, *lines[1], OOM_WITH_GPU, {"size": "68.00 MiB", "gpu": "0"}),
        BlockHit(2, *lines[2], WATCHDOG_LINE, {"seq": "305", "op": "ALLREDUCE"}),
        BlockHit(1, *lines[3], XID_LINE, {"xid": "45"}),
        BlockHit(0, *lines[4], OFI_ERROR, {}),
        BlockHit(3, *lines[5], OOM_NO_GPU_GROUP, {"size": "132.00 MiB"}),
    ]
    assert (hits[0].start, hits[-1].end) == (len(NCCL_VERSION) + 1, len(BLOCK))
    for hit in hits:
        assert BLOCK[hit.start : hit.end].decode() == hit.text
        assert hit.start == 0 or BLOCK[hit.start - 1 : hit.start] == b"\n"


def test_several_rules_on_one_line_are_ordered_by_rule_index() -> None:
    line = XID_48.encode() + b"\n"
    hits = RuleFilter([ERROR, XID]).scan(b"before\n" + line)
    assert [(h.rule_index, h.start, h.end) for h in hits] == [(0, 7, 7 + len(line) - 1), (1, 7, 7 + len(line) - 1)]


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        # raw block                                   (start, end, text) of each hit
        (b"x error\r\n", [(0, 8, "x error")]),
        (b"a error\r\nb\r\nc error\r\n", [(0, 8, "a error"), (12, 20, "c error")]),
        (b"error\r", [(0, 6, "error")]),
        (b"progress 10%\rprogress 20%\r error\r\n", [(0, 33, "progress 10%\rprogress 20%\r error")]),
        (b"\n\nerror\n\n", [(2, 7, "error")]),
        (b"error", [(0, 5, "error")]),
    ],
)
def test_line_offsets_and_text(block: bytes, expected: list[tuple[int, int, str]]) -> None:
    hits = RuleFilter([ERROR]).scan(block)
    assert [(h.start, h.end, h.text) for h in hits] == expected


def test_end_anchored_rule_matches_crlf_lines() -> None:
    # RE2 sees the line without its \r, so `$` must also end a CRLF line in the Hyperscan pass.
    rule = _rule("exit.failed", r"exited with code (?P<code>\d+)$", ["worker exited with code 1"])
    block = b"w0 exited with code 1\r\nw1 exited with code 2\nw2 exited with code 3\r\nw3 exited with code 4"
    hits = RuleFilter([rule]).scan(block)
    assert [(h.text, h.captures["code"]) for h in hits] == [
        ("w0 exited with code 1", "1"),
        ("w1 exited with code 2", "2"),
        ("w2 exited with code 3", "3"),
        ("w3 exited with code 4", "4"),
    ]
    assert [h.start for h in hits] == [0, 23, 45, 68]


def test_start_anchored_rule_matches_every_line_start() -> None:
    rule = _rule("tb", r"^Traceback \(most recent call last\):", ["Traceback (most recent call last):"])
    block = b"Traceback (most recent call last):\r\n  x\r\nTraceback (most recent call last):\n y Traceback (most"
    assert [h.start for h in RuleFilter([rule]).scan(block)] == [0, 41]


def test_named_groups_that_did_not_take_part_are_left_out() -> None:
    [hit] = RuleFilter([OOM]).scan(OOM_NO_GPU_GROUP.encode() + b"\n")
    assert hit.captures == {"size": "132.00 MiB"}


@pytest.mark.parametrize(
    ("ignore_case", "expected"),
    [(True, ["CUDA OUT OF MEMORY", "cuda out of memory", "Cuda Out Of Memory"]), (False, ["cuda out of memory"])],
)
def test_case_insensitive_rule(ignore_case: bool, expected: list[str]) -> None:
    rule = _rule("oom.any", r"cuda out of memory", ["cuda out of memory"], ignore_case=ignore_case)
    block = b"CUDA OUT OF MEMORY\ncuda out of memory\nCuda Out Of Memory\ncuda out of mem\n"
    assert [h.text for h in RuleFilter([rule]).scan(block)] == expected


def test_candidate_spanning_lines_is_rejected_by_re2() -> None:
    # Hyperscan matches `\s` on the newline, so it reports a match ending on the second line;
    # RE2, run on that line alone, rejects it.
    rule = _rule("split", r"socket\s+timeout", ["socket timeout"])
    block = b"NCCL socket\ntimeout waiting\nsocket   timeout\n"
    seen: list[int] = []
    flt = RuleFilter([rule])
    flt._db.scan(block, match_event_handler=lambda _i, _f, to, _fl, _c: seen.append(to))
    assert seen == [19, 44]  # the cross-line candidate (ends in "timeout waiting") and the real one
    assert [(h.start, h.text) for h in flt.scan(block)] == [(28, "socket   timeout")]


def test_confirm_directly() -> None:
    flt = RuleFilter([ERROR, XID])
    block = b"no match here\nan error\xff\n"
    assert line_at(block, 14) == (23, "an error\ufffd") and line_at(b"tail", 0) == (4, "tail")
    assert flt.confirm(0, 0, *line_at(block, 0)) is None
    assert flt.confirm(1, 14, *line_at(block, 14)) is None
    assert flt.confirm(0, 14, *line_at(block, 14)) == BlockHit(0, 14, 23, "an error\ufffd", {})
    assert flt.candidates(block) == [(14, 0)]


def test_non_utf8_line_is_decoded_with_replacement() -> None:
    [hit] = RuleFilter([ERROR]).scan(b"caf\xe9 error \xff\xfe\n")
    assert hit.text == "caf\ufffd error \ufffd\ufffd"
    assert (hit.start, hit.end) == (0, 13)


def test_no_rules_or_empty_block() -> None:
    assert RuleFilter([]).scan(BLOCK) == []
    assert RuleFilter([ERROR]).scan(b"") == []
    assert RuleFilter([ERROR]).scan(b"\n\n\n") == []


def test_many_lines_one_hit_each() -> None:
    block = b"".join(b"line %d: error\n" % i for i in range(1000))
    hits = RuleFilter([ERROR]).scan(block)
    assert len(hits) == 1000
    assert [h.text for h in hits[:2]] == ["line 0: error", "line 1: error"]
    assert hits == sorted(hits, key=lambda h: h.start)


@pytest.mark.parametrize(
    ("pattern", "example"),
    [
        (r"(?U)launch failed a+", "launch failed aaa"),  # RE2's ungreedy flag: no such thing in Hyperscan
        (r"bad \x{100} char", "bad \u0100 char"),  # a code point above \xff: Hyperscan works on bytes
    ],
)
def test_rule_hyperscan_rejects_is_named(pattern: str, example: str) -> None:
    bad = _rule("bad.rule", pattern, [example])
    with pytest.raises(KnowledgeError, match=r"^rule pattern rejected by Hyperscan: rule 'bad\.rule' \(.+\)$"):
        RuleFilter([ERROR, bad, XID])


def test_combined_database_failure_is_named_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rulefilter, "_DATABASES", {})  # a database cached by an earlier test would hide the failure

    class OneAtATime(hyperscan.Database):  # type: ignore[misc]
        """Compiles each rule alone but fails on the set, as a database over Hyperscan's limits would."""

        def compile(self, expressions: list[bytes], **kw: object) -> None:  # type: ignore[override]
            if len(expressions) > 1:
                raise hyperscan.error("Pattern too large")
            super().compile(expressions=expressions, **kw)

    monkeypatch.setattr(rulefilter.hyperscan, "Database", OneAtATime)
    with pytest.raises(KnowledgeError) as info:
        compile_database([ERROR, XID])
    assert str(info.value) == "rule pattern rejected by Hyperscan: the combined database (Pattern too large)"


def test_rules_are_kept_in_order() -> None:
    flt = RuleFilter([XID, ERROR])
    assert [r.id for r in flt.rules] == ["xid", "error.word"]
    assert [h.rule_index for h in flt.scan(b"an error\n")] == [1]


def test_a_serialized_database_scans_as_the_compiled_one() -> None:
    rules = load_rules()
    data = serialize_database(rules)
    rulefilter._DATABASES.clear()
    adopt_database(rules, data)
    (adopted,) = rulefilter._DATABASES.values()
    assert RuleFilter(rules)._db is adopted  # loaded, not compiled again
    # the CUDA runtime's message for a bad device address, as PyTorch raises it (torch/csrc/cuda)
    line = b"[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    hits = RuleFilter(rules).scan(line)
    assert [rules[h.rule_index].id for h in hits] == ["cuda.illegal_memory_access"]

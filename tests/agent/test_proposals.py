"""Tests for agent/proposals.py (validation, the template proposer) and agent/derive.py, which it builds on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import re2

from crashcart.agent.derive import derive_from_template
from crashcart.agent.proposals import (
    Validation,
    propose_from_line,
    validate_pattern,
)
from crashcart.knowledge.healthy import healthy_corpus
from crashcart.knowledge.rule_store import MemoryRuleStore
from crashcart.knowledge.rules import load_rules
from crashcart.knowledge.taxonomy import FailureClass, Role
from crashcart.parsers.rulefilter import RuleFilter
from crashcart.parsers.templater import Templater

HEALTHY_DIR = Path(__file__).resolve().parents[2] / "knowledge" / "healthy"
NCCL_INFO = "node00:2211:2290 [0] NCCL INFO Connected all rings"


# -- validate_pattern: one pattern per reason, the reason beside it --------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "examples", "reason"),
    [
        (r"(a+)+$", ["aaaa"], "backtracking: nested quantifier"),
        (r"(\w+\s?)*x", ["ab x"], "backtracking: nested quantifier"),
        (r"(.*)*fell off the bus", ["GPU fell off the bus"], "backtracking: nested quantifier"),
        (r"(a|a)*GPU fell off the bus", ["GPU fell off the bus"], "backtracking: alternation of overlapping"),
        (r".*", ["anything at all"], "too broad: only 0 literal characters"),
        (r"error", ["RuntimeError: error"], "too broad: only 5 literal characters"),
        (r"\d+ failed", ["3 failed"], "too broad: only 7 literal characters"),
        (r"(?=x)xid error on gpu", ["xid error on gpu"], "unsupported: lookahead"),
        (r"(?<=x)xid error on gpu", ["xxid error on gpu"], "unsupported: lookbehind"),
        (r"(a)\1 went away forever", ["aa went away forever"], "unsupported: backreference"),
        (r"GPU (\d+ has fallen off the bus", ["GPU 3 has fallen off the bus"], "compile: RE2 rejects it"),
        (r"(?U)GPU \d+ has fallen off the bus", ["GPU 3 has fallen off the bus"], "compile: Hyperscan rejects it"),
        (r"NCCL INFO Connected all rings", [NCCL_INFO], "matches healthy line: 'node00:2211:2290 [0] NCCL INFO"),
        (r"NCCL WARN NET/IB : Got completion", ["node1:1:2 [0] NCCL WARN NET/IB: retry"], "misses example: "),
        (r"GPU \d+ has fallen off the bus", [], "misses example: none given"),
    ],
    ids=[
        "a-plus-plus",
        "word-space-star",
        "dot-star-star",
        "overlap-branches",
        "dot-star",
        "error",
        "num-failed",
        "lookahead",
        "lookbehind",
        "backreference",
        "re2-syntax",
        "hyperscan-only",
        "healthy",
        "misses",
        "no-examples",
    ],
)
def test_each_rejection_has_its_one_line_reason(pattern: str, examples: list[str], reason: str) -> None:
    verdict = validate_pattern(pattern, examples)
    assert not verdict.ok
    assert any(r.startswith(reason) for r in verdict.reasons), verdict.reasons
    assert all("\n" not in r for r in verdict.reasons)


@pytest.mark.parametrize(
    ("pattern", "examples"),
    [
        (r"NCCL INFO Connected all rings", [NCCL_INFO]),
        (r"NCCL WARN NET/IB : Got completion", ["node1:1:2 [0] NCCL WARN NET/IB: retry"]),
        (r"(?U)GPU \d+ has fallen off the bus", ["GPU 3 has fallen off the bus"]),
        (r"(?=x)xid error on gpu", ["xid error on gpu"]),
    ],
    ids=["healthy", "misses", "hyperscan-only", "lookahead"],
)
def test_a_pattern_with_one_flaw_gets_one_reason(pattern: str, examples: list[str]) -> None:
    """A lookahead is one problem, not three (RE2 and Hyperscan refusals would only repeat it)."""
    assert len(validate_pattern(pattern, examples).reasons) == 1


def test_a_pattern_broad_on_random_lines_is_refused_even_where_no_healthy_line_shows_it() -> None:
    pattern = r"(?:rank|node|host|worker|device) [^ ]+ [^ ]+ [^ ]+ [^ ]+ [^ ]+"  # 9 literal characters
    verdict = validate_pattern(pattern, ["rank 3 went away at step 12"], healthy=[])
    assert len(verdict.reasons) == 1
    assert verdict.reasons[0].startswith("too broad: matches ") and "random log-like lines" in verdict.reasons[0]


def test_a_specific_pattern_passes_with_notes() -> None:
    pattern = r"NVRM: Xid \(PCI:[0-9a-f:.]+\): (?P<xid>79), pid=\d+, .*GPU has fallen off the bus"
    line = (
        "May  1 10:40:02 node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=4412, name=python, GPU has fallen "
        "off the bus."
    )
    verdict = validate_pattern(pattern, [line])
    assert verdict == Validation(ok=True, reasons=[], notes=verdict.notes)
    assert any("healthy log lines" in n for n in verdict.notes)
    assert any("example line(s) in RE2 and Hyperscan" in n for n in verdict.notes)


def test_validation_notes_shipped_rules_that_already_match() -> None:
    line = "RuntimeError: CUDA error: an illegal memory access was encountered"
    verdict = validate_pattern(r"CUDA error: an illegal memory access was encountered", [line])
    assert verdict.ok
    (note,) = [n for n in verdict.notes if n.startswith("shipped rules already match the examples: ")]
    assert all(r.compiled().search(line) for r in load_rules() if r.id in note.split(": ", 1)[1].split(", "))


def test_validation_uses_the_healthy_lines_it_is_given() -> None:
    pattern = r"custom healthy banner \d+"
    assert validate_pattern(pattern, ["custom healthy banner 1"]).ok
    verdict = validate_pattern(pattern, ["custom healthy banner 1"], healthy=["ok", "custom healthy banner 7"])
    assert verdict.reasons == ["matches healthy line: 'custom healthy banner 7'; make it specific to the failure"]


def test_validation_is_fast_once_the_corpus_is_built() -> None:
    healthy_corpus()
    began = time.perf_counter()
    for i in range(20):
        validate_pattern(rf"custom fault {i} detected on device \d+", [f"custom fault {i} detected on device 3"])
    assert (time.perf_counter() - began) / 20 < 0.05  # measured ~0.5 ms; a regression to per-line Python shows


# -- the healthy corpus ------------------------------------------------------------------------------------------


def test_healthy_corpus_holds_the_shipped_samples_and_a_generated_job() -> None:
    lines = healthy_corpus()
    assert len(lines) == len(set(lines)) > 1500
    for path in sorted(HEALTHY_DIR.glob("*.log")):
        assert set(path.read_text(encoding="utf-8").splitlines()) - {""} <= set(lines), path.name
    assert {p.stem for p in HEALTHY_DIR.glob("*.log")} >= {
        "megatron",
        "deepspeed",
        "hf_trainer",
        "torchrun",
        "nccl",
        "slurm",
        "kernel",
    }
    assert any(line.startswith("[default") and "iteration" in line for line in lines)  # torchrun per node
    assert any(line.startswith("0: ") for line in lines)  # srun --label
    assert healthy_corpus() == lines


def test_no_shipped_root_cause_rule_fires_on_the_healthy_corpus() -> None:
    """Either the corpus holds a failure or a shipped rule misfires: both would mislead proposal validation."""
    rules = [r for r in load_rules() if r.role is Role.ROOT_CAUSE]
    hits = RuleFilter(rules).scan("\n".join(healthy_corpus()).encode())
    assert [(rules[h.rule_index].id, h.text) for h in hits] == []


# -- derive_from_template on real templates: the line, the same message elsewhere ------------------------------

CASES = [
    (
        "[default3]:node07:43757:43921 [3] NCCL WARN NET/IB : Got completion from peer 10.64.0.9<45213> with status=12 "
        "opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.64.0.8 remoteGids::ffff:10.64.0.9 hca mlx5_3",
        "gpu-node-112:9911:9920 [6] NCCL WARN NET/IB : Got completion from peer 172.16.4.21<50001> with status=12 "
        "opcode=1 len=65536 vendor err 244 (Recv) localGid ::ffff:172.16.4.20 remoteGids::ffff:172.16.4.21 hca mlx5_7",
    ),
    (
        "[rank5]: ValueError: expected sequence of length 4096 at dim 1 (got 4095)",
        "[rank61]: ValueError: expected sequence of length 2048 at dim 0 (got 17)",
    ),
    (
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity "
        "of 79.10 GiB of which 1.06 GiB is free.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 GiB. GPU 0 has a total capacity "
        "of 39.39 GiB of which 300.00 GiB is free.",
    ),
    (
        "[rank0]: FileNotFoundError: [Errno 2] No such file or directory: '/data/shards/train-00042.bin'",
        "3: FileNotFoundError: [Errno 2] No such file or directory: '/mnt/other/valid-7.bin'",
    ),
    (
        "Jul 10 19:36:24 node03 kernel: NVRM: Xid (PCI:0000:86:00): 79, pid=43757, name=python, GPU has fallen off "
        "the bus.",
        "[1234567.890123] NVRM: Xid (PCI:0000:af:00): 79, pid=1201, name=python, GPU has fallen off the bus.",
    ),
    (
        "[   12.345678] mlx5_core 0000:86:00.0: mlx5_fw_fatal_reporter_err_work:2342:(pid 1234): Device error",
        "May  1 10:00:00 dgx-a17 kernel: [ 99.100000] mlx5_core 0000:c1:00.1: mlx5_fw_fatal_reporter_err_work:2342:"
        "(pid 77): Device error",
    ),
]
IDS = ["nccl-warn", "value-error", "cuda-oom", "file-not-found", "kernel-xid", "kernel-mlx5"]


def _template(line: str) -> str:
    templater = Templater()
    return templater.template(templater.template_index(line.encode()))


@pytest.mark.parametrize(("line", "elsewhere"), CASES, ids=IDS)
def test_derived_regex_matches_the_message_anywhere_and_nothing_healthy(line: str, elsewhere: str) -> None:
    pattern = derive_from_template(_template(line), line)
    regex = re2.compile(pattern)
    assert regex.search(line)
    assert regex.search(elsewhere), pattern
    assert validate_pattern(pattern, [line, elsewhere]).ok
    assert not [h for h in healthy_corpus() if regex.search(h)]


@pytest.mark.parametrize(
    ("template", "line", "pattern"),
    [
        (
            "<HOST> [<NUM>] NCCL WARN peer <IP> closed",
            "node3:11:12 [0] NCCL WARN peer 10.0.0.1<80> closed",
            r"NCCL[ \t]+WARN[ \t]+peer[ \t]+\d{1,3}(?:\.\d{1,3}){3}(?::\d+|<\d+>)?[ \t]+closed",
        ),
        (
            "W0710 <NUM>:<NUM>:<NUM> <NUM> torch/distributed/run.py:<NUM>] Sending process <NUM> "
            "closing signal SIGTERM",
            "W0710 19:36:27.000000 43584 torch/distributed/run.py:793] Sending process 4412 closing signal SIGTERM",
            r"Sending[ \t]+process[ \t]+[-+]?\d[\d.,]*(?:[eE][-+]?\d+)?(?:%|[KMG]i?B|m?s)?[ \t]+closing[ \t]+signal"
            r"[ \t]+SIGTERM",
        ),
        (
            "[<NUM>-<NUM>-<NUM> <NUM>:<NUM>:<NUM>] [ERROR] [engine.py:<NUM>:step] rank <RANK> stage lost",
            "[2024-05-01 10:04:30,000] [ERROR] [engine.py:183:step] rank=3 stage lost",
            r"rank[ =:]{0,4}\d+[ \t]+stage[ \t]+lost",
        ),
        (
            "<HOST> kernel: Oops <*>",
            "node07 kernel: Oops 0002",
            r"kernel:[ \t]+Oops[ \t]+[^ \t\n]+",
        ),  # "Oops <*>" alone is too short a message: it keeps its tag
    ],
    ids=["nccl-prefix", "glog-prefix", "deepspeed-prefix-rank", "short-core-keeps-tag"],
)
def test_derive_drops_the_launcher_prefix(template: str, line: str, pattern: str) -> None:
    assert derive_from_template(template, line) == pattern


def test_drain_wildcards_become_one_word() -> None:
    templater = Templater()
    for shard in ("alpha", "beta"):
        index = templater.template_index(f"Loading shard {shard} failed: checksum mismatch".encode())
    template = templater.template(index)
    assert template == "Loading shard <*> failed: checksum mismatch"
    regex = re2.compile(derive_from_template(template, "Loading shard beta failed: checksum mismatch"))
    assert regex.search("Loading shard gamma-7 failed: checksum mismatch")
    assert not regex.search("Loading shard two words failed: checksum mismatch")


def test_a_template_that_does_not_fit_the_line_falls_back_to_the_line() -> None:
    line = "[rank2]: RuntimeError: shard 17 of /ckpt/run1 is truncated"
    pattern = derive_from_template("Some other template <NUM>", line)
    assert re2.search(pattern, line)
    assert re2.search(pattern, "RuntimeError: shard 3 of /ckpt/run2/x is truncated")


# -- propose_from_line: the no-LLM proposer end to end -----------------------------------------------------------


def test_propose_from_line_gives_an_unsaved_template_proposal() -> None:
    line, elsewhere = CASES[4]
    proposed = propose_from_line(line + "\r\n", FailureClass.GPU_HARDWARE, job="job-4280674")
    assert (proposed.id, proposed.status, proposed.origin, proposed.model) == (
        "",
        "pending",
        "template",
        "drain3-template",
    )
    assert proposed.examples == [line] and proposed.validation and proposed.reason is None
    store = MemoryRuleStore()
    rule = store.confirm(store.propose(proposed).id, "alice")
    assert rule.source.endswith(":job-4280674:drain3-template")
    hits = RuleFilter([rule]).scan(f"{NCCL_INFO}\n{elsewhere}\n".encode())
    assert [h.text for h in hits] == [elsewhere]


def test_propose_from_line_rejects_a_healthy_looking_line_with_its_reasons() -> None:
    rejected = propose_from_line(NCCL_INFO, FailureClass.NETWORK, job="job-1")
    assert rejected.status == "rejected"
    assert rejected.pattern.startswith("NCCL[ \\t]+INFO")
    assert rejected.reason is not None and rejected.reason.startswith("matches healthy line")
    assert any(r.startswith("matches healthy line") for r in rejected.validation)

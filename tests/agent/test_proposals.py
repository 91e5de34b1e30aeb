"""Tests for agent/proposals.py (validation, the template proposer) and agent/derive.py, which it builds on."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import re2

from crashcart.agent.derive import derive_from_template
from crashcart.agent.proposals import (
    Validation,
    propose,
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
NCCL_INFO = "[1] node2:22555:22555 [0] NCCL INFO Connected all rings"  # NVIDIA/nccl#1232, in knowledge/healthy/nccl.log


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
        (r"NCCL INFO Connected all rings", [NCCL_INFO], "matches healthy line: '[1] node2:22555:22555 [0] NCCL INFO"),
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


# -- a proposal for a class: no other failure's line, no broader than the rules it outranks (issue 9, item 7) ------

# Evidence lines, each seen in a real log: torchrun's worker traceback (vllm-project/vllm#10453), the ECC watchdog
# line of pytorch/pytorch#113128 (the dev set's d-gpu-ecc-001), a Megatron-LM frame as evals/scenarios.yaml prints it,
# srun's task line (tonyyxliu/CUHKSZ-CSC4005#51), torchrun's summary (pytorch/pytorch#121209); the rest are lines
# the shipped rules hold as examples (knowledge/signatures/*.yaml), where each one's source is kept.
TB = "[rank1]: Traceback (most recent call last):"
ECC = (
    "[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 12] Process group "
    "watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered"
)
ECC_PY = "RuntimeError: CUDA error: uncorrectable ECC error encountered"
XID79 = "kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=28231, GPU has fallen off the bus."
FRAME = '[rank3]:   File "/workspace/megatron-lm/megatron/training/training.py", line 1422, in train'
NCCL_IB = (
    "[default3]:node07:43757:43921 [3] NCCL WARN NET/IB : Got completion from peer 10.64.0.9<45213> with status=12 "
    "opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.64.0.8 remoteGids::ffff:10.64.0.9 hca mlx5_3"
)
OOM_KILL = "kernel: Out of memory: Killed process 21447 (python)"
SRUN_KILLED = "srun: error: node25: task 11: Killed"
GPU = FailureClass.GPU_HARDWARE
OTHER = "matches another failure's line"
BROAD = "too broad: only"
PADDED = "padded: a leading or trailing .*"
OVERLAP = "backtracking: alternation of overlapping"

HOSTILE = [
    # generic traceback and exception headers: every Python crash prints them, whatever failed
    pytest.param(r"Traceback \(most recent call last\)", GPU, TB, OTHER, id="traceback-header"),
    pytest.param(
        r"^Traceback \(most recent call last\):$",
        GPU,
        "Traceback (most recent call last):",
        OTHER,
        id="traceback-anchored",
    ),
    pytest.param(
        r"\[rank\d+\]: Traceback \(most recent call last\):",
        FailureClass.NETWORK,
        TB,
        OTHER,
        id="traceback-rank-prefix",
    ),
    pytest.param(
        r"During handling of the above exception, another exception occurred",
        FailureClass.CODE_BUG,
        "During handling of the above exception, another exception occurred:",
        OTHER,
        id="chained-during",
    ),
    pytest.param(
        r"The above exception was the direct cause of the following exception",
        FailureClass.CODE_BUG,
        "The above exception was the direct cause of the following exception:",
        OTHER,
        id="chained-cause",
    ),
    pytest.param(
        r"terminate called after throwing an instance of",
        GPU,
        "terminate called after throwing an instance of 'c10::Error'",
        OTHER,
        id="cpp-terminate",
    ),
    # bare exception type names with ': ': the type says nothing of the cause, the message after it does
    pytest.param(r"RuntimeError: ", GPU, ECC_PY, OTHER, id="runtime-error"),
    pytest.param(
        r"ValueError: ",
        FailureClass.DATA_ERROR,
        "[rank5]: ValueError: expected sequence of length 4096 at dim 1 (got 4095)",
        OTHER,
        id="value-error",
    ),
    pytest.param(r"OSError: ", GPU, "OSError: [Errno 5] Input/output error", OTHER, id="os-error"),
    pytest.param(r"KeyError: ", FailureClass.CONFIG_ERROR, "KeyError: 'LOCAL_RANK'", OTHER, id="key-error"),
    pytest.param(r"AssertionError", GPU, "AssertionError", OTHER, id="assertion-error"),
    pytest.param(
        r"torch\.distributed\.DistBackendError: ",
        FailureClass.NETWORK,
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
        "NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version 2.21.5",
        OTHER,
        id="dist-backend-error",
    ),
    pytest.param(r"(?:RuntimeError|ValueError|OSError): ", GPU, ECC_PY, OTHER, id="exception-names"),
    pytest.param(
        r"torch\.distributed\.elastic\.multiprocessing\.errors\.ChildFailedError",
        GPU,
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        OTHER,
        id="child-failed",
    ),
    # `CUDA error` and the notes under it: printed for ECC faults, illegal accesses, bad ordinals, OOMs alike
    pytest.param(r"CUDA error", GPU, ECC, OTHER, id="cuda-error"),
    pytest.param(r"RuntimeError: CUDA error: [^\n]+", GPU, ECC_PY, OTHER, id="cuda-error-any-message"),
    pytest.param(
        r"CUDA kernel errors might be asynchronously reported",
        GPU,
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.",
        OTHER,
        id="cuda-async-note",
    ),
    pytest.param(
        r"For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        FailureClass.CUDA_ERROR,
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        OTHER,
        id="cuda-blocking-note",
    ),
    # frame lines: the path of the code that was running, not what went wrong
    pytest.param(r'File "[^"]+", line \d+, in ', GPU, FRAME, OTHER, id="frame-line"),
    pytest.param(r'  File "[^"]*\.py", line \d+', FailureClass.CODE_BUG, FRAME, OTHER, id="frame-line-py"),
    pytest.param(
        r"Root Cause \(first observed failure\)",
        GPU,
        "Root Cause (first observed failure):",
        OTHER,
        id="torchrun-summary",
    ),
    pytest.param(
        r"exitcode  : 1 \(pid: \d+\)",
        FailureClass.CODE_BUG,
        "  exitcode  : 1 (pid: 69813)",
        OTHER,
        id="torchrun-exitcode",
    ),
    # `Error`, `NCCL WARN`, `Killed`: a word or two every failing job prints
    pytest.param(r"Error", GPU, ECC_PY, BROAD, id="error"),
    pytest.param(r"[A-Za-z]+Error: ", FailureClass.CODE_BUG, ECC_PY, BROAD, id="any-error-name"),
    pytest.param(r"NCCL WARN", FailureClass.NETWORK, NCCL_IB, OTHER, id="nccl-warn"),
    pytest.param(r"NCCL WARN [^\n]*", GPU, NCCL_IB, OTHER, id="nccl-warn-rest"),
    pytest.param(
        r"NCCL error",
        FailureClass.NETWORK,
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:957, invalid usage, NCCL version 21.0.3",
        OTHER,
        id="nccl-error",
    ),
    pytest.param(r"Killed", FailureClass.HOST_OOM, "Killed", BROAD, id="killed"),
    pytest.param(r"Killed process \d+", GPU, OOM_KILL, OTHER, id="killed-process"),
    pytest.param(
        r"srun: error: [^:]+: task \d+: Killed", FailureClass.HOST_OOM, SRUN_KILLED, OTHER, id="srun-task-killed"
    ),
    # short alternations: the poorest branch is what every match must hold
    pytest.param(r"error|failed|fatal", GPU, ECC_PY, BROAD, id="alternation-words"),
    pytest.param(r"(?:CUDA|NCCL|NVRM) (?:error|WARN)", GPU, ECC, OTHER, id="alternation-tags"),
    # .*-padded words: `.*error.*` is `error` in a search
    pytest.param(r".*error.*", GPU, ECC, PADDED, id="padded-error"),
    pytest.param(r".*Traceback.*", GPU, TB, PADDED, id="padded-traceback"),
    pytest.param(r".*CUDA.*error.*", GPU, ECC, PADDED, id="padded-cuda-error"),
    # \p{...}: Python's parser cannot read it, so the literal count used to be skipped
    pytest.param(r"\p{Lu}\p{L}+Error: ", GPU, ECC_PY, BROAD, id="unicode-error-name"),
    pytest.param(r"\p{L}+ \p{L}+ \p{L}+ ECC \p{L}+", GPU, ECC_PY, BROAD, id="unicode-words"),
    pytest.param(r"[[:alpha:]]+Error: [[:alpha:]]+", GPU, ECC_PY, BROAD, id="posix-error-name"),
    # prefix-factored alternations under a repeat: Python's parser hides the shared prefix as x(?:|y)
    pytest.param(r"NVRM: Xid (?:\(|\(PCI:)*[0-9a-f:]+\): 79", GPU, XID79, OVERLAP, id="factored-xid"),
    pytest.param(r"(?:GPU |GPU has )+fallen off the bus", GPU, XID79, OVERLAP, id="factored-gpu"),
    pytest.param(r"(?:ECC|ECC error )*uncorrectable ECC error encountered", GPU, ECC, OVERLAP, id="factored-ecc"),
]


@pytest.mark.parametrize(("pattern", "failure_class", "line", "reason"), HOSTILE)
def test_patterns_that_match_most_crashes_are_refused(
    pattern: str, failure_class: FailureClass, line: str, reason: str
) -> None:
    proposed = propose(pattern, [line], failure_class, origin="llm", model="m", job="j", explanation="a test case")
    assert proposed.status == "rejected"
    assert any(r.startswith(reason) for r in proposed.validation), proposed.validation
    assert all("\n" not in r for r in proposed.validation)


def test_a_refusal_for_another_failures_line_names_the_line_and_where_it_comes_from() -> None:
    verdict = validate_pattern(r"CUDA error: ", [ECC], failure_class=GPU)
    (reason,) = [r for r in verdict.reasons if r.startswith(OTHER)]
    assert re.search(r" \(an example of rule [\w.]+, \w+\)", reason), reason
    assert reason.endswith("; match what only a gpu_hardware failure prints")
    verdict = validate_pattern(r"Traceback \(most recent call last\)", [TB], failure_class=GPU)
    (reason,) = verdict.reasons  # the line every crash prints is named first, however many examples also match
    assert reason.startswith(
        "matches another failure's line 'Traceback (most recent call last):' (a line crashes of every class print) "
        "(and "
    )
    assert reason.endswith(" more); match what only a gpu_hardware failure prints")


def test_a_proposal_that_would_outrank_a_more_specific_rule_of_another_class_is_refused() -> None:
    """On the DataLoader line, mem.host.dataloader_exited (host_oom, a symptom) fires; a gpu_hardware root cause
    outranks it there, so it must say at least as much as that rule does."""
    line = "RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly"  # the shipped example's format
    verdict = validate_pattern(r"worker \(pid\(s\) 4242\) exited", [line], failure_class=GPU)
    assert verdict.reasons == [
        "less specific than rule mem.host.dataloader_exited (host_oom), which it would outrank on "
        f"{line!r}: 27 literal characters in every match against its 47; spell out more of the message"
    ]
    assert validate_pattern(r"worker \(pid\(s\) 4242\) exited", [line], failure_class=FailureClass.HOST_OOM).ok


@pytest.mark.parametrize(
    ("case", "failure_class"),
    [
        (0, FailureClass.NETWORK),
        (1, FailureClass.DATA_ERROR),
        (2, FailureClass.GPU_OOM),
        (3, FailureClass.CONFIG_ERROR),
        (4, FailureClass.GPU_HARDWARE),
        (5, FailureClass.NETWORK),
    ],
    ids=IDS,
)
def test_derived_proposals_for_their_class_pass_the_other_failure_checks(
    case: int, failure_class: FailureClass
) -> None:
    line, elsewhere = CASES[case]
    proposed = propose_from_line(line, failure_class, job="job-1")
    assert proposed.status == "pending", proposed.validation
    assert any(n.startswith("matches none of ") and "lines of other failures" in n for n in proposed.validation)
    assert "at least as specific as every shipped rule of another class it would outrank" in proposed.validation

"""parsers/scan.py: one streaming pass per source, rule hits and template tallies, across processes."""

from __future__ import annotations

import functools
import gc
import gzip
import io
import sys
import types
from datetime import datetime
from pathlib import Path

import pytest
import zstandard
from traceback_lines import traceback_source_lines

from crashcart.knowledge.rules import Rule
from crashcart.parsers import scan as scan_module
from crashcart.parsers import sources
from crashcart.parsers import templater as templater_module
from crashcart.parsers.models import FileScan
from crashcart.parsers.scan import MAX_HITS_PER_RULE_RANK, FileScanner, scan_sources
from crashcart.parsers.sources import Source, discover


def _rule(rule_id: str, pattern: str, examples: list[str], failure_class: str, role: str, **kw: object) -> Rule:
    return Rule(
        id=rule_id,
        pattern=pattern,
        failure_class=failure_class,
        role=role,
        priority=kw.pop("priority", 50),
        explanation="a rule written for a test",
        examples=examples,
        **kw,
    )


RULES = [
    _rule(
        "nccl.watchdog",
        r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)",
        ["Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE"],
        "collective_timeout",
        "symptom",
        priority=40,
    ),
    _rule(
        "cuda.illegal_access",
        r"CUDA error: an illegal memory access was encountered",
        ["RuntimeError: CUDA error: an illegal memory access was encountered"],
        "cuda_error",
        "root_cause",
        priority=80,
        stage="training",
    ),
    _rule(
        "ckpt.saved",
        r"saved checkpoint at iteration\s+(?P<iteration>\d+)",
        ["successfully saved checkpoint at iteration    1200 to /ckpt"],
        "unknown",
        "context",
        priority=5,
    ),
]

LOG = (
    b"job starting on 2 ranks\n"  # 1
    b"[rank0]: iteration 1 loss 2.5\n"  # 2
    b"[rank1]: iteration 1 loss 2.6\n"  # 3
    b"[rank0]: successfully saved checkpoint at iteration    1 to /ckpt/run7\n"  # 4
    b"\n"  # 5
    b"[rank0]: iteration 2 loss 2.4\n"  # 6
    b"[rank1]: [2024-03-14 03:22:17,123] RuntimeError: CUDA error: an illegal memory access was encountered\n"  # 7
    b"[rank0]: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=18, OpType=ALLREDUCE, "
    b"Timeout(ms)=600000)\n"  # 8
    b"[rank0]: iteration 3 loss 2.2\n"  # 9
)
ILLEGAL = "[rank1]: [2024-03-14 03:22:17,123] RuntimeError: CUDA error: an illegal memory access was encountered"
WATCHDOG = (
    "[rank0]: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=18, OpType=ALLREDUCE, "
    "Timeout(ms)=600000)"
)


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _job(tmp_path: Path, files: dict[str, bytes]) -> list[Source]:
    for rel, data in files.items():
        _write(tmp_path / "job" / rel, data)
    return discover([str(tmp_path / "job")]).sources


def _hits(fs: FileScan) -> list[tuple[str, int, str | None, int | None, dict[str, str]]]:
    return [(h.rule_id, h.ref.line, h.ref.node, h.ref.rank, h.captures) for h in fs.hits]


def _templates(fs: FileScan) -> list[tuple[str, int | None, int, int, int, list[str]]]:
    return [(t.template, t.rank, t.count, t.first.line, t.last.line, t.rule_ids) for t in fs.templates]


def _comparable(scans: list[FileScan]) -> list[dict]:
    return [s.model_dump(exclude={"seconds"}) for s in scans]


def test_multi_rank_file(tmp_path: Path) -> None:
    [src] = _job(tmp_path, {"node03/stdout.log": LOG})
    fs = FileScanner(RULES).scan(src)

    assert (fs.file, fs.node, fs.rank, fs.lines, fs.bytes, fs.hits_dropped) == (
        "node03/stdout.log",
        "node03",
        None,
        9,
        len(LOG),
        0,
    )
    assert _hits(fs) == [
        ("ckpt.saved", 4, "node03", 0, {"iteration": "1"}),
        ("cuda.illegal_access", 7, "node03", 1, {}),
        ("nccl.watchdog", 8, "node03", 0, {"seq": "18", "op": "ALLREDUCE"}),
    ]
    illegal = fs.hits[1]
    assert (illegal.failure_class.value, illegal.action.value, illegal.role.value, illegal.priority) == (
        "cuda_error",
        "retry",
        "root_cause",
        80,
    )
    assert illegal.stage is not None and illegal.stage.value == "training"
    assert illegal.ref.text == ILLEGAL
    assert illegal.ref.time == datetime(2024, 3, 14, 3, 22, 17, 123000)
    assert fs.hits[2].ref.text == WATCHDOG
    assert fs.hits[2].ref.time is None

    assert _templates(fs) == [
        ("job starting on <NUM> ranks", None, 1, 1, 1, []),
        ("iteration <NUM> loss <NUM>", 0, 3, 2, 9, []),
        ("iteration <NUM> loss <NUM>", 1, 1, 3, 3, []),
        ("successfully saved checkpoint at iteration <NUM> to <PATH>", 0, 1, 4, 4, ["ckpt.saved"]),
        (
            "[<NUM>-<NUM>-<NUM> <NUM>:<NUM>:<NUM>] RuntimeError: CUDA error: an illegal memory access was encountered",
            1,
            1,
            7,
            7,
            ["cuda.illegal_access"],
        ),
        (
            "[Rank <RANK>] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=<NUM>, OpType=ALLREDUCE, "
            "Timeout(ms)=<NUM>)",
            0,
            1,
            8,
            8,
            ["nccl.watchdog"],
        ),
    ]
    iteration0 = fs.templates[1]
    assert (iteration0.first.text, iteration0.last.text) == (
        "[rank0]: iteration 1 loss 2.5",
        "[rank0]: iteration 3 loss 2.2",
    )
    assert (iteration0.node, iteration0.first.rank, iteration0.last.node) == ("node03", 0, "node03")
    # Template ids are by value: the two ranks' iteration templates share one.
    assert fs.templates[1].template_id == fs.templates[2].template_id
    assert len({t.template_id for t in fs.templates}) == 5


def test_rank_from_the_file_name_when_lines_have_none(tmp_path: Path) -> None:
    log = b"iteration 1 loss 2.5\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
    [src] = _job(tmp_path, {"gpu-node-017/rank_5.log": log})
    fs = FileScanner(RULES).scan(src)
    assert (fs.node, fs.rank) == ("gpu-node-017", 5)
    assert _hits(fs) == [("cuda.illegal_access", 2, "gpu-node-017", 5, {})]
    assert [(t.rank, t.node, t.count) for t in fs.templates] == [(5, "gpu-node-017", 1), (5, "gpu-node-017", 1)]


def test_crlf_file_scans_like_lf(tmp_path: Path) -> None:
    lf, crlf = _job(tmp_path, {"a_lf.log": LOG, "b_crlf.log": LOG.replace(b"\n", b"\r\n")})
    scanner = FileScanner(RULES)
    one, two = scanner.scan(lf), scanner.scan(crlf)
    assert _hits(one) == _hits(two)
    assert [h.ref.text for h in two.hits] == [h.ref.text for h in one.hits]
    assert _templates(one) == _templates(two)
    assert [t.first.text for t in two.templates] == [t.first.text for t in one.templates]
    assert two.bytes == one.bytes + 9


@pytest.mark.parametrize("block_size", [1, 7, 50, 333])
def test_small_blocks_give_the_same_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_size: int) -> None:
    # Without the banner: whether a file has rank prefixes is decided on its first block alone.
    [src] = _job(tmp_path, {"node03/stdout.log": LOG.split(b"\n", 1)[1] * 3})
    whole = FileScanner(RULES).scan(src)
    monkeypatch.setattr(scan_module, "read_blocks", functools.partial(sources.read_blocks, block_size=block_size))
    pieces = FileScanner(RULES).scan(src)
    assert _comparable([pieces]) == _comparable([whole])
    assert [h.ref.line for h in whole.hits] == [3, 6, 7, 11, 14, 15, 19, 22, 23]
    assert [(t.rank, t.count) for t in whole.templates] == [(0, 9), (1, 3), (0, 3), (1, 3), (0, 3)]


def test_rank_prefixes_are_looked_for_in_the_first_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [src] = _job(tmp_path, {"node03/stdout.log": LOG})
    # A first block holding only the banner: the file is taken as unprefixed, templates are not split by rank.
    monkeypatch.setattr(scan_module, "read_blocks", functools.partial(sources.read_blocks, block_size=24))
    fs = FileScanner(RULES).scan(src)
    assert [(t.rank, t.count) for t in fs.templates][:2] == [(None, 1), (None, 4)]
    assert [h.ref.rank for h in fs.hits] == [0, 1, 0]  # hits still read the rank off their own line


def test_lines_past_a_rules_cap_are_not_confirmed_in_re2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warning printed on every step costs a Hyperscan match, not an RE2 search and a record."""
    error = b"RuntimeError: CUDA error: an illegal memory access was encountered\n"
    [src] = _job(tmp_path, {"out.log": (b"[rank0]: " + error) * 200})
    scanner = FileScanner(RULES)
    confirmed: list[int] = []
    confirm = scanner.filter.confirm
    monkeypatch.setattr(scanner.filter, "confirm", lambda i, *a: confirmed.append(i) or confirm(i, *a))
    fs = scanner.scan(src)
    assert len(fs.hits) == MAX_HITS_PER_RULE_RANK and fs.hits_dropped == 200 - MAX_HITS_PER_RULE_RANK
    assert len(confirmed) == MAX_HITS_PER_RULE_RANK


def test_hits_beyond_the_per_rule_rank_cap_are_counted_not_kept(tmp_path: Path) -> None:
    error = b"RuntimeError: CUDA error: an illegal memory access was encountered\n"
    log = b"".join([b"[rank0]: " + error] * 8 + [b"[rank0]: ok\n"] + [b"[rank1]: " + error] * 3)
    [src] = _job(tmp_path, {"out.log": log})
    fs = FileScanner(RULES).scan(src)
    assert MAX_HITS_PER_RULE_RANK == 5
    assert [(h.ref.rank, h.ref.line) for h in fs.hits] == [
        (0, 1),
        (0, 2),
        (0, 3),
        (0, 4),
        (0, 5),
        (1, 10),
        (1, 11),
        (1, 12),
    ]
    assert fs.hits_dropped == 3
    # Templates still count every line.
    assert [(t.rank, t.count, t.first.line, t.last.line) for t in fs.templates] == [
        (0, 8, 1, 8),
        (0, 1, 9, 9),
        (1, 3, 10, 12),
    ]


def test_per_rule_cap_across_ranks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_module, "MAX_HITS_PER_RULE", 6)
    error = b"RuntimeError: CUDA error: an illegal memory access was encountered\n"
    log = b"".join(b"[rank%d]: " % r + error for r in range(11)) + b"[rank0]: iteration 4 loss 1\n"
    sources_ = _job(tmp_path, {"a.log": log, "b.log": log})
    scanner = FileScanner(RULES)
    first, second = scanner.scan(sources_[0]), scanner.scan(sources_[1])
    assert [h.ref.rank for h in first.hits] == [0, 1, 2, 3, 4, 5]
    assert first.hits_dropped == 5
    # The caps are per file: the next file scanned by the same scanner starts afresh.
    assert (_hits(second), second.hits_dropped) == (_hits(first), 5)


def test_scan_sources_keeps_input_order(tmp_path: Path) -> None:
    files = {
        "node01/out.log": LOG,
        "node02/out.log": b"[rank2]: iteration 1 loss 3.0\n",
        "node03/out.log": LOG * 4,
        "node04/out.log": b"",
    }
    srcs = _job(tmp_path, files)
    shuffled = [srcs[2], srcs[0], srcs[3], srcs[1]]
    scans = scan_sources(shuffled, RULES, workers=1)
    assert [s.file for s in scans] == ["node03/out.log", "node01/out.log", "node04/out.log", "node02/out.log"]
    assert [(s.node, s.lines, len(s.hits)) for s in scans] == [
        ("node03", 36, 12),
        ("node01", 9, 3),
        ("node04", 0, 0),
        ("node02", 1, 0),
    ]


def test_no_sources() -> None:
    assert scan_sources([], RULES, workers=4) == []


def test_non_utf8_hit_line(tmp_path: Path) -> None:
    log = b"[rank2]: caf\xe9 RuntimeError: CUDA error: an illegal memory access was encountered \xff\n"
    [src] = _job(tmp_path, {"x.log": log * 2})
    fs = FileScanner(RULES).scan(src)
    assert [(h.ref.line, h.ref.rank, h.ref.text) for h in fs.hits] == [
        (n, 2, "[rank2]: caf\ufffd RuntimeError: CUDA error: an illegal memory access was encountered \ufffd")
        for n in (1, 2)
    ]
    assert [(t.template, t.count, t.rule_ids) for t in fs.templates] == [
        (
            "caf\ufffd RuntimeError: CUDA error: an illegal memory access was encountered \ufffd",
            2,
            ["cuda.illegal_access"],
        ),
    ]


def _parallel_job(tmp_path: Path) -> list[Source]:
    files: dict[str, bytes] = {}
    for node in range(5):
        lines = []
        for i in range(300 * (node + 1)):
            rank = node * 2 + i % 2
            lines.append(b"[rank%d]: iteration %d loss %.3f\n" % (rank, i, 3 - i / 1000))
            if i % 97 == 5:
                saved = b"[rank%d]: successfully saved checkpoint at iteration %d to /ckpt/n%d\n"
                lines.append(saved % (rank, i, node))
        lines.append(b"[rank%d]: RuntimeError: CUDA error: an illegal memory access was encountered\n" % (node * 2))
        files[f"node{node:02d}/stdout.log"] = b"".join(lines)
    return _job(tmp_path, files)


def test_parallel_scan_matches_serial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    srcs = _parallel_job(tmp_path)
    serial = scan_sources(srcs, RULES, workers=1)

    groups_seen: list[list[list[str]]] = []
    real_balance = scan_module._balance

    def spy(sources_: list[Source], workers: int) -> list[list[Source]]:
        groups = real_balance(sources_, workers)
        groups_seen.append([[s.display for s in g] for g in groups])
        return groups

    monkeypatch.setattr(scan_module, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(scan_module, "_balance", spy)
    parallel = scan_sources(srcs, RULES, workers=2)

    assert groups_seen == [  # a small job: as many batches as processes (two workers and this one)
        [
            ["node04/stdout.log"],
            ["node03/stdout.log", "node00/stdout.log"],
            ["node02/stdout.log", "node01/stdout.log"],
        ]
    ]
    assert [s.file for s in parallel] == [s.display for s in srcs]
    assert _comparable(parallel) == _comparable(serial)
    # Checkpoint lines every 97 lines, alternating ranks: context lines are not capped per rank (they map
    # ranks to hosts), so every one is kept; one CUDA error each.
    assert [(len(s.hits), s.hits_dropped) for s in serial] == [(5, 0), (8, 0), (11, 0), (14, 0), (17, 0)]
    assert [sum(t.count for t in s.templates) for s in serial] == [s.lines for s in serial]


def test_stdin_keeps_the_scan_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class NoPool:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("a process pool cannot read this process's stdin")

    monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=io.BytesIO(LOG)))
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(scan_module, "worker_pool", NoPool)
    log = _write(tmp_path / "a.log", LOG)
    other = _write(tmp_path / "b.log", LOG)
    scans = scan_sources(discover([str(log), "-", str(other)]).sources, RULES, workers=4)
    assert [s.file for s in scans] == [str(log), "<stdin>", str(other)]
    assert [len(s.hits) for s in scans] == [3, 3, 3]


@pytest.mark.parametrize(
    ("sizes", "workers", "groups"),
    [
        ([10, 1, 7, 3, 4], 2, [["f0", "f3"], ["f2", "f4", "f1"]]),
        ([5, 5, 5], 8, [["f0"], ["f1"], ["f2"]]),
        ([1, 2, 3, 4], 1, [["f3", "f2", "f1", "f0"]]),
    ],
)
def test_balance_largest_first_into_the_lightest_group(sizes: list[int], workers: int, groups: list[list[str]]) -> None:
    srcs = [Source(display=f"f{i}", path=Path(f"/x/f{i}"), size=size) for i, size in enumerate(sizes)]
    assert [[s.display for s in g] for g in scan_module._balance(srcs, workers)] == groups


def test_a_file_costs_more_than_its_bytes_so_many_small_files_are_spread_out() -> None:
    big = [Source(display=f"big{i}", path=Path(f"/x/big{i}"), size=400_000) for i in range(2)]
    small = [Source(display=f"small{i}", path=Path(f"/x/small{i}"), size=4_000) for i in range(12)]
    groups = scan_module._balance(big + small, 3)
    # By bytes alone all 12 small files (48 kB) would go to the third group, beside 400 kB in each of the others;
    # each file's fixed cost makes eight of them as much work as a big file and two small ones.
    assert sorted(len(g) for g in groups) == [3, 3, 8]


def test_a_parallel_job_goes_in_batches_the_workers_and_this_process_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srcs = _many_small_files(tmp_path, 40)
    serial = scan_sources(srcs, RULES, workers=1)
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(scan_module, "BATCH_BYTES", 4 * scan_module.FILE_COST_BYTES)
    here: list[str] = []
    real_group = scan_module._scan_group

    def spy(rules: list[Rule], batch: list[Source], *args: object, **kwargs: object) -> list[FileScan]:
        here.extend(s.display for s in batch)
        return real_group(rules, batch, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scan_module, "_scan_group", spy)  # `here` fills in this process: a worker has its own copy
    fractions: list[float] = []
    parallel = scan_sources(srcs, RULES, workers=2, progress=fractions.append)
    assert len(here) < len(srcs)  # the workers scanned some batches, and this process none twice
    assert len(set(here)) == len(here)
    assert [s.file for s in parallel] == [s.display for s in srcs]
    assert _comparable(parallel) == _comparable(serial)
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and fractions[-2] > 0.5


def test_with_as_many_batches_as_processes_this_process_scans_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch queued for a busy worker cannot be taken back: were all three handed out, this process would wait
    while a worker scanned two (a big file split in three ran 1.7x slower)."""
    srcs = _parallel_job(tmp_path)[:3]
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_BYTES", 1)
    here: list[str] = []
    real_group = scan_module._scan_group

    def spy(rules: list[Rule], batch: list[Source], *args: object, **kwargs: object) -> list[FileScan]:
        here.extend(s.display for s in batch)
        return real_group(rules, batch, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scan_module, "_scan_group", spy)
    scans = scan_sources(srcs, RULES, workers=2)
    assert len(here) == 1 and [s.file for s in scans] == [s.display for s in srcs]


def test_a_large_file_is_split_scanned_in_parallel_and_merged_like_a_serial_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = (
        "".join(
            f"[rank{i % 4}]: iteration {i} loss 2.{i % 7}\n"
            + ("[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\n" if i % 997 == 0 else "")
            for i in range(6000)
        )
        + "[rank1]: successfully saved checkpoint at iteration    6000 to /ckpt\n"
    )
    [src] = _job(tmp_path, {"node01/big.log": body.encode()})
    serial = scan_sources([src], RULES, workers=1)
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(scan_module, "SPLIT_MIN_BYTES", 1)
    parallel = scan_sources([src], RULES, workers=3)

    (a,), (b,) = serial, parallel
    assert (b.file, b.lines, b.bytes) == (a.file, a.lines, a.bytes) == ("node01/big.log", 6008, len(body))
    assert _hits(b) == _hits(a)
    key = lambda t: (t.template_id, t.rank)  # noqa: E731
    assert {key(t): (t.count, t.first.line, t.last.line, t.new) for t in b.templates} == {
        key(t): (t.count, t.first.line, t.last.line, t.new) for t in a.templates
    }


def test_split_cuts_on_line_starts_and_covers_the_file(tmp_path: Path) -> None:
    from crashcart.parsers.sources import read_blocks, split

    text = "".join(f"line {i} " + "x" * (i % 13) + "\n" for i in range(500))
    [src] = _job(tmp_path, {"a.log": text.encode()})
    parts = split(src, 4)
    assert len(parts) == 4 and parts[0].start == 0 and parts[-1].end == len(text)
    assert all(text[p.start - 1] == "\n" for p in parts[1:])
    assert "".join(b"".join(read_blocks(p, block_size=64)).decode() for p in parts) == text
    assert split(src, 1) == [src]


def test_triage_killed_with_sigkill_leaves_no_scan_worker(tmp_path: Path) -> None:
    """A multi-file job over PARALLEL_MIN_BYTES is scanned by worker processes; kill -9 of triage ends them too."""
    from proctree import kill_when

    from crashcart.evals.generator import JobSpec, generate_job

    generate_job(tmp_path / "job", JobSpec(nodes=4, total_mb=80, scenario="xid79", seed=3))
    cmd = [str(Path(sys.executable).with_name("crashcart")), "triage", str(tmp_path / "job" / "logs")]
    cmd += ["--workers", "2", "--no-memory", "--format", "json"]
    recorded, left = kill_when(cmd, lambda pid, members: sum(1 for p in members.values() if p == pid) >= 2)
    assert len(recorded) >= 3, recorded  # triage and its two scan workers
    assert left == [], f"still running after triage was killed: {left} of {recorded}"


@pytest.mark.parametrize("block_size", [7, 64, 4096])
def test_line_numbers_stay_true_after_a_line_over_max_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_size: int
) -> None:
    # A line longer than MAX_LINE (a dumped tensor, say) counted as two lines once, and every line after it was
    # cited one line too far.
    monkeypatch.setattr(sources, "MAX_LINE", 256)  # longer than LOG's lines
    monkeypatch.setattr(scan_module, "read_blocks", functools.partial(sources.read_blocks, block_size=block_size))
    [src] = _job(tmp_path, {"r.log": b"x" * 3000 + b"\n" + LOG})
    [fs] = scan_sources([src], RULES, workers=1)
    assert fs.lines == 10
    assert [(h.rule_id, h.ref.line) for h in fs.hits] == [
        ("ckpt.saved", 5),
        ("cuda.illegal_access", 8),
        ("nccl.watchdog", 9),
    ]


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_a_truncated_file_keeps_its_hits_and_says_why_it_stopped(tmp_path: Path, kind: str) -> None:
    # Long enough for several zstd blocks: a block decodes only once all of it is there.
    body = b"".join(line[:-1] + b" %d\n" % i for i, line in enumerate(LOG.splitlines(keepends=True) * 4000))
    blob = gzip.compress(body) if kind == "gzip" else zstandard.ZstdCompressor().compress(body)
    [src] = _job(tmp_path, {"node03.log": blob[: len(blob) - 20]})
    [fs] = scan_sources([src], RULES, workers=1)
    assert fs.lines > 30_000 and {h.rule_id for h in fs.hits} == {"ckpt.saved", "cuda.illegal_access", "nccl.watchdog"}
    assert fs.problem is not None
    assert fs.problem.startswith(f"read {fs.lines:,} lines, then: ")
    assert "truncated" in fs.problem


def _many_small_files(tmp_path: Path, count: int) -> list[Source]:
    """`count` per-rank logs of a few lines each (the LOG above), one folder per node of eight ranks."""
    lines = LOG.splitlines(keepends=True)
    files = {f"node{i // 8:03d}/rank{i % 8}.log": b"".join(lines[i % 5 : i % 5 + 4]) for i in range(count)}
    return _job(tmp_path / str(count), files)


def _lines_run_in_scan_py(monkeypatch: pytest.MonkeyPatch, srcs: list[Source]) -> int:
    """How many Python lines of parsers/scan.py this process runs for a parallel scan of srcs (a count of work
    that does not depend on the machine's speed)."""
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_BYTES", 1)
    # As many batches as processes, so this process scans one of three whatever the count (else its share, and
    # so its lines, would follow how fast the workers handed theirs back).
    monkeypatch.setattr(scan_module, "BATCH_BYTES", 1 << 40)
    code_file, ran = scan_module.__file__, 0

    def trace(frame: types.FrameType, event: str, arg: object) -> object:
        nonlocal ran
        if frame.f_code.co_filename != code_file:
            return None
        if event == "line":
            ran += 1
        return trace

    sys.settrace(trace)
    try:
        scans = scan_sources(srcs, RULES, workers=2)
    finally:
        sys.settrace(None)
    assert [s.file for s in scans] == [s.display for s in srcs]
    return ran


def test_a_parallel_scan_of_many_files_does_linear_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Merging the parts once searched every part for each file: 20k files took 141 s in parallel, 5.3 s in one.
    small, large = (_lines_run_in_scan_py(monkeypatch, _many_small_files(tmp_path, n)) for n in (200, 400))
    assert large < 2.3 * small, (small, large)  # twice the files, about twice the work (quadratic: over 3x)


def test_a_scan_makes_no_garbage_collection(tmp_path: Path) -> None:
    """Millions of small records, none cyclic: a collection would walk them all again and find nothing."""
    srcs = _many_small_files(tmp_path, 400)
    passes: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.callbacks.append(count)
    try:
        scans = scan_sources(srcs, RULES, workers=1)
    finally:
        gc.callbacks.remove(count)
    assert sum(len(s.templates) for s in scans) > 1000
    assert len(passes) <= 1 and gc.isenabled()  # one pass at most, once the collector is back on


def test_gc_paused_leaves_a_disabled_collector_disabled() -> None:
    gc.disable()
    try:
        with scan_module.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_long_line_is_kept_to_its_head_with_its_line_number(tmp_path: Path) -> None:
    # PyTorch's load_state_dict error names every missing key on one line (torch/nn/modules/module.py).
    keys = ", ".join(f'"model.layers.{i}.self_attn.q_proj.weight"' for i in range(2000))
    long_line = f"[rank3]: \tMissing key(s) in state_dict: {keys}. "
    body = "[rank3]: RuntimeError: Error(s) in loading state_dict for GPTModel:\n" + long_line + "\n"
    [scan] = scan_sources(_job(tmp_path, {"node01/rank3.log": body.encode()}), RULES, workers=1)
    [stat] = [t for t in scan.templates if t.first.line == 2]
    assert stat.first.text == long_line[: scan_module.MAX_TEXT] and stat.first.rank == 3
    assert stat.last is stat.first  # a line seen once is one record


def test_one_stat_per_template_text_when_a_full_leaf_retired_a_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(templater_module, "LEAF_CLUSTERS", 4)
    lines = traceback_source_lines(1000, words=3)
    [scan] = scan_sources(_job(tmp_path, {"node01/rank0.log": ("\n".join(lines) + "\n").encode()}), RULES)
    keys = [(t.template_id, t.rank) for t in scan.templates]
    assert len(keys) == len(set(keys))
    assert sum(t.count for t in scan.templates) == scan.lines == len(lines)


def test_records_made_in_a_pause_leave_it_in_the_oldest_generation_without_a_walk() -> None:
    with scan_module.gc_paused():
        records = [[i] for i in range(50_000)]
    young = gc.get_objects(generation=0)
    assert not any(r is records[0] or r is records[-1] for r in young)  # promoted, not left for the next pass
    assert any(r is records[0] for r in gc.get_objects(generation=2)) and gc.get_freeze_count() == 0


def test_objects_someone_else_froze_stay_frozen() -> None:
    kept = [object()]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with scan_module.gc_paused():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
    assert kept


def test_a_line_read_again_is_the_same_reading_and_not_read_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = scan_module.LineReader()
    where = scan_module.attribution_from_path("/job/rank_3.out")
    first = reader.ref(ILLEGAL, 7, where, "/job/rank_3.out", 2024)
    reads: list[str] = []
    monkeypatch.setattr(scan_module, "attribute_line", lambda text: reads.append(text))
    monkeypatch.setattr(scan_module, "parse_timestamp", lambda text, year: reads.append(text))
    again = reader.ref(ILLEGAL, 9, where, "/other/rank_3.out", 2024)
    assert not reads  # remembered by text: another file's copy of the line costs no regex
    assert (again.node, again.rank, again.time) == (first.node, 1, datetime(2024, 3, 14, 3, 22, 17, 123000))
    assert (again.file, again.line) == ("/other/rank_3.out", 9)


def test_a_line_longer_than_evidence_keeps_is_read_afresh_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = scan_module.LineReader()
    long = ILLEGAL + " x" * scan_module.MAX_TEXT
    reader.owner(long)
    monkeypatch.setattr(scan_module, "attribute_line", lambda text: scan_module.Attribution(rank=5))
    assert reader.owner(long).rank == 5  # not held: read again


def test_the_records_a_scan_makes_unvalidated_are_what_validation_makes(tmp_path: Path) -> None:
    [src] = _job(tmp_path, {"node03/stdout.log": LOG})
    scan = FileScanner(RULES).scan(src)
    assert scan.hits and scan.templates and scan.metrics
    assert FileScan.model_validate(scan.model_dump()) == scan  # every field there, each of its declared type


def test_a_rule_with_all_its_ranks_settled_stops_reading_ranks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A message printed on every step by every rank: past MAX_SETTLED_PER_RULE turned-away lines the rest are
    counted without reading their printer; the ranks seen before then keep their hits."""
    error = b"RuntimeError: CUDA error: an illegal memory access was encountered\n"
    log = b"".join(b"[rank%d]: " % (i % 2) + error for i in range(100)) + b"[rank2]: " + error
    [src] = _job(tmp_path, {"out.log": log})

    def scan(bound: int) -> tuple[FileScan, int]:
        monkeypatch.setattr(scan_module, "MAX_SETTLED_PER_RULE", bound)
        scanner, read = FileScanner(RULES), []
        owner = scanner.lines.owner
        monkeypatch.setattr(scanner.lines, "owner", lambda text: read.append(text) or owner(text))
        return scanner.scan(src), len(read)

    (bounded, reads), (unbounded, all_reads) = scan(20), scan(10**9)
    assert [h.ref.rank for h in bounded.hits] == [0, 1] * MAX_HITS_PER_RULE_RANK
    assert bounded.hits_dropped == 101 - 2 * MAX_HITS_PER_RULE_RANK
    assert all_reads - reads == 101 - (2 * MAX_HITS_PER_RULE_RANK + 20)  # only the lines before the bound are read
    assert [h.ref.rank for h in unbounded.hits][-1] == 2  # the price: a rank first seen after it keeps no hit

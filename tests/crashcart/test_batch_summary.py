"""crashcart/batch/summary.py and render.py: figures checked against hand-computed expectations."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from crashcart.agent.models import Diagnosis
from crashcart.batch.models import BatchJob, BatchResult
from crashcart.batch.render import CSV_COLUMNS, BatchOutput, to_csv, to_json, to_markdown, to_table
from crashcart.batch.summary import summarise
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, FailureClass

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _ok(
    job_id: str,
    cls: str,
    nodes: list[str],
    gpus: int,
    elapsed_s: float,
    by: str = "rules",
    at: datetime = T0,
    size: int = 1_000_000,
) -> BatchResult:
    fc = FailureClass(cls)
    d = Diagnosis(
        failure_class=fc, action=DEFAULT_ACTION[fc], confidence=0.9, summary=cls, faulty_nodes=nodes, decided_by=by
    )
    return BatchResult(
        job=BatchJob(job_id=job_id, gpus=gpus, elapsed_s=elapsed_s),
        status="ok",
        diagnosis=d,
        bytes=size,
        seconds=2.0,
        triaged_at=at,
    )


# job  class            faulty   GPUs x hours = GPU-hours   decided by
# a    gpu_hardware     node07   64 x 1.0    = 64           rules
# b    network          node07   32 x 0.5    = 16           rules
# c    code_bug         node07    8 x 1.0    =  8           rules   (not infrastructure: not an offender's job)
# d    gpu_oom          node03    8 x 0.5    =  4           rules
# e    gpu_hardware     node03   16 x 0.25   =  4           rules   (node03: one infrastructure job only)
# f    unknown          -         8 x 0.125  =  1           none -> unknown
# g    loss_divergence  -         8 x 1.0    =  8           memory
# h    error                     16 x 1.0    = 16 (totals only)
# i    no_logs                    0
RESULTS = [
    _ok("a", "gpu_hardware", ["node07"], 64, 3600),
    _ok("b", "network", ["node07"], 32, 1800),
    _ok("c", "code_bug", ["node07"], 8, 3600),
    _ok("d", "gpu_oom", ["node03"], 8, 1800),
    _ok("e", "gpu_hardware", ["node03"], 16, 900, at=T0 - timedelta(days=1)),
    _ok("f", "unknown", [], 8, 450, by="none", at=T0 - timedelta(days=1)),
    _ok("g", "loss_divergence", [], 8, 3600, by="memory"),
    BatchResult(
        job=BatchJob(job_id="h", gpus=16, elapsed_s=3600),
        status="error",
        error="h.log.gz: corrupt gzip",
        bytes=500_000,
        seconds=0.5,
        triaged_at=T0,
    ),
    BatchResult(job=BatchJob(job_id="i"), status="no_logs", error="no log files", triaged_at=T0),
]
TRIAGED_HOURS = 64 + 16 + 8 + 4 + 4 + 1 + 8  # 105


def test_classes_by_gpu_hours_with_shares() -> None:
    s = summarise(RESULTS)
    got = [(c.failure_class.value, c.jobs, c.gpu_hours) for c in s.classes]
    assert got == [
        ("gpu_hardware", 2, 68.0),
        ("network", 1, 16.0),
        ("code_bug", 1, 8.0),
        ("loss_divergence", 1, 8.0),
        ("gpu_oom", 1, 4.0),
        ("unknown", 1, 1.0),
    ]
    hw = s.classes[0]
    assert hw.job_share == round(2 / 7, 4) and hw.gpu_hour_share == round(68 / TRIAGED_HOURS, 4)
    assert hw.infrastructure and not s.classes[2].infrastructure
    assert sum(c.jobs for c in s.classes) == 7


def test_infrastructure_weighs_more_by_gpu_hours_than_by_count() -> None:
    s = summarise(RESULTS)
    assert (s.infrastructure.jobs, s.infrastructure.gpu_hours) == (3, 84.0)  # a, b, e
    assert s.infrastructure.job_share == round(3 / 7, 4) and s.infrastructure.gpu_hour_share == 0.8
    assert (s.other.jobs, s.other.gpu_hours, s.other.gpu_hour_share) == (4, 21.0, 0.2)
    assert [c.value for c in s.infrastructure_classes] == ["gpu_hardware", "network", "node_failure", "storage"]


def test_deciders_map_none_to_unknown() -> None:
    s = summarise(RESULTS)
    assert [(d.decided_by, d.jobs, d.share) for d in s.deciders] == [
        ("rules", 5, round(5 / 7, 4)),
        ("structure", 0, 0.0),
        ("memory", 1, round(1 / 7, 4)),
        ("llm", 0, 0.0),
        ("unknown", 1, round(1 / 7, 4)),
    ]


def test_a_job_decided_from_its_structure_counts_as_structure() -> None:
    first = RESULTS[0]
    assert first.diagnosis is not None
    structural = first.model_copy(update={"diagnosis": first.diagnosis.model_copy(update={"decided_by": "structure"})})
    s = summarise([structural, *RESULTS[1:]])
    assert [(d.decided_by, d.jobs) for d in s.deciders][:2] == [("rules", 4), ("structure", 1)]


def test_repeat_offenders_count_infrastructure_jobs_only() -> None:
    s = summarise(RESULTS)
    assert len(s.offenders) == 1  # node07: a and b (c is a code bug); node03: one hardware job only
    o = s.offenders[0]
    assert (o.node, o.jobs, o.job_ids, o.gpu_hours) == ("node07", 2, ["a", "b"], 80.0)
    assert [c.value for c in o.classes] == ["gpu_hardware", "network"]
    assert o.drain == (
        "scontrol update NodeName=node07 State=DRAIN Reason='crashcart: 2 failed jobs (gpu_hardware, network)'"
    )


def test_offender_node_names_are_shell_quoted() -> None:
    s = summarise([_ok(x, "network", ["node 1;rm"], 8, 3600) for x in "xy"])
    assert "NodeName='node 1;rm' State=DRAIN" in s.offenders[0].drain


def test_totals_and_throughput_of_the_new_work_only() -> None:
    s = summarise(RESULTS, since=T0, wall_s=30.0)
    t = s.totals
    assert (t.jobs, t.triaged, t.errors, t.no_logs) == (9, 7, 1, 1)
    assert t.gpu_hours == TRIAGED_HOURS + 16
    assert (t.new_jobs, t.reused) == (7, 2)  # e and f were triaged a day earlier
    assert t.new_bytes == 5 * 1_000_000 + 500_000
    assert t.jobs_per_min == 14.0 and t.mb_per_s == round(5.5 / 30, 1)
    assert [(p.job_id, p.status) for p in s.problems] == [("h", "error"), ("i", "no_logs")]


def test_throughput_without_a_wall_time_uses_the_summed_job_seconds() -> None:
    t = summarise(RESULTS).totals
    assert t.new_jobs == 9 and t.wall_s == 7 * 2.0 + 0.5
    assert t.jobs_per_min == round(9 / 14.5 * 60, 1)


def test_empty_batch_has_no_division_by_zero() -> None:
    s = summarise([])
    assert s.classes == [] and s.offenders == [] and s.infrastructure.gpu_hour_share == 0.0
    assert s.totals.jobs_per_min == 0.0 and all(d.jobs == 0 for d in s.deciders)
    assert "0 jobs" in to_markdown(s)


def test_csv_json_and_markdown_agree() -> None:
    s = summarise(RESULTS, since=T0, wall_s=30.0)
    rows = list(csv.DictReader(io.StringIO(to_csv(RESULTS))))
    assert list(rows[0]) == CSV_COLUMNS and len(rows) == 9
    assert rows[0] == {
        "job_id": "a",
        "state": "",
        "class": "gpu_hardware",
        "action": "drain_node_and_retry",
        "decided_by": "rules",
        "faulty_nodes": "node07",
        "gpus": "64",
        "elapsed_s": "3600.0",
        "gpu_hours": "64.0",
        "status": "ok",
        "error": "",
    }
    assert rows[5]["decided_by"] == "unknown" and rows[7]["status"] == "error" and "gzip" in rows[7]["error"]
    data = json.loads(to_json(s, RESULTS))
    BatchOutput.model_validate(data)  # the JSON contract round-trips
    assert [r["job"]["job_id"] for r in data["results"]] == [r["job_id"] for r in rows]
    csv_hours: dict[str, float] = {}
    for r in rows:
        if r["status"] == "ok":
            csv_hours[r["class"]] = csv_hours.get(r["class"], 0.0) + float(r["gpu_hours"])
    assert csv_hours == {c["failure_class"]: c["gpu_hours"] for c in data["summary"]["classes"]}
    md = to_markdown(s)
    assert "| gpu_hardware | 2 | 28.6% | 68.0 | 64.8% | yes |" in md
    assert "| infrastructure | 3 | 42.9% | 84.0 | 80.0% |" in md
    assert "| node07 | 2 | gpu_hardware, network | 80.0 | `scontrol update NodeName=node07" in md
    assert "| h | error | h.log.gz: corrupt gzip |" in md


@pytest.mark.parametrize("width", [100, 200])
def test_terminal_table_shows_every_section(width: int) -> None:
    console = Console(record=True, width=width)
    console.print(to_table(summarise(RESULTS, since=T0, wall_s=30.0)))
    text = console.export_text()
    for needle in ("14.0 jobs/min", "gpu_hardware", "infrastructure", "memory", "node07", "State=DRAIN", "no_logs"):
        assert needle in text


def test_log_text_and_file_names_reach_the_terminal_and_markdown_escaped() -> None:
    # a node name as `Node <name> not responding` captures it (signatures/node.yaml), colour codes and all
    node = "\x1b[1mnode07\x1b[0m"
    odd = [
        _ok("a", "node_failure", [node], 8, 3600),
        _ok("b", "node_failure", [node], 8, 3600),
        # folders `x[` and `]`: rich markup raises on `[/]`; a file name may hold any byte but /
        BatchResult(job=BatchJob(job_id="x[/]"), status="error", error="x[/]/a\rb.log: is a binary file"),
        BatchResult(job=BatchJob(job_id="runs/\x1b]0;pwned\x07"), status="no_logs", error="no log files"),
    ]
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(to_table(summarise(odd)))
    md = to_markdown(summarise(odd))
    for text in (out.getvalue(), md):
        assert not any(c in text for c in "\x1b\x07\r"), repr(text)
        assert "runs/\\x1b]0;pwned\\x07" in text and "x[/]/a\\rb.log" in text
        assert "node07" in text and "[1m" not in text  # colour codes dropped


def test_a_rank_standing_in_for_a_host_is_no_repeat_offender() -> None:
    ranked = [
        r.model_copy(update={"diagnosis": r.diagnosis.model_copy(update={"faulty_nodes": ["rank 3"]})})
        for r in RESULTS
        if r.diagnosis is not None
    ]
    assert all(o.node != "rank 3" for o in summarise(ranked).offenders)

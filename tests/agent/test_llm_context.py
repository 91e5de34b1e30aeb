"""The model's context: within its token budget, every shown log line citeable, the node list known."""

from __future__ import annotations

import pytest

from crashcart.agent.events import build_events
from crashcart.agent.llm_answer import AnswerError, parse_answer
from crashcart.agent.llm_context import CHARS_PER_TOKEN, build_context
from crashcart.agent.salience import mark_rare
from crashcart.api import triage
from crashcart.evals.generator import JobSpec, generate_job
from crashcart.knowledge.rules import load_rules
from crashcart.parsers.scan import scan_sources
from crashcart.parsers.sources import discover


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("job")
    generate_job(out, JobSpec(nodes=4, total_mb=1, scenario="ib_link", fault_node=2, seed=5))
    scans = scan_sources(discover([str(out / "logs")]).sources, load_rules(), workers=1)
    events = build_events(scans)
    return scans, events, triage([out / "logs"]).diagnosis


@pytest.mark.parametrize("budget", [1500, 6000, 20000])
def test_context_fits_its_budget_and_shows_what_matters_first(job, budget: int) -> None:
    scans, events, diagnosis = job
    ctx = build_context(scans, events, diagnosis, budget)
    assert ctx.tokens <= budget * 1.05 + len(ctx.sections["taxonomy"]) // CHARS_PER_TOKEN
    assert ctx.sections["findings"].startswith("rules say: network")
    assert "status=12" in ctx.sections["findings"]  # the strongest rule hit always makes it in
    assert ctx.nodes == {"node00", "node01", "node02", "node03"}
    for (file, line), text in ctx.citeable.items():
        assert f"[{file}:{line}]" in "\n".join(ctx.sections.values())
        assert text[:50] in "\n".join(ctx.sections.values())


def test_a_bigger_budget_shows_more_lines(job) -> None:
    scans, events, diagnosis = job
    assert len(build_context(scans, events, diagnosis, 20000).citeable) > len(
        build_context(scans, events, diagnosis, 1500).citeable
    )


# NVlabs/wetectron#83: a tqdm bar, then a custom logger's epoch summary with a NaN loss that no error-like word marks
SMALL = [
    "100%|██████████| 12328/12328 [1:19:17<00:00,  2.59it/s]",
    "Epoch : 2 finished. Training Loss: nan. Validation Loss: nan",
]


def test_a_log_that_fits_is_shown_whole_and_every_line_can_be_cited(tmp_path) -> None:
    (tmp_path / "train.log").write_text("\n".join(SMALL) + "\n")
    sources = discover([str(tmp_path / "train.log")]).sources
    scans = scan_sources(sources, load_rules(), workers=1)
    events = build_events(scans)
    diagnosis = triage([str(tmp_path / "train.log")]).diagnosis
    ctx = build_context(scans, events, diagnosis, 12000, sources)
    assert ctx.citeable[("train.log", 2)] == SMALL[1] and ctx.citeable[("train.log", 1)] == SMALL[0]
    assert "[train.log:2] " + SMALL[1] in ctx.sections["lines"]
    assert ctx.sections["templates"] == "(the whole log is shown above)"
    without = build_context(scans, events, diagnosis, 12000)  # no sources to read again: the usual sections
    assert without.sections["templates"] != "(the whole log is shown above)"


def test_a_job_bigger_than_the_budget_is_not_shown_whole(job, tmp_path) -> None:
    scans, events, diagnosis = job
    out = tmp_path / "again"
    generate_job(out, JobSpec(nodes=4, total_mb=1, scenario="ib_link", fault_node=2, seed=5))
    sources = discover([str(out / "logs")]).sources
    ctx = build_context(scans, events, diagnosis, 6000, sources)
    assert ctx.sections["templates"] != "(the whole log is shown above)"


def test_parse_answer_accepts_fenced_json_and_rejects_what_was_not_shown() -> None:
    reply = (
        'Here you go:\n```json\n{"failure_class": "network", "action": "drain_node_and_retry", '
        '"evidence": [{"file": "a.log", "line": 3}], "faulty_nodes": ["n1"], "rationale": "IB"}\n```'
    )
    answer = parse_answer(reply, {("a.log", 3)}, {"n1"})
    assert answer.failure_class.value == "network" and answer.faulty_nodes == ["n1"]
    with pytest.raises(AnswerError, match="a.log:3"):
        parse_answer(reply, {("a.log", 4)}, {"n1"})
    with pytest.raises(AnswerError, match="evidence"):
        parse_answer(reply.replace('[{"file": "a.log", "line": 3}]', "[]"), {("a.log", 3)}, {"n1"})


def test_the_same_line_from_many_ranks_is_shown_once_with_where_else(tmp_path) -> None:
    # Loghub's Zookeeper_2k.log: an error line no rule knows, printed alike on three nodes
    line = (
        "2015-07-29 19:04:30,989 - ERROR [LearnerHandler-/10.10.34.11:52265:LearnerHandler@562] - "
        "Unexpected exception causing shutdown while sock still open"
    )
    for node in ("node01", "node02", "node03"):
        (tmp_path / f"{node}.log").write_text(line + "\n")
    scans = scan_sources(discover([str(tmp_path)]).sources, load_rules(), workers=1)
    events = build_events(scans)
    ctx = build_context(scans, events, triage([str(tmp_path)]).diagnosis, 6000)
    shown = [row for row in ctx.sections["lines"].splitlines() if "Unexpected exception" in row]
    assert len(shown) == 1 and shown[0].endswith("(x3, also on node02, node03)")


def test_the_lines_where_progress_stopped_are_shown_though_no_error_word_marks_them(tmp_path) -> None:
    # HF Trainer progress, then a line no rule knows and no error word marks (Loghub's Zookeeper_2k.log), twice
    progress = [f"{{'loss': 2.{i}, 'learning_rate': 4.9e-05, 'epoch': 0.0{i}}}" for i in range(1, 9)]
    peer = "2015-07-29 17:41:44,747 - INFO  [main:QuorumPeerMain@127] - Starting quorum peer"
    again = peer.replace("17:41:44,747", "17:41:58,112")
    (tmp_path / "train.log").write_text("\n".join([*progress * 30, peer, again]) + "\n")
    (tmp_path / "other.log").write_text("\n".join(progress * 30) + "\n")
    scans = scan_sources(discover([str(tmp_path)]).sources, load_rules(), workers=1)
    mark_rare(scans)  # as the pipeline does before building events
    events = build_events(scans)
    ctx = build_context(scans, events, triage([str(tmp_path)]).diagnosis, 1500)  # no sources: not shown whole
    assert ("train.log", 241) in ctx.citeable  # the first line after progress stopped, not only the last line


def test_a_rules_line_alike_on_many_ranks_is_one_finding(tmp_path) -> None:
    # pytorch/pytorch#118369's watchdog line as three ranks print it (the rank and times differ)
    line = (
        "[E ProcessGroupNCCL.cpp:458] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, "
        "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 2562488{r} milliseconds before timing out."
    )
    for r in range(3):
        (tmp_path / f"rank{r}.log").write_text(line.format(r=r) + "\n")
    scans = scan_sources(discover([str(tmp_path)]).sources, load_rules(), workers=1)
    events = build_events(scans)
    ctx = build_context(scans, events, triage([str(tmp_path)]).diagnosis, 6000)
    shown = [row for row in ctx.sections["findings"].splitlines() if "Watchdog caught" in row]
    assert len(shown) == 1 and "alike on 2 more" in shown[0]


def test_a_long_decisive_line_is_shown_whole(tmp_path) -> None:
    """PyTorch's CUDA OOM message runs past 400 characters: the model (and whoever checks what it was shown) sees
    it whole, in the findings and among the lines, not its first half."""
    out = tmp_path / "job"
    job = generate_job(out, JobSpec(nodes=16, gpus_per_node=8, total_mb=20, scenario="gpu_oom", fault_node=5))
    [evidence] = job.evidence
    assert len(evidence) > 400
    sources = discover([str(out / "logs")]).sources
    scans = scan_sources(sources, load_rules(), workers=1)
    events = build_events(scans)
    ctx = build_context(scans, events, triage([out / "logs"]).diagnosis, 20000, sources)
    assert evidence in ctx.sections["findings"]
    assert any(evidence in text for text in ctx.citeable.values())

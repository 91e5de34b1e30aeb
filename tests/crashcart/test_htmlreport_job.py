"""crashcart/htmlreport/job.py: a job's page is drawn by a real Chromium (timeline, heatmap, evidence, tables),
holds no script and nothing fetched, escapes the logs' text, and stays small for a 1,000-node job."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from chromium import drawn, screenshot

import crashcart
from crashcart.agent.report import Report
from crashcart.evals.generator import JobSpec, generate_job
from crashcart.htmlreport.job import to_html

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "xid79-job" / "logs"


@pytest.fixture(scope="module")
def job16(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """A generated 16-node job whose node 7 lost a GPU (XID 79)."""
    out = tmp_path_factory.mktemp("job16")
    generate_job(out, JobSpec(nodes=16, gpus_per_node=8, total_mb=6, scenario="xid79", fault_node=7, seed=3))
    return crashcart.triage([str(out / "logs")], workers=1)


def test_a_16_node_jobs_page_is_drawn_by_chromium(job16: Report, tmp_path: Path) -> None:
    page = tmp_path / "job.html"
    page.write_text(to_html(job16), encoding="utf-8")
    seen = drawn(
        page,
        [
            "#verdict",
            "svg.timeline g.lane",
            "svg.timeline .mark",
            "svg.timeline .root_cause",
            "svg.timeline .symptom",
            "svg.timeline .progress",
            "svg.timeline line.failure",
            "svg.heatmap rect.cell",
            "#evidence pre",
            "#evidence pre .hit",
            "#heatmap table tbody tr",
            "#next li",
        ],
    )
    shot = screenshot(page, tmp_path / "job.png")
    print(f"screenshot of the 16-node job's report: {shot}")
    assert seen["scripts"] == 0 and seen["#verdict"] == 1
    # 16 lanes, those with the same events folded: node07's own lane, and at least one for the healthy nodes
    assert 2 <= seen["svg.timeline g.lane"] <= 16
    assert seen["svg.timeline .root_cause"] >= 1 and seen["svg.timeline .symptom"] >= 1
    assert seen["svg.timeline .progress"] >= 2 and seen["svg.timeline line.failure"] >= 1
    assert seen["svg.heatmap rect.cell"] >= 2 and seen["#heatmap table tbody tr"] >= 1
    # every evidence line shown (up to 12) in its context, the line itself marked
    shown = min(len(job16.diagnosis.evidence), 12)
    assert seen["#evidence pre"] == shown and seen["#evidence pre .hit"] == shown
    assert seen["#next li"] == len(job16.diagnosis.mitigation) > 0
    assert shot.stat().st_size > 20_000  # a blank page's PNG is a few KB


def test_the_page_names_the_verdict_and_folds_identical_lanes(job16: Report) -> None:
    text = to_html(job16)
    d = job16.diagnosis
    assert d.failure_class.value == "gpu_hardware" and d.faulty_nodes == ["node07"]
    assert ">gpu_hardware</span>" in text and "drain_node_and_retry" in text
    lanes = re.findall(r'<g class="lane">.*?<text [^>]*>([^<]*)', text)
    assert lanes[0] == "node07"  # the faulty node's lane first, never folded
    folded = sum(int(m) for m in re.findall(r"\+(\d+) alike", " ".join(lanes)))
    assert folded + len(set(lanes)) >= 16  # each lane drawn or counted in a "+N alike" (zoom repeats them)
    assert "folded into a lane with the same events" in text


def test_log_text_is_escaped_and_nothing_is_fetched() -> None:
    report = crashcart.triage([str(EXAMPLE)], workers=1)
    text = to_html(report)
    assert "<script" not in text and "http://" not in text.replace('"http://www.w3.org/2000/svg"', "")
    assert "https://" not in text and "src=" not in text
    # the templates' placeholders and the real lines' angle brackets arrive as text, not as tags
    assert "&lt;NUM&gt;" in text and "<NUM>" not in text
    tags = set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", text))
    allowed = {"html", "head", "meta", "title", "style", "body", "section", "h1", "h2", "p", "div", "span", "b"}
    allowed |= {"a", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "ol", "li", "footer", "br", "i"}
    allowed |= {"svg", "g", "rect", "circle", "path", "line", "text", "title"}
    assert tags <= allowed
    assert "title" in tags  # SVG tooltips and the page's title


def test_a_1000_node_jobs_page_stays_under_2_mb(tmp_path: Path) -> None:
    out = tmp_path / "job1000"
    generate_job(out, JobSpec(nodes=1000, gpus_per_node=2, total_mb=4, scenario="xid79", fault_node=421), workers=2)
    report = crashcart.triage([str(out / "logs")], workers=2)
    text = to_html(report)
    size = len(text.encode("utf-8"))
    print(f"the 1,000-node job's HTML report: {size:,} bytes")
    assert size < 2_000_000
    assert report.diagnosis.faulty_nodes == ["node421"]
    assert re.search(r'<g class="lane"><rect[^>]*/><text[^>]*font-weight="700">node421', text)  # its lane drawn
    assert "alike" in text and "not kept in the report" in text  # folded lanes and the cut events are said

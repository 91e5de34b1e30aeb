"""crashcart/htmlreport/lanes.py: lanes with the same events fold into one, the faulty node's never does, and
past the cap the rest are counted; the root cause is drawn even when the report's kept events lack it."""

from __future__ import annotations

import pytest

import crashcart
from crashcart.evals.generator import JobSpec, generate_job
from crashcart.htmlreport import lanes
from crashcart.htmlreport.lanes import build_timeline


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("job")
    generate_job(out, JobSpec(nodes=12, gpus_per_node=2, total_mb=1, scenario="ib_link", fault_node=4, seed=1))
    return crashcart.triage([str(out / "logs")], workers=1)


def test_identical_lanes_fold_and_every_lane_is_drawn_or_counted(report) -> None:  # type: ignore[no-untyped-def]
    t = build_timeline(report)
    assert t.lanes[0].name == "node04" and t.lanes[0].faulty and not t.lanes[0].folded
    assert t.lanes_folded == sum(len(lane.folded) for lane in t.lanes)
    assert len(t.lanes) + t.lanes_folded + t.lanes_not_drawn == t.lanes_total == 12
    assert all(lane.faulty == (lane.name in report.diagnosis.faulty_nodes) for lane in t.lanes)


def test_past_the_cap_lanes_are_counted_not_drawn(report, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(lanes, "MAX_LANES", 1)
    monkeypatch.setattr(lanes, "FOLD_GRID", 10**9)  # nothing folds
    t = build_timeline(report)
    assert [lane.name for lane in t.lanes] == ["node04"]
    assert t.lanes_not_drawn == t.lanes_total - 1 - t.lanes_folded


def test_the_root_cause_is_drawn_when_the_kept_events_lack_it(report) -> None:  # type: ignore[no-untyped-def]
    causes = {(e.file, e.line) for e in report.diagnosis.evidence if e.role and e.role.value == "root_cause"}
    assert causes
    cut = report.model_copy(update={"events": [e for e in report.events if (e.file, e.line) not in causes]})
    t = build_timeline(cut)
    assert any(m.kind == "root_cause" for lane in t.lanes for m in lane.marks)
    assert t.failure_x is not None

"""agent/watch_reports.py: every kind of watch report goes out as one JSON line and comes back the same record."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from crashcart.agent.models import Diagnosis
from crashcart.agent.watch_reports import REPORT, FinalReport, RootCauseReport, StallReport
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import Action, FailureClass

NOW = datetime(2026, 2, 14, 16, 14, 7, tzinfo=UTC)
# the driver's Xid line in syslog, as crashcart/evals/generator.py writes it for its xid79 job
XID = LineRef(
    file="kernel-node02.log",
    line=9,
    text="Feb 14 16:14:07 node02 kernel: [280407.738379] NVRM: Xid (PCI:0000:61:00): 79, pid=49491, name=python,"
    " GPU has fallen off the bus.",
    node="node02",
)
REPORTS = [
    RootCauseReport(
        time=NOW,
        failure_class=FailureClass.GPU_HARDWARE,
        action=Action.DRAIN_NODE_AND_RETRY,
        rule_id="gpu.xid.fallen_off_bus",
        explanation="Xid 79, the GPU fell off the PCIe bus.",
        nodes=["node02"],
        drain="scontrol update NodeName=node02 State=DRAIN Reason='crashcart: gpu.xid.fallen_off_bus'",
        evidence=[XID],
    ),
    StallReport(
        time=NOW,
        stalled_s=301.0,
        threshold_s=300.0,
        nodes=["node02"],
        iteration=97,
        why="stopped first",
        evidence=[XID],
    ),
    FinalReport(
        time=NOW,
        ended="slurm state FAILED",
        failure_class=FailureClass.GPU_HARDWARE,
        action=Action.DRAIN_NODE_AND_RETRY,
        nodes=["node02"],
        summary="GPU hardware failure on node node02",
        diagnosis=Diagnosis(
            failure_class=FailureClass.GPU_HARDWARE,
            action=Action.DRAIN_NODE_AND_RETRY,
            confidence=0.9,
            summary="GPU hardware failure on node node02",
        ),
    ),
]


@pytest.mark.parametrize("report", REPORTS, ids=lambda r: r.kind)
def test_a_report_round_trips_through_its_json_line(report) -> None:
    line = report.model_dump_json()
    assert "\n" not in line
    assert REPORT.validate_json(line) == report


def test_an_unknown_kind_is_refused() -> None:
    line = REPORTS[0].model_dump_json().replace('"root_cause"', '"rumour"', 1)
    with pytest.raises(ValidationError, match="rumour"):
        REPORT.validate_json(line)

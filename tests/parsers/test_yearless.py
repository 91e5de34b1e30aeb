"""Year-less stamps of undated files moved to the year the job's dated files show."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from crashcart.agent.pipeline import triage
from crashcart.evals.generator import JobSpec, generate_job
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.parsers.models import FileScan, MetricPoint, TemplateStat
from crashcart.parsers.yearless import lend_job_year

# a node's kernel log line (syslog stamps, no year) as the generator writes it: the mlx5 driver's PCIe power event
# (geerlingguy/arm-nas#16, evals/logtext.py)
KERNEL = "Mar 04 00:17:42 node00 kernel: [261496.982411] mlx5_core 0000:41:00.0: mlx5_pcie_event:294:(pid 20022): PCIe slot advertised sufficient power (75W)."  # noqa: E501


def _scan(file: str, when: datetime, year: int | None) -> FileScan:
    ref = LineRef(file=file, line=1, text=KERNEL, time=when)
    stat = TemplateStat(template_id="t", template=KERNEL, count=1, first=ref, last=ref)
    point = MetricPoint(line=1, time=when)
    return FileScan(file=file, lines=1, bytes=100, hits=[], templates=[stat], metrics=[point], year=year)


def test_an_undated_files_stamps_take_the_year_of_the_dated_files() -> None:
    dated = _scan("node00.log", datetime(2025, 3, 4, 0, 0, 1), 2025)
    undated = _scan("kernel-node00.log", datetime(2026, 3, 4, 0, 17, 42), None)  # lent this year
    kept, moved = lend_job_year([dated, undated], this_year=2026)
    assert kept is dated
    assert moved.templates[0].first.time == moved.templates[0].last.time == datetime(2025, 3, 4, 0, 17, 42)
    assert moved.metrics[0].time == datetime(2025, 3, 4, 0, 17, 42)


def test_a_stamp_the_file_dated_itself_and_a_job_of_this_year_are_left_alone() -> None:
    own = _scan("kernel.log", datetime(2024, 12, 31, 23, 59), None)  # a dated line past where the year was looked for
    dated = _scan("node00.log", datetime(2025, 1, 1), 2025)
    assert lend_job_year([dated, own], this_year=2026)[1].templates[0].first.time == datetime(2024, 12, 31, 23, 59)
    this_year = [_scan("a.log", datetime(2026, 1, 1), 2026), _scan("b.log", datetime(2026, 1, 2), None)]
    assert lend_job_year(this_year, this_year=2026) == this_year
    alone = [_scan("b.log", datetime(2026, 1, 2), None)]
    assert lend_job_year(alone, this_year=2026) == alone  # no file says which year: nothing to lend


def test_the_29th_of_february_lent_to_a_year_without_one() -> None:
    dated = _scan("node00.log", datetime(2027, 3, 1), 2027)
    undated = _scan("kernel.log", datetime(2028, 2, 29, 12), None)
    assert lend_job_year([dated, undated], this_year=2028)[1].metrics[0].time == datetime(2027, 2, 28, 12)


def test_a_healthy_job_of_a_past_year_is_no_hang(tmp_path: Path) -> None:
    # its kernel logs' syslog stamps read as this year sat a year after its last step: "no progress for 525581 min"
    generate_job(tmp_path, JobSpec(nodes=2, total_mb=1, scenario="none", start=datetime(2025, 3, 4, tzinfo=UTC)), 1)
    report = triage(tmp_path / "logs", workers=1)
    assert report.diagnosis.failure_class is FailureClass.UNKNOWN
    kernel = [t for t in report.templates if t.first.file.endswith("kernel-node00.log") and t.first.time]
    assert kernel and all(t.first.time.year == 2025 for t in kernel)

"""crashcart/htmlreport/context.py: each evidence line comes with its neighbours read from the file, bounded; a
file gone since the triage leaves the line alone."""

from __future__ import annotations

import shutil
from pathlib import Path

import crashcart
from crashcart.htmlreport.context import CONTEXT, MAX_EVIDENCE, excerpts

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "xid79-job" / "logs"


def test_evidence_lines_come_with_their_neighbours(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(EXAMPLE, logs)
    report = crashcart.triage([str(logs)], workers=1)
    found = excerpts(report.paths, report.diagnosis.evidence)
    assert len(found) == min(len(report.diagnosis.evidence), MAX_EVIDENCE)
    for ex in found:
        ev = ex.evidence
        numbers = [no for no, _ in ex.lines]
        assert numbers == list(range(numbers[0], numbers[-1] + 1)) and len(numbers) <= 2 * CONTEXT + 1
        assert dict(ex.lines)[ev.line] == ev.text[:400]
        real = (logs / ev.file).read_text().splitlines()
        assert all(real[no - 1][:400] == text for no, text in ex.lines)
    shutil.rmtree(logs)
    alone = excerpts(report.paths, report.diagnosis.evidence)
    assert all(ex.lines == [(ex.evidence.line, ex.evidence.text[:400])] for ex in alone)

"""Triage a few log lines as one job's log: what the family and trend tests run their real lines through."""

from __future__ import annotations

from pathlib import Path

from crashcart.api import Report, triage


def triage_lines(tmp_path: Path, *lines: str, name: str = "job.log") -> Report:
    """`lines` written as the file `name` in tmp_path, triaged with one worker (no process start-up)."""
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return triage(path, workers=1)


def cited(report: Report) -> str | None:
    """The rule behind the diagnosis' first evidence line."""
    return report.diagnosis.evidence[0].rule_id

"""Recurrence: every case stored, then recognised again buried in a generated job; healthy jobs stay healthy."""

from __future__ import annotations

import json
from pathlib import Path

from evalset_subset import evalset_subset
from typer.testing import CliRunner

from crashcart.cli import app
from crashcart.evals.recurrence import calibrate_close

# Real cases of the shared dev set: three the rules know, and one they call a code bug where its label (a Trainer
# subclass written against another transformers release) says environment: memory must carry the label
PICKED = ["d-env-tfver-002", "d-hostoom-001", "d-storage-001", "d-net-ib-001"]


def test_eval_memory_recurrence_recognises_stored_cases_in_big_jobs(dev_evalset: Path, tmp_path: Path) -> None:
    root = evalset_subset(dev_evalset, tmp_path / "set", PICKED)
    args = ["eval", str(root), "--memory", "--recurrence", "--recurrence-mb", "3", "--recurrence-nodes", "4"]
    out = CliRunner().invoke(app, [*args, "--format", "json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)["recurrence"]
    assert report["cases"] == len(PICKED) and report["nodes"] == 4
    assert report["recurrence_recall"] == 1.0 and report["healthy_false_alarms"] == 0
    assert "results" not in report  # per case only with --cases
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0 and "recurrence: 4 cases" in text.output and "seen-before floor" in text.output


def test_calibrated_close_floor_is_where_nearest_neighbours_are_mostly_right() -> None:
    pairs = [(0.95, True), (0.9, True), (0.85, True), (0.82, False), (0.6, False), (0.5, True)]
    assert calibrate_close(pairs, precision=0.95) == 0.85
    assert calibrate_close([(0.3, False)]) == 1.0

"""The figures the project promises on the labeled dev set: a regression guard for rules and diagnosis."""

from __future__ import annotations

from pathlib import Path

from crashcart.evals.runner import evaluate


def test_dev_set_meets_the_promised_figures(dev_evalset: Path) -> None:
    report = evaluate(dev_evalset)
    assert report.cases == 40 and report.errors == 0
    assert report.accuracy >= 0.85, [
        (r.id, r.expected_class, r.predicted_class) for r in report.results if not r.correct
    ]
    assert report.action_accuracy >= 0.85
    assert report.evidence_hit_rate is not None and report.evidence_hit_rate >= 0.90
    assert report.faulty_node_hit_rate is not None and report.faulty_node_hit_rate >= 0.8

"""The oracle model: answers a labeled class only where the prompt shows that case's evidence line."""

from __future__ import annotations

import json
from pathlib import Path

from evalset_subset import evalset_subset

from crashcart.evals.dataset import load_evalset
from crashcart.evals.oracle import Oracle, OracleServer

PICKED = ["d-gpu-ecc-001", "d-cancel-preempt-003"]  # real cases: one the rules know, one they do not


def test_the_oracle_names_the_class_only_when_the_evidence_line_is_shown(dev_evalset: Path, tmp_path: Path) -> None:
    case = next(c for c in load_evalset(dev_evalset) if c.id == "d-cancel-preempt-003")
    oracle = Oracle([case])
    shown = f"lines:\n[job.log:7] (node01) {case.evidence[0]}\n[job.log:8] Status:                True"
    answer = oracle.answer(shown)
    assert (answer["failure_class"], answer["evidence"]) == ("cancelled", [{"file": "job.log", "line": 7}])
    hidden = oracle.answer("lines:\n[job.log:8] Status:                True")
    assert hidden["failure_class"] == "unknown" and hidden["evidence"] == [{"file": "job.log", "line": 8}]


def test_eval_against_the_oracle_measures_what_the_context_carries(
    dev_evalset: Path, tmp_path: Path, cli, monkeypatch
) -> None:
    root = evalset_subset(dev_evalset, tmp_path / "set", PICKED)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-oracle")
    with OracleServer(root) as server:
        url = server.base_url
        code, out, err = cli(
            "eval", str(root), "--llm", "openai:oracle", "--llm-base-url", url, "--llm-always", "--format", "json"
        )
        assert code == 0, err
        report = json.loads(out)
        assert report["rules_memory_llm"]["accuracy"] == 1.0  # both decisive lines were in the prompts
        assert report["llm_usage"]["consulted"] == 2 and server.requests >= 2
        code, out, _ = cli("eval", str(root), "--llm", "openai:oracle", "--llm-base-url", url, "--format", "json")
        assert json.loads(out)["llm_usage"]["consulted"] < 2  # by default a sure verdict is not sent

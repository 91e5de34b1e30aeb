"""load_evalset: the labels it accepts, and a one-line message naming the file, line and fix for the rest."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from crashcart.evals.dataset import LabeledCase, load_evalset
from crashcart.knowledge.errors import EvalSetError
from crashcart.knowledge.taxonomy import Action, FailureClass

REPO = Path(__file__).resolve().parents[2]
DEV_CANDIDATES = [
    os.environ.get("CRASHCART_DEV_EVALSET", ""),
    str(REPO.parent / "shared" / "evalsets" / "dev"),
]


def _case(**over: object) -> dict:
    base = {
        "id": "c1",
        "path": "cases/c1.log",
        "failure_class": "gpu_oom",
        "action": "fix_job",
        "evidence": ["CUDA out of memory"],
        "faulty_nodes": [],
    }
    base.update(over)
    return base


def _write_set(root: Path, lines: list[str], logs: tuple[str, ...] = ("cases/c1.log",)) -> Path:
    for rel in logs:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("torch.OutOfMemoryError: CUDA out of memory\n")
    (root / "labels.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _error(root: Path) -> str:
    with pytest.raises(EvalSetError) as info:
        load_evalset(root)
    msg = str(info.value)
    assert "\n" not in msg, "messages are one line"
    return msg


def test_loads_cases_and_skips_blank_lines(tmp_path: Path) -> None:
    (tmp_path / "cases" / "c2").mkdir(parents=True)
    (tmp_path / "cases" / "c2" / "rank0.log").write_text("x\n")
    extra = _case(
        id="c2",
        path="cases/c2",
        failure_class="network",
        action="drain_node_and_retry",
        faulty_nodes=["node-7"],
        source="gh#1",
        why="IB",
        notes="folder case",
    )
    _write_set(tmp_path, [json.dumps(_case()), "", "   ", json.dumps(extra)])
    cases = load_evalset(tmp_path)
    assert [c.id for c in cases] == ["c1", "c2"]
    assert cases[0].failure_class is FailureClass.GPU_OOM
    assert cases[1].action is Action.DRAIN_NODE_AND_RETRY
    assert cases[1].faulty_nodes == ["node-7"]
    assert cases[1].notes == "folder case"
    assert cases[0].resolve(tmp_path) == tmp_path / "cases" / "c1.log"
    assert cases[1].resolve(tmp_path).is_dir()


def test_evidence_and_faulty_nodes_default_to_empty(tmp_path: Path) -> None:
    raw = _case()
    del raw["evidence"], raw["faulty_nodes"]
    _write_set(tmp_path, [json.dumps(raw)])
    (case,) = load_evalset(tmp_path)
    assert case.evidence == [] and case.faulty_nodes == []


def test_missing_dir(tmp_path: Path) -> None:
    msg = _error(tmp_path / "nope")
    assert "nope is not a directory" in msg and "labels.jsonl" in msg


def test_dir_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "labels.jsonl"
    f.write_text("{}\n")
    assert "is not a directory" in _error(f)


def test_missing_labels_file(tmp_path: Path) -> None:
    msg = _error(tmp_path)
    assert f"{tmp_path / 'labels.jsonl'} not found" in msg


def test_bad_json_names_the_line(tmp_path: Path) -> None:
    _write_set(tmp_path, [json.dumps(_case()), '{"id": "c2", "path": '])
    msg = _error(tmp_path)
    assert f"{tmp_path / 'labels.jsonl'}:2: bad JSON" in msg
    assert "fix the line" in msg


def test_line_number_counts_blank_lines(tmp_path: Path) -> None:
    _write_set(tmp_path, [json.dumps(_case()), "", "not json"])
    assert "labels.jsonl:3: bad JSON" in _error(tmp_path)


def test_not_an_object(tmp_path: Path) -> None:
    _write_set(tmp_path, ['["a", "b"]'])
    assert "labels.jsonl:1: expected a JSON object, got list" in _error(tmp_path)


def test_unknown_failure_class_lists_the_valid_ones(tmp_path: Path) -> None:
    _write_set(tmp_path, [json.dumps(_case(failure_class="gpu_melted"))])
    msg = _error(tmp_path)
    assert "labels.jsonl:1: unknown failure_class 'gpu_melted'" in msg
    assert "gpu_hardware" in msg and "unknown" in msg.split("use one of")[1]


def test_unknown_action(tmp_path: Path) -> None:
    _write_set(tmp_path, [json.dumps(_case(action="reboot"))])
    msg = _error(tmp_path)
    assert "unknown action 'reboot'" in msg and "drain_node_and_retry" in msg


def test_missing_required_field(tmp_path: Path) -> None:
    raw = _case()
    del raw["failure_class"]
    _write_set(tmp_path, [json.dumps(raw)])
    assert "labels.jsonl:1: missing required field 'failure_class'" in _error(tmp_path)


def test_unknown_field_is_rejected(tmp_path: Path) -> None:
    _write_set(tmp_path, [json.dumps(_case(faulty_node=["n1"]))])
    msg = _error(tmp_path)
    assert "unknown field 'faulty_node'" in msg and "notes" in msg


def test_wrong_type_names_the_field(tmp_path: Path) -> None:
    _write_set(tmp_path, [json.dumps(_case(faulty_nodes=[290]))])
    assert "field 'faulty_nodes.0'" in _error(tmp_path)


def test_case_path_must_exist(tmp_path: Path) -> None:
    _write_set(tmp_path, [json.dumps(_case()), json.dumps(_case(id="c2", path="cases/missing.log"))])
    msg = _error(tmp_path)
    assert "labels.jsonl:2: case 'c2' path 'cases/missing.log' does not exist" in msg
    assert "fix the path" in msg


def test_absolute_path_rejected(tmp_path: Path) -> None:
    log = tmp_path / "cases" / "c1.log"
    _write_set(tmp_path, [json.dumps(_case(path=str(log)))])
    assert "is absolute: make it relative" in _error(tmp_path)


def test_duplicate_id(tmp_path: Path) -> None:
    _write_set(tmp_path, [json.dumps(_case()), json.dumps(_case())])
    assert "labels.jsonl:2: duplicate case id 'c1' (first on line 1)" in _error(tmp_path)


def test_empty_set(tmp_path: Path) -> None:
    _write_set(tmp_path, [""])
    assert "has no cases" in _error(tmp_path)


def test_labeled_case_model_is_strict() -> None:
    with pytest.raises(ValueError):
        LabeledCase.model_validate(_case(id=""))


def _dev_set() -> Path:
    for cand in DEV_CANDIDATES:
        if cand and (Path(cand) / "labels.jsonl").is_file():
            return Path(cand)
    pytest.skip("dev eval set not found (set CRASHCART_DEV_EVALSET)")


def test_real_dev_set_loads() -> None:
    root = _dev_set()
    cases = load_evalset(root)
    assert len(cases) == 40
    assert len({c.id for c in cases}) == 40
    assert all(c.resolve(root).exists() for c in cases)
    assert all(c.evidence for c in cases), "every dev case names its proof"
    ranks = {n for c in cases for n in c.faulty_nodes}
    assert {"rank12", "Rank 1", "290", "hostname-test"} <= ranks

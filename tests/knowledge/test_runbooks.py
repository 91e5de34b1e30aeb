"""Runbooks: one per class, concrete steps, faulty nodes filled in, strict loading."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.records import rank_place
from crashcart.knowledge.runbooks import RUNBOOK_FILE, UNKNOWN_NODE, load_runbook_file, load_runbooks, mitigation_steps
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, Action, FailureClass


def joined(cls: FailureClass, nodes: list[str]) -> str:
    return "\n".join(mitigation_steps(cls, nodes))


def test_one_runbook_per_class() -> None:
    assert set(load_runbooks()) == set(FailureClass)


def test_gpu_hardware_drains_and_diagnoses_the_named_nodes() -> None:
    text = joined(FailureClass.GPU_HARDWARE, ["gpu-node-7", "gpu-node-9"])
    assert 'scontrol update nodename=gpu-node-7,gpu-node-9 state=drain reason="crashcart: ' in text
    assert "kubectl cordon gpu-node-7 gpu-node-9" in text
    assert "kubectl drain gpu-node-7 gpu-node-9 --ignore-daemonsets --delete-emptydir-data" in text
    assert "dcgmi diag -r 3" in text
    assert "nvidia-smi -q -d ECC,ROW_REMAPPER" in text
    assert "{" not in text and UNKNOWN_NODE not in text


def test_unknown_nodes_render_as_the_faulty_node() -> None:
    steps = mitigation_steps(FailureClass.NODE_FAILURE, [])
    drain = next(s for s in steps if "scontrol update" in s)
    assert f"nodename={UNKNOWN_NODE} state=drain" in drain
    assert "the faulty node" in drain
    assert not any("{" in s for s in steps)


def test_nodes_are_deduplicated_in_order() -> None:
    text = joined(FailureClass.NETWORK, ["b", "a", "b", ""])
    assert "nodename=b,a state=drain" in text


def test_network_steps_test_the_fabric() -> None:
    text = joined(FailureClass.NETWORK, ["n1"])
    for command in ("ibstat", "ibv_devinfo", "perfquery", "ib_write_bw", "all_reduce_perf"):
        assert command in text


def test_collective_timeout_steps_enable_flight_recorder() -> None:
    text = joined(FailureClass.COLLECTIVE_TIMEOUT, [])
    for knob in ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DUMP_ON_TIMEOUT=1", "TORCH_NCCL_DESYNC_DEBUG=1"):
        assert knob in text
    assert "lowest completed" in text


def test_drain_classes_drain_and_fix_job_classes_say_not_to_retry() -> None:
    for cls, action in DEFAULT_ACTION.items():
        text = joined(cls, ["n1"])
        if action is Action.DRAIN_NODE_AND_RETRY:
            assert "scontrol update nodename=n1 state=drain" in text, cls
        if action is Action.FIX_JOB and cls is not FailureClass.HOST_OOM:
            assert "retry" in text.lower(), cls


def test_every_runbook_renders_cleanly() -> None:
    for cls in FailureClass:
        for nodes in ([], ["n1", "n2"]):
            steps = mitigation_steps(cls, nodes)
            assert steps and all(isinstance(s, str) and s.strip() for s in steps)
            assert not any("{nodes" in s for s in steps)


def _shipped() -> dict:
    return yaml.safe_load(RUNBOOK_FILE.read_text(encoding="utf-8"))


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "runbooks.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _unknown_placeholder(data: dict) -> None:
    data["runbooks"]["network"]["steps"].append("ping {host}")


def _missing_class(data: dict) -> None:
    del data["runbooks"]["storage"]


def _extra_field(data: dict) -> None:
    data["runbooks"]["cancelled"]["owner"] = "someone"


def _empty_steps(data: dict) -> None:
    data["runbooks"]["data_error"]["steps"] = []


def _bad_version(data: dict) -> None:
    data["version"] = 9


@pytest.mark.parametrize("mutate", [_unknown_placeholder, _missing_class, _extra_field, _empty_steps, _bad_version])
def test_loader_rejects_bad_files_naming_them(tmp_path: Path, mutate) -> None:
    data = _shipped()
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(KnowledgeError, match="runbooks.yaml"):
        load_runbook_file(path)


def test_loader_error_says_what_is_wrong(tmp_path: Path) -> None:
    data = _shipped()
    del data["runbooks"]["storage"]
    with pytest.raises(KnowledgeError, match="storage"):
        load_runbook_file(_write(tmp_path, data))


def test_shipped_file_round_trips(tmp_path: Path) -> None:
    assert load_runbook_file(_write(tmp_path, _shipped())) == load_runbooks()


def test_a_rank_standing_in_for_an_unknown_host_reaches_no_command() -> None:
    steps = mitigation_steps(FailureClass.GPU_HARDWARE, [rank_place(12), "node07"])
    assert not any("rank 12" in step for step in steps)
    assert any("node07" in step for step in steps)

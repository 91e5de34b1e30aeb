"""A machine failure whose own lines name no node is placed by the header above it: a job mail, a prompt."""

from __future__ import annotations

from pathlib import Path

from crashcart.api import triage
from crashcart.knowledge.taxonomy import FailureClass

# cBio/cbio-cluster#187: the PBS/Torque mail of a job Moab deleted because its node failed.
PBS_MAIL = [
    "PBS Job Id: 2600365.mskcc-fe1.local",
    "Job Name:   STDIN",
    "Exec host:  gpu-2-17/5",
    "job deleted",
    "Job deleted at request of root@mskcc-fe1.local",
    "job preempted (node failure)",
]
# rwth-i6/returnn#1486: nvidia-smi at a zsh prompt on the node whose GPU stopped answering.
NVSMI_ON_NODE = [
    "zeyer@cn-234 ~ % nvidia-smi",
    "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error",
]
# RobertsLab/resources#426: a command at the login node's bash prompt, and what it printed.
LOGIN_PROMPT = ["[jldimond@mox1 ~]$ sjobexitmod -l 353216", "       JobID    Account   NNodes        NodeList"]


def _diagnose(tmp_path: Path, *files: list[str]):
    paths = []
    for i, lines in enumerate(files):
        path = tmp_path / f"part{i}.log"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return triage(paths).diagnosis


def test_a_job_mail_names_the_node_its_node_failure_does_not(tmp_path: Path) -> None:
    d = _diagnose(tmp_path, PBS_MAIL)
    assert d.failure_class is FailureClass.NODE_FAILURE
    assert d.faulty_nodes == ["gpu-2-17"]


def test_the_prompt_above_a_gpu_failure_names_its_node(tmp_path: Path) -> None:
    d = _diagnose(tmp_path, NVSMI_ON_NODE)
    assert d.failure_class is FailureClass.GPU_HARDWARE
    assert d.faulty_nodes == ["cn-234"]


def test_only_the_last_prompt_above_the_line_counts(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, LOGIN_PROMPT + NVSMI_ON_NODE).faulty_nodes == ["cn-234"]
    assert _diagnose(tmp_path, NVSMI_ON_NODE + LOGIN_PROMPT).faulty_nodes == ["cn-234"]


def test_a_job_mail_in_a_file_of_its_own_places_the_failure_of_another(tmp_path: Path) -> None:
    d = _diagnose(tmp_path, PBS_MAIL[:3], PBS_MAIL[3:])
    assert d.faulty_nodes == ["gpu-2-17"]


def test_without_a_header_no_node_is_guessed(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, NVSMI_ON_NODE[1:]).faulty_nodes == []
    assert _diagnose(tmp_path, PBS_MAIL[3:]).faulty_nodes == []

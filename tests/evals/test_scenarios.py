"""Tests for evals/scenarios.py: the scenario table is evals/scenarios.yaml, its fragments expanded at load."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.evals.scenarios import SCENARIO_FILE, SCENARIOS, TIMEOUT_SYMPTOMS, load_scenarios
from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.taxonomy import FailureClass

SMALL = """\
version: 1
fragments:
  torch: /usr/local/lib/python3.10/dist-packages/torch
  frames:
    - "frame #5: <unknown function> + 0xdc253 (0x7f0e1c0b0253 in /lib/x86_64-linux-gnu/libstdc++.so.6)"
  stack:
    - "frame #3: c10d::ProcessGroupNCCL::watchdogHandler() + 0x1da (0x7f0dc7e26e4a in ${torch}/lib/libtorch_cuda.so)"
    - ${frames}
scenarios:
  - name: x
    failure_class: code_bug
    root_lines:
      - "[rank{rank}]: AttributeError: 'NoneType' object has no attribute 'sum'"
      - ${stack}
"""


def _load(tmp_path: Path, text: str):
    path = tmp_path / "scenarios.yaml"
    path.write_text(text, encoding="utf-8")
    return load_scenarios(path)


def test_the_shipped_table_loads_every_scenario() -> None:
    assert (
        [s.name for s in load_scenarios().scenarios]
        == list(SCENARIOS)
        == [
            "xid79",
            "ecc",
            "ib_link",
            "gpu_oom",
            "host_oom",
            "nan_loss",
            "storage",
            "node_fail",
            "code_bug",
            "timeout_only",
            "none",
        ]
    )
    assert SCENARIO_FILE.name == "scenarios.yaml" and SCENARIO_FILE.parent.name == "evals"
    assert SCENARIOS["none"].failure_class is None and SCENARIOS["xid79"].failure_class is FailureClass.GPU_HARDWARE
    assert SCENARIOS["timeout_only"].symptom_lines == TIMEOUT_SYMPTOMS
    assert not [ln for s in SCENARIOS.values() for ln in s.root_lines + s.symptom_lines if "${" in ln]


def test_fragments_expand_inline_and_as_whole_lines(tmp_path: Path) -> None:
    (x,) = _load(tmp_path, SMALL).scenarios
    assert x.root_lines == [
        "[rank{rank}]: AttributeError: 'NoneType' object has no attribute 'sum'",
        "frame #3: c10d::ProcessGroupNCCL::watchdogHandler() + 0x1da (0x7f0dc7e26e4a in"
        " /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
        "frame #5: <unknown function> + 0xdc253 (0x7f0e1c0b0253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
    ]


def test_a_folded_line_is_one_line_with_one_space(tmp_path: Path) -> None:
    text = SMALL.replace(
        """- "[rank{rank}]: AttributeError: 'NoneType' object""",
        """- "[rank{rank}]: AttributeError:
        'NoneType' object""",
    )
    (x,) = _load(tmp_path, text).scenarios
    assert x.root_lines[0] == "[rank{rank}]: AttributeError: 'NoneType' object has no attribute 'sum'"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "- ${stack}",
            "- ${stacks}",
            r"unknown fragment \$\{stacks\} in '\$\{stacks\}'; define it under `fragments`,"
            r" above its first use \(defined so far: torch, frames, stack\)",
        ),
        ("- ${stack}", "- in ${stack}", r"\$\{stack\} is a list of lines: use it as a line of its own"),
        ("  - name: x", "  - name: x\n    failure_class: null\n  - name: x", r"scenario named twice: x"),
        ("{rank}]: Attr", "{rnk}]: Attr", r"uses an unknown placeholder or bad braces"),
        ("version: 1", "version: 2", r"has version 2; expected 1"),
        ("failure_class: code_bug", "failure_class: code_bugs", r"scenarios\.0\.failure_class: Input should be"),
    ],
    ids=["unknown", "list-inline", "twice", "placeholder", "version", "class"],
)
def test_a_bad_table_names_the_file_and_the_fix(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert old in SMALL
    with pytest.raises(KnowledgeError, match=rf"scenario file .*scenarios\.yaml.*{message}"):
        _load(tmp_path, SMALL.replace(old, new, 1))

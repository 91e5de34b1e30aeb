"""Not collected by a normal run (no test_ prefix): tests/test_conftest.py runs it in a child pytest whose outer
environment points at a stand-in for the user's real HOME, with CRASHCART_LLM and CRASHCART_MEMORY set.

Each test here does what an unisolated test would do to a developer's machine: open the default stores, add an
incident to the default memory, triage with the model settings of the shell (which creates the rule store).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from crashcart.stores import data_dir, open_memory, open_rule_store

OOM_LOG = "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB.\n"


def test_the_default_stores_are_the_tests_own() -> None:
    assert not any(var.startswith("CRASHCART_") for var in os.environ if var != "CRASHCART_LOCAL_MODELS_ONLY")
    assert data_dir().is_relative_to(os.environ["HOME"])
    assert open_memory() is None and open_rule_store() is None  # the outer HOME has both: not seen here


def test_cases_add_and_triage_write_only_under_the_tests_home(cli, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(OOM_LOG)
    code, _, err = cli("cases", "add", str(log), "--class", "gpu_oom")
    assert code == 0, err
    code, out, err = cli("triage", str(log), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["diagnosis"]["failure_class"] == "gpu_oom"
    assert (data_dir() / "incidents.db").is_file()

"""The wheel: one top-level import name, every data file it needs, and a real triage from the installed copy."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from the files git would clone (a stale build/ folder in the work tree cannot leak in)."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            "-w",
            str(out),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("crashcart-*.whl")
    return built


def test_the_wheel_installs_one_top_level_name(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert z.read(top_level).decode().split() == ["crashcart"]
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"crashcart"}
    for data in (
        "crashcart/knowledge/signatures/gpu.yaml",
        "crashcart/knowledge/runbooks.yaml",
        "crashcart/knowledge/xid.yaml",
        "crashcart/knowledge/healthy/sources.yaml",
        "crashcart/knowledge/healthy/megatron.log",
        "crashcart/prompts/diagnose.md",
    ):
        assert data in names


def test_the_installed_copy_triages_the_bundled_example(wheel: Path, tmp_path: Path) -> None:
    """Unpacked as pip installs it, first on the path (outside the repository), it diagnoses the example job."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); import crashcart.api as api; "
        "r = api.triage([sys.argv[2]]); "
        "print(json.dumps([api.__file__, r.diagnosis.failure_class.value, r.diagnosis.faulty_nodes]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(site), str(REPO / "examples" / "xid79-job" / "logs")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    where, cls, nodes = json.loads(proc.stdout)
    assert Path(where).is_relative_to(site) and (cls, nodes) == ("gpu_hardware", ["node07"])

"""tests/conftest.py's isolation: a child pytest, started from a shell that has a HOME with crashcart stores in
it and CRASHCART_* settings, neither reads nor writes anything there (tests/isolation_probe.py is what it runs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crashcart.stores import open_memory, open_rule_store

REPO = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).resolve().parent / "isolation_probe.py"


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under root: (size, mtime_ns), so a rewrite shows even when the size does not change."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def _seed(data: Path) -> None:
    """A developer's incident memory and rule queue in `data`, as `crashcart cases add` leaves them."""
    for store in (open_memory(data / "incidents.db", create=True), open_rule_store(data / "rules.db", create=True)):
        store.close()


@pytest.mark.parametrize("shell", ["home", "xdg"])
def test_a_test_run_leaves_the_real_home_alone(tmp_path: Path, shell: str) -> None:
    real_home = tmp_path / "real-home"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CRASHCART_", "XDG_", "PYTEST_"))
    }  # a developer's shell, not this test's
    env.update(HOME=str(real_home), CRASHCART_LLM="ollama:llama3.1:8b")  # local: nothing remote even unisolated
    if shell == "home":  # the stores where ~ puts them
        _seed(real_home / ".local" / "share" / "crashcart")
    else:  # XDG_DATA_HOME for the rule store, CRASHCART_MEMORY for the incident memory
        env.update(XDG_DATA_HOME=str(real_home / "xdg"), CRASHCART_MEMORY=str(real_home / "memory.db"))
        _seed(real_home / "xdg" / "crashcart")
        (real_home / "xdg" / "crashcart" / "incidents.db").rename(real_home / "memory.db")
    before = _tree(real_home)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(PROBE), "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'child'}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert _tree(real_home) == before, proc.stdout[-4000:]  # nothing new, nothing rewritten
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout

"""Shared fixtures: where the labeled dev set lives (beside the repository, as in CI)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def dev_evalset() -> Path:
    """../shared/evalsets/dev, or $CRASHCART_DEV_EVALSET."""
    for cand in (os.environ.get("CRASHCART_DEV_EVALSET", ""), str(REPO.parent / "shared" / "evalsets" / "dev")):
        if cand and (Path(cand) / "labels.jsonl").is_file():
            return Path(cand)
    pytest.skip("dev eval set not found beside the repository (set CRASHCART_DEV_EVALSET)")


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the real console entry point in-process: (exit code, stdout, stderr)."""
    import sys

    from crashcart import cli

    monkeypatch.setattr(sys, "argv", ["crashcart", *args])
    monkeypatch.delenv("CRASHCART_DEBUG", raising=False)
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """`cli("triage", path, "--format", "json")` -> (exit code, stdout, stderr)."""
    return lambda *args: run_cli(monkeypatch, capsys, *args)

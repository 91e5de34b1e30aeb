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

"""The mined corpus of real failures: loadable, split by source once, and cited."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from crashcart.evals.dataset import load_evalset

CORPUS = Path(__file__).resolve().parents[2] / "evals" / "corpus"
HALVES = ("dev", "heldout")


def half_of(source: str) -> str:
    return "dev" if hashlib.sha256(source.strip().lower().encode()).digest()[0] % 2 == 0 else "heldout"


@pytest.mark.parametrize("half", HALVES)
def test_each_half_loads_and_every_case_is_in_the_half_its_source_decides(half: str) -> None:
    cases = load_evalset(CORPUS / half)
    assert len(cases) >= 100
    for case in cases:
        assert case.source, case.id
        assert half_of(case.source) == half, case.id


def test_no_source_is_in_both_halves_and_each_is_used_once() -> None:
    sources = [c.source.strip().lower() for half in HALVES for c in load_evalset(CORPUS / half) if c.source]
    assert len(sources) == len(set(sources)) >= 300


@pytest.mark.parametrize("half", HALVES)
def test_evidence_lines_are_in_their_logs(half: str) -> None:
    for case in load_evalset(CORPUS / half):
        text = " ".join(case.resolve(CORPUS / half).read_text(encoding="utf-8", errors="replace").split())
        for line in case.evidence:
            assert " ".join(line.split()) in text, (case.id, line)

"""Tests for agent/consult.py: when a triage asks the model (the whole loop is in tests/crashcart/test_llm_loop.py)."""

from __future__ import annotations

import pytest

from crashcart.agent.consult import CONSULT_BELOW, TIMEOUT_S, LLMOptions, should_consult
from crashcart.agent.models import Diagnosis
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, FailureClass


def _diagnosis(cls: FailureClass, confidence: float) -> Diagnosis:
    return Diagnosis(failure_class=cls, action=DEFAULT_ACTION[cls], confidence=confidence, summary="s")


@pytest.mark.parametrize(
    ("cls", "confidence", "always", "asked"),
    [
        (FailureClass.UNKNOWN, 0.0, False, True),  # the rules and memory are silent
        (FailureClass.UNKNOWN, 0.9, False, True),  # unknown however sure
        (FailureClass.GPU_OOM, CONSULT_BELOW - 0.01, False, True),  # unsure
        (FailureClass.GPU_OOM, CONSULT_BELOW, False, False),  # sure enough: the model is not asked
        (FailureClass.GPU_OOM, 0.99, True, True),  # --llm-always
    ],
)
def test_the_model_is_asked_when_rules_and_memory_are_unsure(
    cls: FailureClass, confidence: float, always: bool, asked: bool
) -> None:
    assert should_consult(_diagnosis(cls, confidence), LLMOptions(always=always)) is asked


def test_the_deadline_defaults_well_under_a_minute() -> None:
    from crashcart import cli

    assert LLMOptions().timeout_s == TIMEOUT_S == cli.TIMEOUT_S <= 30  # the CLI keeps its own copy: no agent import

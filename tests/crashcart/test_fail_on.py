"""--fail-on's words: class names, infra and any, against the taxonomy; a bad word is an InputError."""

from __future__ import annotations

import pytest

from crashcart.fail_on import fails, parse_fail_on
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.taxonomy import HARDWARE_CLASSES, INFRA_CLASSES, FailureClass


def test_words_name_classes_and_the_taxonomys_sets() -> None:
    assert parse_fail_on(None) == frozenset()
    assert parse_fail_on("infra") == INFRA_CLASSES == HARDWARE_CLASSES | {FailureClass.STORAGE}
    assert parse_fail_on("any") == frozenset(FailureClass) - {FailureClass.UNKNOWN}
    assert parse_fail_on(" GPU_OOM , code_bug") == {FailureClass.GPU_OOM, FailureClass.CODE_BUG}
    assert parse_fail_on("infra,unknown") == INFRA_CLASSES | {FailureClass.UNKNOWN}


@pytest.mark.parametrize("spec", ["", " , ", "oom", "gpu_oom,,code_bug", "infra;any"])
def test_a_bad_word_is_one_input_error_naming_it(spec: str) -> None:
    with pytest.raises(InputError, match="--fail-on") as caught:
        parse_fail_on(spec)
    assert "\n" not in str(caught.value)


def test_fails_when_any_verdict_is_in_the_set() -> None:
    infra = parse_fail_on("infra")
    assert fails(infra, [FailureClass.CODE_BUG, FailureClass.STORAGE])
    assert not fails(infra, [FailureClass.CODE_BUG, FailureClass.UNKNOWN]) and not fails(infra, [])
    assert not fails(frozenset(), [FailureClass.GPU_HARDWARE])

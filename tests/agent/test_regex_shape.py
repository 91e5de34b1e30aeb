"""Tests for agent/regex_shape.py: backtracking shapes, unsupported constructs and literal counts, read statically."""

from __future__ import annotations

import pytest

from crashcart.agent import derive, regex_shape
from crashcart.agent.regex_shape import NESTED, OVERLAP


def shape(pattern: str) -> list[str]:
    parsed = regex_shape.parse(pattern)
    assert parsed is not None
    return regex_shape.backtracking(parsed)


@pytest.mark.parametrize(
    ("pattern", "found"),
    [
        (r"(a+)+$", [NESTED]),
        (r"(\w+\s?)*x", [NESTED]),
        (r"(.*)*", [NESTED]),
        (r"(?:x(?:y+)z){2,}", [NESTED]),  # the inner repeat may sit deep inside the outer one
        (r"(?:\d+\.)+", [NESTED]),  # conservative: unambiguous, refused all the same (write \d[\d.]*)
        (r"(a|a)*", [OVERLAP]),
        (r"(?:xy|\wy)+z", [OVERLAP]),  # "xy" either way: 2^n paths through "xyxy...xy!"
        (r"(?:ab|a)+c", []),  # Python's parser factors it to a(?:b|): each turn starts on its own "a"
        (r"(?:\w|\d)+", []),  # one class after Python's parser merges it: no alternation left
        (r"(?:foo|bar)+", []),
        (r"(?:\d+|x)?", []),  # a repeat of at most one is no loop
        (r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", []),
        (r"(?:[a-f]{1,3}:){3}", []),  # bounded inner repeats
    ],
)
def test_backtracking_shapes(pattern: str, found: list[str]) -> None:
    assert shape(pattern) == found


@pytest.mark.parametrize("cls", sorted(set(derive.CLASSES.values())))
def test_the_derivers_own_classes_pass(cls: str) -> None:
    assert shape(cls) == []


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        ("NCCL[ \\t]+WARN", 8),
        ("(?:CUDA|cuda) error", 10),
        ("(?:ab){3}", 6),
        ("a?bc", 2),
        (".*", 0),
        ("(?:fatal|error)+ on gpu", 12),
    ],
)
def test_required_literals(pattern: str, literals: int) -> None:
    parsed = regex_shape.parse(pattern)
    assert parsed is not None and regex_shape.required_literals(parsed) == literals


@pytest.mark.parametrize(
    ("pattern", "word"),
    [
        ("(?=x)a", "lookahead"),
        ("(?!x)a", "lookahead"),
        ("(?<=x)a", "lookbehind"),
        ("(?<!x)a", "lookbehind"),
        (r"(a)\1", "backreference"),
        ("(?P<n>a)(?P=n)", "backreference"),
        ("(?>ab)c", "atomic"),
        ("a++b", "atomic"),
    ],
)
def test_unsupported_constructs_are_named(pattern: str, word: str) -> None:
    parsed = regex_shape.parse(pattern)
    assert parsed is not None
    (reason,) = regex_shape.unsupported(parsed)
    assert reason.startswith("unsupported: ") and word in reason


def test_patterns_python_cannot_read_are_left_to_the_engines() -> None:
    assert regex_shape.parse(r"GPU \d+ lost\z") is None  # RE2 syntax Python 3.11 lacks

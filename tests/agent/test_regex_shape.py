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
        # Python's parser factors a shared prefix out ((x|xy) becomes x(?:|y)); the empty branch it leaves still
        # marks branches that start alike, which the message names (issue 9: these slipped through)
        (r"(?:ab|a)+c", [OVERLAP]),
        (r"(x|xy)*z", [OVERLAP]),
        (r"(?:a|aa)+b", [OVERLAP]),  # exponential: "aaaa" splits into a/aa in Fibonacci-many ways
        (r"(?:GPU |GPU \d+ )+lost", [NESTED, OVERLAP]),
        (r"(?:rank|r)*x", [OVERLAP]),
        (r"(?:err|)+x", [OVERLAP]),  # an explicit empty branch: the repeat can take it any number of times
        (r"(?:ab|ac)+", []),  # factored to a[bc]: one class, no alternation left
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


@pytest.mark.parametrize(
    ("pattern", "python", "literals"),
    [
        (r"\p{L}+Error: \p{Lu}", r"[\s\S]+Error: [\s\S]", 7),
        (r"\pL\PN\p{^Greek}x", r"[\s\S][\s\S][\s\S]x", 1),
        (r"[\p{L}\d]+ lost", r"[\s\S\d]+ lost", 5),
        (r"[[:alpha:]]+Error: ", r"[A-Za-z]+Error: ", 7),  # Python read [[:alpha:] as a class, then ":]" literal
        (r"[[:^space:]]+x", r"[\s\S]+x", 1),
        (r"[]a]b", r"[]a]b", 1),
        (r"\QGPU (3)\E lost", r"GPU\ \(3\) lost", 12),
        (r"\x{41}\x{263a} lost", "A\u263a lost", 7),
        (r"GPU \d+ lost\z", r"GPU \d+ lost\Z", 9),
        (r"(?<gpu>\d+) lost", r"(?P<gpu>\d+) lost", 5),
        (r"(?<=x)a(?<!y)", r"(?<=x)a(?<!y)", 1),  # lookbehinds stay, to be refused as unsupported
    ],
)
def test_re2_syntax_is_read_in_its_python_form(pattern: str, python: str, literals: int) -> None:
    assert regex_shape.python_syntax(pattern) == python
    parsed = regex_shape.parse(pattern)
    assert parsed is not None and regex_shape.required_literals(parsed) == literals


def test_unicode_classes_under_a_repeat_are_checked() -> None:
    assert shape(r"(?:\p{L}+ )+failed") == [NESTED]
    assert shape(r"(?:\pL|\pN)*x") == [OVERLAP]  # two classes of any character: they overlap


def test_patterns_nobody_can_read_parse_to_none() -> None:
    assert regex_shape.parse(r"GPU (\d+ lost") is None
    assert regex_shape.parse(r"GPU \x{zz} lost") is None


@pytest.mark.parametrize(
    ("pattern", "found"),
    [
        (r".*error.*", True),
        (r"^.*Traceback", True),  # anchors aside
        (r"uncorrectable ECC.*$", True),
        (r"NVRM: Xid .*GPU has fallen off the bus", False),  # inside, .* joins two parts of the message
        (r".+error", False),
        (r"(.*)error", False),  # a group: left to the other checks
    ],
)
def test_padding_is_a_leading_or_trailing_dot_star(pattern: str, found: bool) -> None:
    parsed = regex_shape.parse(pattern)
    assert parsed is not None and regex_shape.padded(parsed) == ([regex_shape.PADDED] if found else [])

"""small_int: numbers off log text, None for anything int() would choke on or no real counter reaches."""

from __future__ import annotations

import pytest

from crashcart.parsers.numbers import MAX_DIGITS, small_int


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("79", 79),
        (b"290", 290),  # the rank prefixes are matched on bytes
        ("18446744073709551615", 2**64 - 1),  # a uint64 NCCL SeqNum at its largest
        ("007", 7),
        ("9" * (MAX_DIGITS + 1), None),
        ("9" * 5000, None),  # int() raises ValueError past 4,300 digits
        ("²", None),  # isdigit() but not a decimal digit: int() raises
        ("٣", None),  # an Arabic-Indic digit: int() reads it, but no program prints ranks so
        ("", None),
        ("-1", None),
        ("2-3", None),  # srun's `tasks 2-3`
        (" 3", None),
    ],
)
def test_small_int(text: str | bytes, expected: int | None) -> None:
    assert small_int(text) == expected


def test_the_bound_is_the_callers() -> None:
    assert (small_int("1234", max_digits=3), small_int("123", max_digits=3)) == (None, 123)

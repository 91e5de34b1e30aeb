"""rich's word-wrapped exception message: when a line break is a wrap, beside the lines rich printed."""

from __future__ import annotations

from crashcart.parsers.richtracebacks import RICH_DEFAULT_WIDTH, rejoin_for

# bigcode-project/starcoder#77: a 71-column box, and the message rich wrapped at the same width under it
BOX_BOTTOM = "╰─────────────────────────────────────────────────────────────────────╯"
WRAPPED = [
    "AssertionError: Check batch related parameters. train_batch_size is not",
    "equal to micro_batch_per_gpu * gradient_acc_step * world_size 64 != 4 *",
    "8 * 1",
]
# xieyuser/GS-LIVM#12: a message's own next line, after a line the next word would have fitted on
OWN_LINES = [
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",  # noqa: E501
]


def test_a_line_is_a_wrap_when_the_next_word_would_not_have_fitted_in_the_box() -> None:
    rejoin = rejoin_for(len(BOX_BOTTOM))
    assert rejoin is not None
    assert rejoin(WRAPPED[0], WRAPPED[1]) == " " and rejoin(WRAPPED[1], WRAPPED[2]) == " "
    assert rejoin(OWN_LINES[0], OWN_LINES[1]) is None


def test_a_box_of_richs_default_width_says_nothing_of_the_consoles() -> None:
    assert rejoin_for(RICH_DEFAULT_WIDTH) is None

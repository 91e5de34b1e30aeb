"""rich's word-wrapped exception message: when a line break is a wrap, beside the lines rich printed."""

from __future__ import annotations

import io

from rich.console import Console
from rich.traceback import Traceback

from crashcart.knowledge.records import LineRef
from crashcart.parsers.richtracebacks import RICH_DEFAULT_WIDTH, rejoin_for
from crashcart.parsers.structure import StructureReader, Structures

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


def rich_chain() -> list[str]:
    """A chained exception as rich itself prints it (Textualize/rich:rich/traceback.py, an 80-column console
    without colour): a box, the exception, "During handling ...", and the next box."""
    console = Console(width=80, file=io.StringIO(), color_system=None)

    def lookup() -> None:
        raise KeyError("model_type")

    try:
        try:
            lookup()
        except KeyError as e:
            raise ValueError("unrecognised configuration") from e
    except ValueError:
        console.print(Traceback())
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue().rstrip("\n").split("\n")


def read_lines(lines: list[str]) -> Structures:
    reader = StructureReader(lambda text, no: LineRef(file="train.log", line=no, text=text))
    reader.feed("".join(line + "\n" for line in lines).encode(), 0, len(lines))
    return reader.finish()


def test_a_rich_chain_is_one_record_whole_or_cut_at_its_top() -> None:
    lines = rich_chain()
    assert lines[0].startswith("╭") and "The above exception was the direct cause of the following exception:" in lines
    for cut in (0, 1, 3):  # the whole box, or an excerpt that starts inside the first box
        [tb] = read_lines(lines[cut:]).tracebacks
        assert tb.kind == "rich"
        first, second = tb.chain
        assert (first.exc_type, first.message, first.frames[-1].function) == ("KeyError", "'model_type'", "lookup")
        assert (second.exc_type, second.relation) == ("ValueError", "cause")
        assert second.message == "unrecognised configuration"


def test_two_ranks_rich_chains_interleaved_behind_their_prefixes_are_a_record_each() -> None:
    # rich_chain() as two ranks print it behind torchrun's `[rankN]:` prefixes, their lines interleaved, the
    # excerpt starting inside the first boxes
    lines = rich_chain()[1:]
    merged = [f"[rank{rank}]: {line}".rstrip() for line in lines for rank in (0, 1)]
    tracebacks = read_lines(merged).tracebacks
    assert [tb.start.text[:8] for tb in tracebacks] == ["[rank0]:", "[rank1]:"]
    for tb in tracebacks:
        assert [(e.exc_type, e.relation) for e in tb.chain] == [("KeyError", None), ("ValueError", "cause")]
        assert all(e.ref.text.startswith(tb.start.text[:8]) for e in tb.chain)

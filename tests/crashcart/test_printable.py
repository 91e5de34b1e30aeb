"""printable: colour codes dropped, every other control character shown as a visible escape, the rest kept."""

from __future__ import annotations

import pytest

from crashcart.printable import printable, printable_name


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        # loguru's colours as datatrove wrote them to a log file (huggingface/datatrove#131)
        (
            "\x1b[32m2024-03-22 07:26:34.220\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36mdatatrove.utils.logging\x1b[0m:"
            "\x1b[36madd_task_logger\x1b[0m:\x1b[36m47\x1b[0m - \x1b[1mLaunching pipeline for rank=275\x1b[0m",
            "2024-03-22 07:26:34.220 | INFO     | datatrove.utils.logging:add_task_logger:47 - Launching pipeline "
            "for rank=275",
        ),
        # tqdm redirected to a file: its updates are split by CR, not by newlines (replicate/cog-llama-template#25)
        (
            "Training Epoch2:  33%|███▎      | 3/9 [00:22<00:44,  7.35s/it]\r"
            "Training Epoch2:  44%|████▍     | 4/9 [00:34<00:45,  9.19s/it]",
            "Training Epoch2:  33%|███▎      | 3/9 [00:22<00:44,  7.35s/it]\\r"
            "Training Epoch2:  44%|████▍     | 4/9 [00:34<00:45,  9.19s/it]",
        ),
        # escape sequences by kind (ECMA-48): OSC window title and clipboard, a bare ESC, 8-bit CSI and C1
        ("a\x1b]0;title\x07b", "a\\x1b]0;title\\x07b"),
        ("\x1b]52;c;cm0gLXJm\x1b\\", "\\x1b]52;c;cm0gLXJm\\x1b\\"),
        ("\x1bc", "\\x1bc"),
        ("\x9b31mred", "red"),
        ("next\x85line", "next\\x85line"),
        # C0, DEL, an undecodable file-name byte (surrogateescape) and a bidi override
        ("nul\x00 bs\x08 del\x7f", "nul\\x00 bs\\x08 del\\x7f"),
        ("node\udcff.log", "node\\udcff.log"),
        ("evil\u202egol.txt", "evil\\u202egol.txt"),
        # what stays: tabs, non-ASCII text, brackets (markup is the renderer's business)
        ("col\tcol café 日本 [bold]x[/]", "col\tcol café 日本 [bold]x[/]"),
        ("", ""),
    ],
)
def test_printable(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_newlines_are_escaped_unless_kept() -> None:
    assert printable("a.log\nb") == "a.log\\nb"
    assert printable("line one\nline\x1b[2K two", newlines=True) == "line one\nline two"


def test_a_file_name_keeps_its_colour_codes_escaped() -> None:
    # the name must be found again as it is: `blob\x1b[2J00`, not `blob00`, which is another file
    assert printable_name("logs/blob\x1b[2J00\n.log") == "logs/blob\\x1b[2J00\\n.log"
    assert printable_name(printable_name("a\x07")) == "a\\x07"  # escaping twice changes nothing

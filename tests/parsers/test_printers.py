"""Which lines after a header its printer wrote, and when a console's cut shows: real lines beside the answer."""

from __future__ import annotations

from crashcart.parsers.printers import printed_lines, printer_of, wrap_width

# huggingface/accelerate#1519: accelerate's multi-node launcher puts `[host:rank]:` before every line
ACCELERATE = [
    "[gpu187:0]:Traceback (most recent call last):",
    '[gpu187:0]:  File "/ssd003/home/junma/MedSAM/v2-1_mgpus_train_enc_dec.py", line 292, in <module>',
    "[gpu187:0]:    main()",
]
OTHER_RANK = "[gpu187:1]:torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB (GPU 1; 79.35 GiB total capacity; 33.66 GiB already allocated; 735.69 MiB free; 34.89 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"  # noqa: E501


def test_any_prefix_the_following_lines_repeat_is_the_printers() -> None:
    printer = printer_of(ACCELERATE, ACCELERATE[0].index("Traceback"))
    assert printer.body(ACCELERATE[2]) == "    main()"
    assert printer.body(OTHER_RANK) is None


# ymcui/Chinese-LLaMA-Alpaca-2#97 (the dev set's d-loss-scale-001): a progress bar that ended no line
PROGRESS_LEAD = "  0%|                                                        | 95/97976 [1:28:37<1514:49:16, 55.71s/it]Traceback (most recent call last):"  # noqa: E501
# bahjat-kawar/ddrm#19: a logger's lead on the header line only
LOGGER_LEAD = [
    "ERROR - main.py - 2023-04-21 16:51:11,266 - Traceback (most recent call last):",
    r'  File "C:\Users\aless\main.py", line 164, in main',
]


def test_a_lead_the_following_lines_do_not_repeat_is_no_prefix() -> None:
    assert printer_of([PROGRESS_LEAD], PROGRESS_LEAD.index("Traceback")).prefix is None
    printer = printer_of(LOGGER_LEAD, LOGGER_LEAD[0].index("Traceback"))
    assert printer.prefix is None and printer.body(LOGGER_LEAD[1]) == LOGGER_LEAD[1]


def test_the_header_line_is_read_from_its_header_on() -> None:
    view = printed_lines(LOGGER_LEAD, LOGGER_LEAD[0].index("Traceback"))
    assert [line.body for line in view.lines] == ["Traceback (most recent call last):", LOGGER_LEAD[1]]


# Vision-CAIR/MiniGPT-4#237: two lines of one length, each followed by a line of its own (a rule)
EQUAL_LENGTHS = [
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    "============================================================",
]
# huggingface/open-r1#620: a 137-column console cut these
CUT_AT_137 = [
    "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: [Rank 3] Watchdog caught colle",  # noqa: E501
    "ctive operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800011 millisecond",  # noqa: E501
    "s before timing out.",
]


def test_a_consoles_width_shows_only_where_lines_of_that_width_go_on_in_the_next() -> None:
    assert wrap_width(CUT_AT_137) == 137
    assert wrap_width(EQUAL_LENGTHS) is None
    assert wrap_width(CUT_AT_137[:2]) is None  # one cut at an unusual width is not enough

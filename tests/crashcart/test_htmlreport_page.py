"""crashcart/htmlreport/page.py: whatever a log holds, `esc` turns it into text that opens no tag, closes no
attribute and carries no control character, and loses nothing `printable` keeps."""

from __future__ import annotations

import html
import re

from hypothesis import given
from hypothesis import strategies as st

from crashcart.htmlreport.page import esc, page, table
from crashcart.printable import printable

# C0 but tab, DEL, C1, bidi embeddings/overrides/isolates, lone surrogates: what a terminal or a page would act on
CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


@given(st.text())
def test_escaped_text_opens_no_tag_and_keeps_the_printable_text(text: str) -> None:
    out = esc(text)
    assert not set(out) & set("<>\"'")
    assert not CONTROLS.search(out)
    assert html.unescape(out) == printable(text)


def test_the_page_has_no_script_and_fetches_nothing() -> None:
    doc = page("t", [table(["a"], [[esc("</td><script>")]])])
    assert "<script" not in doc and "&lt;script&gt;" in doc
    assert "default-src 'none'" in doc  # a browser refuses any fetch or script the page might still name

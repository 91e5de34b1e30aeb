"""Real message texts of one length that vary from the first word on: source lines of the standard library.

A Python traceback prints each frame's source line (four spaces in), so a log of many tracebacks holds
thousands of distinct lines of one word count; Drain puts them in one leaf of its tree (the `<*>` one, once
100 first words are taken). Read from this interpreter's own modules, in name order.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path


def traceback_source_lines(count: int, words: int) -> list[str]:
    """The first `count` distinct source lines of `words` words, as a traceback prints them."""
    found: dict[str, None] = {}
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            code = line.strip()
            if len(code.split()) == words and not code.startswith("#"):
                found["    " + code] = None
                if len(found) == count:
                    return list(found)
    raise AssertionError(f"the standard library has only {len(found)} lines of {words} words")

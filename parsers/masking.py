"""Masking of the variable parts of a log line before templating, so Drain3 sees one shape per message.

Only cache misses reach this code (see templater.py), so clarity wins over speed here.
"""

from __future__ import annotations

import re

# Order matters: the earlier alternatives claim their text before the generic number rule sees it.
_MASKS: list[tuple[str, str]] = [
    ("NCCLHOST", r"^[\w.-]+:\d+:\d+(?= \[\d+\])"),  # NCCL's host:pid:tid prefix
    ("IP", r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?:<\d+>|:\d+)?(?![\w.])"),
    ("HEX", r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b"),
    ("PATH", r"(?<![\w.])(?:[A-Za-z]:)?(?:[/\\][\w.@+~-]+){2,}[/\\]?"),
    # (?:[a-z]+[-_])*[a-z]* is (?:[a-z]+[-_]?)* without its nested quantifier (exponential backtracking).
    ("HOST", r"(?i:\b(?:node|gpu|host|worker|compute|dgx|nid|cn|ip)[-_]?(?:[a-z]+[-_])*[a-z]*\d+(?:[-_]\d+)*\b)"),
    ("RANK", r"(?i:(?<=\brank)[ =:]?\d+|(?<=\blocal_rank)[ =:]+\d+)"),
    ("NUM", r"(?<![\w<])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?:%|ms|s|GiB|MiB|GB|MB|KB)?(?![\w>])"),
]
_MASK_RE = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in _MASKS))
_LABEL = {
    "NCCLHOST": "<HOST>",
    "IP": "<IP>",
    "HEX": "<HEX>",
    "PATH": "<PATH>",
    "HOST": "<HOST>",
    "RANK": " <RANK>",
    "NUM": "<NUM>",
}


def _replace(match: re.Match[str]) -> str:
    return _LABEL[match.lastgroup or "NUM"]


def mask(text: str) -> str:
    """The line with numbers, hex, IPs, paths, hostnames and ranks replaced by <NUM>, <HEX>, ..."""
    return _MASK_RE.sub(_replace, text)

"""Expand Slurm hostlists (`node[01-03,07]`, `gpu-a[1-2]-b[3-4]`) in Python.

Why not `scontrol show hostnames`: batch triage also runs on recorded sacct output, on machines without Slurm,
and one subprocess per job would dominate a large batch. The grammar is small: comma-separated items, each a
name with zero or more bracketed range lists; several brackets multiply (rack x node), padding follows the
range's first bound (`01-10` -> 01 .. 10).
"""

from __future__ import annotations

import math
import re
from itertools import product

from crashcart.knowledge.errors import InputError
from crashcart.parsers.numbers import small_int

MAX_HOSTS = 100_000  # a typo like node[1-99999999] must not eat the machine
_EMPTY = {"", "None assigned", "(null)", "None"}
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def expand_hostlist(text: str) -> list[str]:
    """Every host named by a Slurm hostlist, in Slurm's order; [] for sacct's `None assigned`."""
    text = text.strip()
    if text in _EMPTY:
        return []
    hosts: list[str] = []
    for item in _split_top(text):
        hosts += _expand_item(item, text)
        if len(hosts) > MAX_HOSTS:
            raise InputError(f"hostlist {text!r} names more than {MAX_HOSTS} hosts: check the NodeList in sacct")
    return hosts


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item for item in items if item]


def _expand_item(item: str, whole: str) -> list[str]:
    """One name with bracket groups: the product of the groups, literal parts kept."""
    parts: list[list[str]] = []
    literals: list[str] = []
    pos = 0
    for match in re.finditer(r"\[([^\[\]]*)\]", item):
        literals.append(item[pos : match.start()])
        parts += [[literals[-1]], _expand_ranges(match.group(1), whole)]
        pos = match.end()
    literals.append(item[pos:])
    parts.append([literals[-1]])
    if any(ch in literal for literal in literals for ch in "[]"):
        raise InputError(f"unbalanced brackets in hostlist {whole!r}: check the NodeList in sacct")
    if math.prod(map(len, parts)) > MAX_HOSTS:  # several brackets multiply: count before making the names
        raise InputError(f"hostlist {whole!r} names more than {MAX_HOSTS} hosts: check the NodeList in sacct")
    return ["".join(combo) for combo in product(*parts)]


def _expand_ranges(body: str, whole: str) -> list[str]:
    """`01-03,07` -> 01 02 03 07 (width from the first bound, as Slurm pads)."""
    out: list[str] = []
    for piece in body.split(","):
        match = _RANGE.match(piece.strip())
        low = small_int(match.group(1)) if match else None
        high = small_int(match.group(2) or match.group(1)) if match else None
        if match is None or low is None or high is None:
            raise InputError(f"bad range {piece!r} in hostlist {whole!r}: check the NodeList in sacct")
        if high < low:
            raise InputError(f"descending range {piece!r} in hostlist {whole!r}: check the NodeList in sacct")
        if len(out) + high - low >= MAX_HOSTS:
            raise InputError(f"hostlist {whole!r} names more than {MAX_HOSTS} hosts: check the NodeList in sacct")
        width = len(match.group(1))
        out += [str(n).zfill(width) for n in range(low, high + 1)]
    return out

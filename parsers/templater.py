"""Drain3 templating behind two caches, so millions of near-identical lines cost a lookup each.

Level 1 keys on the raw line with every digit turned into '0' (one C-level `bytes.translate` per block):
iteration lines that differ only in their numbers share a key. Level 2 keys on the fully masked line. Only lines
new to both reach Drain3.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from drain3.drain import Drain, LogCluster

from crashcart.parsers.attribution import block_prefixes, rank_of_groups, strip_prefixes
from crashcart.parsers.masking import mask

_DIGITS = bytes.maketrans(b"0123456789", b"0000000000")
TEMPLATE_CHARS = 2000  # longer lines are templated on their head only
FAST_CACHE_MAX = 200_000  # level-1 entries before the cache is reset (it is only a cache)
MAX_CLUSTERS = 50_000


@dataclass
class TemplateCounts:
    """Per-file tallies: (rank, template index) -> [count, first line no, first line, last no, last line]."""

    stats: dict[tuple[int | None, int], list[Any]] = field(default_factory=dict)
    lines: int = 0


class Templater:
    """Assigns every line a template index; one instance serves all files of a process."""

    def __init__(self) -> None:
        self._drain = Drain(sim_th=0.4, depth=4, max_children=100, max_clusters=MAX_CLUSTERS)
        self._fast: dict[bytes, int] = {}
        self._masked: dict[str, int] = {}
        self._clusters: list[LogCluster] = []
        self._by_cluster_id: dict[int, int] = {}

    def template_index(self, line: bytes) -> int:
        """The template index of one line (the slow path; the hot loop is `count_block`)."""
        key = line[:TEMPLATE_CHARS].translate(_DIGITS, b"\r")
        found = self._fast.get(key)
        return found if found is not None else self._miss(line, key)

    def _miss(self, line: bytes, key: bytes) -> int:
        if len(self._fast) >= FAST_CACHE_MAX:
            self._fast.clear()
        masked = mask(strip_prefixes(line[:TEMPLATE_CHARS].decode("utf-8", "replace").rstrip("\r")))
        index = self._masked.get(masked)
        if index is None:
            cluster, _ = self._drain.add_log_message(masked)
            index = self._by_cluster_id.get(cluster.cluster_id)
            if index is None:
                index = self._by_cluster_id[cluster.cluster_id] = len(self._clusters)
                self._clusters.append(cluster)
            if len(self._masked) < FAST_CACHE_MAX:
                self._masked[masked] = index
        self._fast[key] = index
        return index

    def count_block(self, block: bytes, first_line_no: int, counts: TemplateCounts, ranked: bool) -> None:
        """Tally every line of block (whole lines; line numbers start after first_line_no).

        The per-line work is all C: one translate and two splits for the keys, one findall for the
        rank prefixes, a Counter for the counts and dict builds for last (and, when needed, first) positions.
        Python code then runs once per distinct (prefix, key) pair of the block, not once per line.
        """
        lines = block.split(b"\n")
        keys = block.translate(_DIGITS, b"\r").split(b"\n")
        prefixes = block_prefixes(block) if ranked else None
        if lines[-1] == b"":
            lines.pop()
        n = len(lines)
        counts.lines += n
        del keys[n:]  # the empty piece after a final newline
        if prefixes is not None:
            del prefixes[n:]
        pairs: list[Any] = list(zip(prefixes, keys, strict=True)) if prefixes is not None else keys
        tally = Counter(pairs)
        last = dict(zip(pairs, range(n), strict=True))
        first: dict[Any, int] | None = None  # built only for a block that brings a new (rank, template) slot
        fast, stats = self._fast, counts.stats
        for pair, count in tally.items():
            groups, key = pair if prefixes is not None else ((), pair)
            if not key:
                continue  # an empty line (of an LF or a CRLF file)
            key = key[:TEMPLATE_CHARS]
            j = last[pair]
            index = fast.get(key)
            if index is None:
                index = self._miss(lines[j], key)
            slot = (rank_of_groups(groups), index)
            entry = stats.get(slot)
            if entry is None:
                if first is None:
                    first = dict(zip(reversed(pairs), range(n - 1, -1, -1), strict=True))
                i = first[pair]
                stats[slot] = [count, first_line_no + i + 1, lines[i], first_line_no + j + 1, lines[j]]
            else:
                entry[0] += count
                entry[3], entry[4] = first_line_no + j + 1, lines[j]

    def template(self, index: int) -> str:
        """The template text as Drain3 has generalised it so far."""
        return str(self._clusters[index].get_template())


def template_id(template: str) -> str:
    """A short stable id for a template text, equal across files, processes and runs."""
    return hashlib.blake2b(template.encode(), digest_size=6).hexdigest()

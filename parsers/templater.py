"""Drain3 templating behind two caches, so millions of near-identical lines cost a lookup each.

Level 1 keys on the raw line with each run of hex characters that holds a digit made one '0' (one native pass
per block, `_linekeys.tally`): lines that differ only in their numbers, pointers, ids or timestamps, of any
length, share a key. Level 2 keys on the fully masked line. Only lines new to both reach Drain3.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from drain3.drain import Drain, LogCluster

from crashcart.parsers._linekeys import keys as line_keys
from crashcart.parsers._linekeys import tally as line_tally
from crashcart.parsers.attribution import rank_prefix, strip_prefixes
from crashcart.parsers.masking import mask

TEMPLATE_CHARS = 2000  # longer lines are templated on their head only
KEPT_LINE_BYTES = 2000  # of a slot's first and last line, as much as evidence ever shows (a line may be 8 MB)
FAST_CACHE_MAX = 200_000  # level-1 entries before the cache is reset (it is only a cache)
MAX_CLUSTERS = 50_000
LEAF_CLUSTERS = 64  # live clusters one leaf of the tree holds; the least recently matched one goes first


@dataclass
class TemplateCounts:
    """Per-file tallies: (rank, template index) -> [count, first line no, first line, last no, last line].

    The lines are kept to their first KEPT_LINE_BYTES: memory grows with the templates, not with their lines.
    """

    stats: dict[tuple[int | None, int], list[Any]] = field(default_factory=dict)
    lines: int = 0


class BoundedDrain(Drain):
    """Drain with a bound on the clusters of one leaf (lines of one token count and first token).

    Drain compares a new line with every cluster of its leaf, so lines of one shape but ever new wording (40k
    distinct exception messages) cost O(clusters) each, O(n^2) in all. Past LEAF_CLUSTERS, the leaf's least
    recently matched cluster is dropped from `id_to_cluster`, which is how Drain's own `max_clusters` LRU
    retires one: `fast_match` skips it and the next insert into the leaf clears it out. A line of a retired
    cluster's shape starts a new cluster, whose template text (and so its template id) is the same once it has
    seen as much variety; what a line already matched stays matched (the templater's caches hold its index).
    """

    def __init__(self, leaf_clusters: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.leaf_clusters = leaf_clusters
        self._used: dict[int, int] = {}  # cluster id -> when it was last created or matched
        self._clock = 0

    def fast_match(
        self, cluster_ids: Sequence[int], tokens: list[str], sim_th: float, include_params: bool
    ) -> LogCluster | None:
        live = [cid for cid in cluster_ids if cid in self.id_to_cluster]
        excess = len(live) - self.leaf_clusters
        if excess > 0:
            for cid in sorted(live, key=self._used.__getitem__)[:excess]:
                del self.id_to_cluster[cid], self._used[cid]
            live = [cid for cid in live if cid in self._used]  # in the leaf's order: Drain's tie-break
        match: LogCluster | None = super().fast_match(live, tokens, sim_th, include_params)
        if match is not None:
            self._touch(match.cluster_id)
        return match

    def add_seq_to_prefix_tree(self, root_node: Any, cluster: LogCluster) -> None:
        self._touch(cluster.cluster_id)
        super().add_seq_to_prefix_tree(root_node, cluster)

    def _touch(self, cluster_id: int) -> None:
        self._clock += 1
        self._used[cluster_id] = self._clock


class Templater:
    """Assigns every line a template index; one instance serves all files of a process."""

    def __init__(self) -> None:
        self._drain = BoundedDrain(LEAF_CLUSTERS, sim_th=0.4, depth=4, max_children=100, max_clusters=MAX_CLUSTERS)
        self._fast: dict[bytes, int] = {}
        self._masked: dict[str, int] = {}
        self._clusters: list[LogCluster] = []
        self._by_cluster_id: dict[int, int] = {}

    def template_index(self, line: bytes) -> int:
        """The template index of one line (the slow path; the hot loop is `count_block`)."""
        key = line_keys(line[:TEMPLATE_CHARS])
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

        The per-line work is native (`_linekeys.tally`: one pass that keys each line, launcher prefix kept as
        it is when the file is `ranked`, and counts it with its first and last place). Python then runs once
        per distinct key of the block, not once per line.
        """
        n, rows = line_tally(block, ranked, TEMPLATE_CHARS)
        counts.lines += n
        fast, stats, keep = self._fast, counts.stats, KEPT_LINE_BYTES
        for key, prefix, count, i, i_start, i_end, j, j_start, j_end in rows:
            shape = line_keys(key[:prefix]) + key[prefix:] if prefix else key  # the ranks' prefixes collapsed too
            index = fast.get(shape)
            if index is None:
                index = self._miss(block[j_start:j_end], shape)
            slot = (rank_prefix(key) if prefix else None, index)
            entry = stats.get(slot)
            if entry is None:
                stats[slot] = [
                    count,
                    first_line_no + i + 1,
                    block[i_start:i_end][:keep],
                    first_line_no + j + 1,
                    block[j_start:j_end][:keep],
                ]
            else:
                entry[0] += count
                if first_line_no + j + 1 > entry[3]:  # two keys of one slot: the later line is its last
                    entry[3], entry[4] = first_line_no + j + 1, block[j_start:j_end][:keep]

    def template(self, index: int) -> str:
        """The template text as Drain3 has generalised it so far."""
        return str(self._clusters[index].get_template())


@lru_cache(maxsize=1 << 14)
def template_id(template: str) -> str:
    """A short stable id for a template text, equal across files, processes and runs (cached: every file of a
    per-rank job has the same few hundred templates)."""
    return hashlib.blake2b(template.encode(), digest_size=6).hexdigest()

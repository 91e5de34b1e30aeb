"""One streaming pass per source: rule hits from the fast filter and template tallies, in blocks.

Files are independent, so a job of many files is split across processes, each with its own Hyperscan
database and Drain3 state; template ids are hashes of template text, so the results merge by value.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from knowledge.rules import Role, Rule
from parsers.attribution import Attribution, attribute_line, attribution_from_path, has_rank_prefixes
from parsers.models import FileScan, LineRef, RuleHit, TemplateStat
from parsers.rulefilter import BlockHit, RuleFilter
from parsers.sources import Source, read_blocks
from parsers.templater import TemplateCounts, Templater, template_id
from parsers.timestamps import parse_timestamp

MAX_HITS_PER_RULE_RANK = 5  # kept per (rule, rank) in one file; the rest are counted
MAX_HITS_PER_RULE = 2000
PARALLEL_MIN_BYTES = 32 << 20  # below this, process start-up costs more than it saves
MAX_TEXT = 2000  # evidence text is cut here (a 10 MB line stays a 10 MB line on disk, not in reports)
NEW_TAIL = 0.1  # a template first seen in the last 10% of a file's lines is new to it...
NEW_MIN_LINES = 200  # ... in a file long enough for "the job had been running" to mean something


class FileScanner:
    """Scans sources one after another with one rule filter and one templater."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.filter = RuleFilter(rules)
        self.templater = Templater()

    def scan(self, src: Source) -> FileScan:
        started = time.perf_counter()
        where = attribution_from_path(src.display)
        counts = TemplateCounts()
        hits: list[RuleHit] = []
        per_rule: Counter[tuple[int, int | None]] = Counter()
        dropped = line_no = size = 0
        ranked: bool | None = None
        for block in read_blocks(src):
            size += len(block)
            if ranked is None:
                ranked = has_rank_prefixes(block[:65536].split(b"\n")[:50])
            found = self.filter.scan(block)
            dropped += self._keep_hits(found, block, line_no, src.display, where, hits, per_rule)
            self.templater.count_block(block, line_no, counts, ranked)
            line_no = counts.lines
        templates = self._template_stats(src.display, where, counts, hits)
        return FileScan(
            file=src.display, node=where.node, rank=where.rank, lines=counts.lines, bytes=size,
            hits=hits, hits_dropped=dropped, templates=templates, seconds=time.perf_counter() - started,
        )

    def _keep_hits(
        self, found: list[BlockHit], block: bytes, base: int, file: str, where: Attribution,
        hits: list[RuleHit], per_rule: Counter[tuple[int, int | None]],
    ) -> int:
        """Append confirmed hits to `hits` up to the per-rule caps; return how many were dropped."""
        dropped = 0
        no, pos = base, 0
        for hit in found:
            no += block.count(b"\n", pos, hit.start)
            pos = hit.start
            ref = line_ref(hit.text, no + 1, where, file)
            rule = self.filter.rules[hit.rule_index]
            slot, total = (hit.rule_index, ref.rank), (hit.rule_index, -1)
            # Context lines (one NCCL init line per rank) are all kept up to the total: they map ranks to hosts.
            per_rank_full = rule.role is not Role.CONTEXT and per_rule[slot] >= MAX_HITS_PER_RULE_RANK
            if per_rank_full or per_rule[total] >= MAX_HITS_PER_RULE:
                dropped += 1
                continue
            per_rule[slot] += 1
            per_rule[total] += 1
            hits.append(RuleHit(
                rule_id=rule.id, failure_class=rule.failure_class, action=rule.resolved_action,
                role=rule.role, priority=rule.priority, stage=rule.stage, ref=ref, captures=hit.captures,
            ))
        return dropped

    def _template_stats(
        self, file: str, where: Attribution, counts: TemplateCounts, hits: list[RuleHit]
    ) -> list[TemplateStat]:
        hit_templates: dict[int, set[str]] = {}
        for hit in hits:
            index = self.templater.template_index(hit.ref.text.encode())
            hit_templates.setdefault(index, set()).add(hit.rule_id)
        stats = []
        for (rank, index), (count, first_no, first, last_no, last) in counts.stats.items():
            text = self.templater.template(index)
            stats.append(TemplateStat(
                template_id=template_id(text), template=text, node=where.node,
                rank=rank if rank is not None else where.rank, count=count,
                first=line_ref(_decode(first), first_no, where, file),
                last=line_ref(_decode(last), last_no, where, file),
                rule_ids=sorted(hit_templates.get(index, ())),
                new=counts.lines >= NEW_MIN_LINES and first_no > counts.lines * (1 - NEW_TAIL),
            ))
        return stats


def _decode(line: bytes) -> str:
    return line[:MAX_TEXT].decode("utf-8", "replace").rstrip("\r")


def line_ref(text: str, line_no: int, where: Attribution, file: str) -> LineRef:
    """A LineRef with node/rank from the line itself, falling back to the file's name."""
    own = attribute_line(text)
    return LineRef(
        file=file, line=line_no, text=text[:MAX_TEXT], node=own.node or where.node,
        rank=own.rank if own.rank is not None else where.rank, time=parse_timestamp(text),
    )


def _scan_group(rules: Sequence[Rule], sources: Sequence[Source]) -> list[FileScan]:
    scanner = FileScanner(rules)
    return [scanner.scan(src) for src in sources]


def scan_sources(
    sources: Sequence[Source], rules: Sequence[Rule], workers: int | None = None
) -> list[FileScan]:
    """Scan every source; large multi-file jobs are split across `workers` processes by size."""
    workers = workers or min(os.cpu_count() or 1, 8)
    total = sum(s.size for s in sources)
    on_disk = [s for s in sources if s.path is not None]
    if workers < 2 or len(on_disk) < 2 or total < PARALLEL_MIN_BYTES or len(on_disk) != len(sources):
        scans = _scan_group(rules, sources)
    else:
        groups = _balance(sources, workers)
        with ProcessPoolExecutor(max_workers=len(groups)) as pool:
            scans = [s for part in pool.map(_scan_group, [rules] * len(groups), groups) for s in part]
    order = {s.display: i for i, s in enumerate(sources)}
    return sorted(scans, key=lambda s: order[s.file])


def _balance(sources: Sequence[Source], workers: int) -> list[list[Source]]:
    """Greedy split by size: largest file first into the lightest group."""
    groups: list[list[Source]] = [[] for _ in range(min(workers, len(sources)))]
    loads = [0] * len(groups)
    for src in sorted(sources, key=lambda s: s.size, reverse=True):
        i = loads.index(min(loads))
        groups[i].append(src)
        loads[i] += src.size
    return [g for g in groups if g]

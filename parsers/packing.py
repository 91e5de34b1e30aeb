"""FileScans as plain tuples for the trip back from a scan worker, and FileScans again on arrival.

Pickle sends a pydantic record through its own __getstate__/__setstate__ in Python, one call per record; a job
of 20k small files holds 460k template stats, each with one or two line records, and sending them that way cost
the workers as much as the scan. Tuples of str, int and None pickle in C. Every field of the records goes, in
their declared order, so a field added to a record travels too.

On arrival the records are made again from the values the worker's records held, as they are
(records.trusted): a 1,024-rank-file job brings 95k records back, made here while the workers still scan.
"""

from __future__ import annotations

from typing import Any

from crashcart.knowledge.records import LineRef, trusted
from crashcart.parsers.models import FileScan, MetricPoint, RuleHit, TemplateStat

Packed = tuple[tuple[Any, ...], list[tuple[Any, ...]]]  # the scan's other fields, then one tuple per template

_SCAN = tuple(name for name in FileScan.model_fields if name != "templates")
_STAT = tuple(TemplateStat.model_fields)
_HIT = tuple(RuleHit.model_fields)
_POINT = tuple(MetricPoint.model_fields)
_REF = tuple(LineRef.model_fields)
_FIRST, _LAST = _STAT.index("first"), _STAT.index("last")
_HITS, _METRICS, _HIT_REF = _SCAN.index("hits"), _SCAN.index("metrics"), _HIT.index("ref")


def pack(scan: FileScan) -> Packed:
    """The scan as tuples: its templates, rule hits and progress points, the many records of a scan (its
    tracebacks and stack dumps, few and nested, go as records)."""
    head = [getattr(scan, name) for name in _SCAN]
    head[_HITS] = [_pack_hit(hit) for hit in scan.hits]
    head[_METRICS] = [tuple(getattr(point, name) for name in _POINT) for point in scan.metrics]
    return tuple(head), [_pack_stat(stat) for stat in scan.templates]


def unpack(packed: Packed) -> FileScan:
    head, stats = packed
    fields = dict(zip(_SCAN, head, strict=True))
    fields["hits"] = [_unpack_hit(row) for row in fields["hits"]]
    fields["metrics"] = [trusted(MetricPoint, dict(zip(_POINT, row, strict=True))) for row in fields["metrics"]]
    fields["templates"] = [_unpack_stat(row) for row in stats]
    return trusted(FileScan, fields)


def _pack_hit(hit: RuleHit) -> tuple[Any, ...]:
    row = [getattr(hit, name) for name in _HIT]
    row[_HIT_REF] = _pack_ref(hit.ref)
    return tuple(row)


def _unpack_hit(row: tuple[Any, ...]) -> RuleHit:
    fields = dict(zip(_HIT, row, strict=True))
    fields["ref"] = _unpack_ref(fields["ref"])
    return trusted(RuleHit, fields)


def _pack_stat(stat: TemplateStat) -> tuple[Any, ...]:
    row = [getattr(stat, name) for name in _STAT]
    row[_FIRST] = _pack_ref(stat.first)
    row[_LAST] = None if stat.last is stat.first else _pack_ref(stat.last)  # one line, one record
    return tuple(row)


def _unpack_stat(row: tuple[Any, ...]) -> TemplateStat:
    fields = dict(zip(_STAT, row, strict=True))
    first = fields["first"] = _unpack_ref(fields["first"])
    fields["last"] = first if fields["last"] is None else _unpack_ref(fields["last"])
    return trusted(TemplateStat, fields)


def _pack_ref(ref: LineRef) -> tuple[Any, ...]:
    return tuple(getattr(ref, name) for name in _REF)


def _unpack_ref(row: tuple[Any, ...]) -> LineRef:
    return trusted(LineRef, dict(zip(_REF, row, strict=True)))

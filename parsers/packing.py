"""FileScans as plain tuples for the trip back from a scan worker, and FileScans again on arrival.

Pickle sends a pydantic record through its own __getstate__/__setstate__ in Python, one call per record; a job
of 20k small files holds 460k template stats, each with one or two line records, and sending them that way cost
the workers as much as the scan. Tuples of str, int and None pickle in C; the records are made again on
arrival, field by field, from the values the worker's records were validated with. Every field of the records
goes, in their declared order, so a field added to a record travels too.
"""

from __future__ import annotations

from typing import Any

from crashcart.knowledge.records import LineRef
from crashcart.parsers.models import FileScan, TemplateStat

Packed = tuple[tuple[Any, ...], list[tuple[Any, ...]]]  # the scan's other fields, then one tuple per template

_SCAN = tuple(name for name in FileScan.model_fields if name != "templates")
_STAT = tuple(TemplateStat.model_fields)
_REF = tuple(LineRef.model_fields)
_FIRST, _LAST = _STAT.index("first"), _STAT.index("last")


def pack(scan: FileScan) -> Packed:
    """The scan as tuples; its rule hits, few by the scan's caps, go as records."""
    return tuple(getattr(scan, name) for name in _SCAN), [_pack_stat(stat) for stat in scan.templates]


def unpack(packed: Packed) -> FileScan:
    head, stats = packed
    return FileScan(**dict(zip(_SCAN, head, strict=True)), templates=[_unpack_stat(row) for row in stats])


def _pack_stat(stat: TemplateStat) -> tuple[Any, ...]:
    row = [getattr(stat, name) for name in _STAT]
    row[_FIRST] = _pack_ref(stat.first)
    row[_LAST] = None if stat.last is stat.first else _pack_ref(stat.last)  # one line, one record
    return tuple(row)


def _unpack_stat(row: tuple[Any, ...]) -> TemplateStat:
    fields = dict(zip(_STAT, row, strict=True))
    first = fields["first"] = _unpack_ref(fields["first"])
    fields["last"] = first if fields["last"] is None else _unpack_ref(fields["last"])
    return TemplateStat(**fields)


def _pack_ref(ref: LineRef) -> tuple[Any, ...]:
    return tuple(getattr(ref, name) for name in _REF)


def _unpack_ref(row: tuple[Any, ...]) -> LineRef:
    return LineRef(**dict(zip(_REF, row, strict=True)))

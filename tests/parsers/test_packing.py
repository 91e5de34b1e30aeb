"""parsers/packing.py: FileScans as plain tuples for the trip from a scan worker, and back."""

from __future__ import annotations

import pickle
from pathlib import Path

from pydantic import BaseModel

from crashcart.knowledge.rules import load_rules
from crashcart.parsers.models import FileScan
from crashcart.parsers.packing import _SCAN, pack, unpack
from crashcart.parsers.scan import scan_sources
from crashcart.parsers.sources import discover

HEALTHY = Path(__file__).resolve().parents[2] / "knowledge" / "healthy"
# PyTorch's message for a kernel fault, under torchrun's rank prefix (a line the cuda rules know).
CUDA_ERROR = b"[default1]:RuntimeError: CUDA error: an illegal memory access was encountered\n"


def _scan(tmp_path: Path) -> FileScan:
    """A real scan: torchrun's own log (timestamps, repeated and one-off templates, rank prefixes), one hit."""
    log = tmp_path / "node03" / "stdout.log"
    log.parent.mkdir()
    log.write_bytes((HEALTHY / "torchrun.log").read_bytes() + CUDA_ERROR)
    [scan] = scan_sources(discover([str(tmp_path)]).sources, load_rules(), workers=1)
    return scan


def _plain(value: object) -> bool:
    if isinstance(value, tuple | list):
        return all(_plain(v) for v in value)
    return not isinstance(value, BaseModel)


def test_a_scan_comes_back_equal_through_pickle(tmp_path: Path) -> None:
    scan = _scan(tmp_path)
    assert scan.hits and any(t.first.time for t in scan.templates) and any(t.rank is not None for t in scan.templates)
    back = unpack(pickle.loads(pickle.dumps(pack(scan))))
    assert back == scan


def test_templates_travel_as_plain_values(tmp_path: Path) -> None:
    _, rows = pack(_scan(tmp_path))
    assert rows and all(_plain(row) for row in rows)


def test_a_line_seen_once_stays_one_record(tmp_path: Path) -> None:
    scan = _scan(tmp_path)
    back = unpack(pickle.loads(pickle.dumps(pack(scan))))
    shared = [t.last is t.first for t in scan.templates]
    assert any(shared) and not all(shared)  # the log has templates seen once and templates seen again
    assert [t.last is t.first for t in back.templates] == shared


def test_hits_and_progress_points_travel_as_plain_values(tmp_path: Path) -> None:
    log = tmp_path / "node03" / "stdout.log"
    log.parent.mkdir()
    log.write_bytes(b"[default1]: iteration 10 | lm loss: 2.5 | grad norm: 1.2\n" + CUDA_ERROR)
    [scan] = scan_sources(discover([str(tmp_path)]).sources, load_rules(), workers=1)
    assert scan.hits and scan.metrics
    head, _ = pack(scan)
    assert _plain(head[_SCAN.index("hits")]) and _plain(head[_SCAN.index("metrics")])
    back = unpack(pickle.loads(pickle.dumps((head, []))))
    assert back.hits == scan.hits and back.metrics == scan.metrics
    assert back.hits[0].ref.model_fields_set == scan.hits[0].ref.model_fields_set  # as validated records have

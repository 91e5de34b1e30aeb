"""The whole JSON report of `crashcart triage`, pinned: a change of the contract shows up here and is deliberate.

The snapshot is tests/crashcart/snapshots/triage_xid79.json. Fields that change from run to run (timings, the
throughput in stats) are masked, and absolute paths are made relative to the repository. When a change is
meant, rewrite it with `.venv/bin/python -m pytest tests/crashcart/test_report_snapshot.py --snapshot-update`
and review the diff of the snapshot in the commit.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
MASK = "<masked>"
VOLATILE = {"stats": {"seconds", "mb_per_s"}, "timings": None}  # None: every field of it
MAX_DIFF_LINES = 200


def mask(report: dict[str, Any]) -> dict[str, Any]:
    """The report with volatile fields masked and the repository's absolute paths relative to it."""
    out = _relative(report)
    for section, fields in VOLATILE.items():
        values = out.get(section) or {}
        for field in values if fields is None else fields & values.keys():
            values[field] = MASK
    return out


def _relative(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _relative(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_relative(v) for v in value]
    if isinstance(value, str):
        return value.replace(f"{REPO}/", "").replace(str(REPO), ".")
    return value


def assert_matches_snapshot(data: dict[str, Any], name: str, update: bool) -> None:
    """Compare with snapshots/NAME as indented JSON; on a mismatch, fail with a unified diff."""
    path = SNAPSHOTS / name
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    if not path.exists():
        pytest.fail(f"no snapshot {path.relative_to(REPO)}: write it with --snapshot-update and review it")
    want = path.read_text()
    if text == want:
        return
    diff = list(
        difflib.unified_diff(
            want.splitlines(), text.splitlines(), f"{name} (snapshot)", f"{name} (this run)", lineterm=""
        )
    )
    shown = diff[:MAX_DIFF_LINES] + (
        [f"... {len(diff) - MAX_DIFF_LINES} more diff lines"] if len(diff) > MAX_DIFF_LINES else []
    )
    pytest.fail(
        f"the report differs from {path.relative_to(REPO)}; if the change is meant, rerun with "
        "--snapshot-update and commit the snapshot:\n" + "\n".join(shown),
        pytrace=False,
    )


def test_xid79_report_matches_its_snapshot(cli, request: pytest.FixtureRequest) -> None:
    code, out, err = cli("triage", str(REPO / "examples" / "xid79-job" / "logs"), "--format", "json", "--no-memory")
    assert code == 0, err
    report = mask(json.loads(out))
    assert report["paths"] == ["examples/xid79-job/logs"]  # the absolute path the test gave, made relative
    assert_matches_snapshot(report, "triage_xid79.json", request.config.getoption("--snapshot-update"))


def test_mask_hides_what_changes_between_runs() -> None:
    report = {
        "paths": [f"{REPO}/examples/x"],
        "stats": {"files": 3, "seconds": 0.52, "mb_per_s": 1.9},
        "timings": {"scan": 0.29, "llm": 0.0},
        "diagnosis": {"summary": f"see {REPO}/examples/x/a.log"},
    }
    assert mask(report) == {
        "paths": ["examples/x"],
        "stats": {"files": 3, "seconds": MASK, "mb_per_s": MASK},
        "timings": {"scan": MASK, "llm": MASK},
        "diagnosis": {"summary": "see examples/x/a.log"},
    }

"""A labeled set made of a few cases of another (their labels and logs copied), for tests that need a small one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def evalset_subset(source: Path, root: Path, ids: list[str]) -> Path:
    """root/labels.jsonl and root/cases/ holding the cases of `source` whose ids are in `ids`."""
    (root / "cases").mkdir(parents=True)
    rows = [json.loads(line) for line in (source / "labels.jsonl").read_text().splitlines() if line.strip()]
    kept = [r for r in rows if r["id"] in ids]
    for r in kept:
        shutil.copy(source / r["path"], root / r["path"])
    (root / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    return root

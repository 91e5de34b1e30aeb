"""The real logs at hand, for tests that hold a native pass or a shortcut to its reference on real text.

The mined corpus (both halves: only read here, never tuned on), the shared dev set, the Loghub samples and the
healthy corpus.
"""

from __future__ import annotations

from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]


def real_log_paths() -> list[Path]:
    """Every real log file in the repository and beside it (../shared)."""
    candidates = [
        *(_REPO / "evals" / "corpus").glob("*/cases/*.log"),
        *(_REPO.parent / "shared" / "evalsets").glob("*/*/*"),
        *(_REPO.parent / "shared" / "data").rglob("*.log"),
        *(_REPO / "knowledge" / "healthy").glob("*.log"),
    ]
    return [path for path in candidates if path.is_file()]


def real_log_lines() -> list[str]:
    """Every distinct line of those logs, sorted."""
    lines: set[str] = set()
    for path in real_log_paths():
        lines.update(path.read_text(encoding="utf-8", errors="replace").splitlines())
    return sorted(lines)

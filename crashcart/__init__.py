"""crashcart: diagnose failed training jobs from their logs.

Public API: `triage(paths) -> Report` and `evaluate(dir) -> EvalReport`. They load lazily, so that
`crashcart.knowledge.errors` can be imported by every layer without pulling in the whole pipeline.
"""

from __future__ import annotations

from typing import Any

__all__ = ["evaluate", "triage"]


def __getattr__(name: str) -> Any:
    if name == "triage":
        from crashcart.api import triage

        return triage
    if name == "evaluate":
        from crashcart.evals.runner import evaluate

        return evaluate
    raise AttributeError(f"module 'crashcart' has no attribute {name!r}")

"""Loading an evaluation set: `DIR/labels.jsonl`, one labeled failed job per line.

Each line is a JSON object. The fields crashcart scores on (`id`, `path`, `failure_class`, `action`,
`evidence`, `faulty_nodes`) are strict: a wrong type or an unknown class is an error, because a silently
mis-read label corrupts every figure. Three free-text fields for people are also allowed: `source`
(where the log came from), `why` (the reason for the label) and `notes`. Any other field is an error, so
a typo such as `faulty_node` is caught rather than ignored.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import Field, ValidationError

from crashcart.knowledge.errors import EvalSetError
from crashcart.knowledge.records import Strict
from crashcart.knowledge.taxonomy import Action, FailureClass

LABELS_FILE = "labels.jsonl"


class LabeledCase(Strict):
    """One failed job and the diagnosis a correct triage gives it."""

    id: str = Field(min_length=1)
    path: str = Field(min_length=1)  # relative to the set dir: one log file or a folder of logs
    failure_class: FailureClass
    action: Action
    evidence: list[str] = []
    faulty_nodes: list[str] = []
    source: str | None = None
    why: str | None = None
    notes: str | None = None

    def resolve(self, root: Path) -> Path:
        """The case's log file or folder on disk (labels hold paths relative to the set dir)."""
        return Path(root) / self.path


def load_evalset(root: Path) -> list[LabeledCase]:
    """Read and check `root/labels.jsonl`; every case path must exist so a run never fails midway."""
    root = Path(root)
    if not root.is_dir():
        raise EvalSetError(f"eval set {root} is not a directory: pass the folder that holds {LABELS_FILE}")
    labels = root / LABELS_FILE
    if not labels.is_file():
        raise EvalSetError(f"{labels} not found: an eval set needs a {LABELS_FILE}, one labeled case a line")
    try:
        text = labels.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalSetError(f"{labels} cannot be read ({exc}): make it a readable UTF-8 file") from exc

    cases: list[LabeledCase] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        case = _parse_line(labels, lineno, line)
        where = f"{labels}:{lineno}"
        if case.id in seen:
            raise EvalSetError(
                f"{where}: duplicate case id {case.id!r} (first on line {seen[case.id]}): give each case its own id"
            )
        seen[case.id] = lineno
        if Path(case.path).is_absolute():
            raise EvalSetError(f"{where}: path {case.path!r} is absolute: make it relative to {root}")
        if not case.resolve(root).exists():
            raise EvalSetError(
                f"{where}: case {case.id!r} path {case.path!r} does not exist under {root}: fix the path or add the log"
            )
        cases.append(case)
    if not cases:
        raise EvalSetError(f"{labels} has no cases: add one JSON object a line")
    return cases


def _parse_line(labels: Path, lineno: int, line: str) -> LabeledCase:
    """One JSONL line as a case, or an EvalSetError naming the file, the line and what to change."""
    where = f"{labels}:{lineno}"
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise EvalSetError(f"{where}: bad JSON ({exc.msg} at column {exc.colno}): fix the line") from exc
    if not isinstance(raw, dict):
        raise EvalSetError(f"{where}: expected a JSON object, got {type(raw).__name__}: one case per line")
    try:
        return LabeledCase.model_validate(raw)
    except ValidationError as exc:
        raise EvalSetError(f"{where}: {_describe(exc, raw)}") from exc


def _describe(exc: ValidationError, raw: dict) -> str:
    """The first validation problem in one line, with the accepted values where there is a fixed set."""
    err = exc.errors()[0]
    field = ".".join(str(part) for part in err["loc"]) or "<case>"
    top = err["loc"][0] if err["loc"] else None
    if top == "failure_class" and err["type"] == "enum":
        allowed = ", ".join(c.value for c in FailureClass)
        return f"unknown failure_class {raw.get('failure_class')!r}: use one of {allowed}"
    if top == "action" and err["type"] == "enum":
        allowed = ", ".join(a.value for a in Action)
        return f"unknown action {raw.get('action')!r}: use one of {allowed}"
    if err["type"] == "missing":
        return f"missing required field {field!r}: add it"
    if err["type"] == "extra_forbidden":
        return f"unknown field {field!r}: remove it or put free text under 'notes'"
    return f"field {field!r}: {err['msg']}: fix the value"

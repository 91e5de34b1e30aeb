"""`--fail-on`: which diagnoses make `triage` and `batch` exit 1, so a pipeline or a Slurm epilog can branch on
the verdict without parsing the report."""

from __future__ import annotations

from collections.abc import Iterable

from crashcart.knowledge.errors import InputError
from crashcart.knowledge.taxonomy import INFRA_CLASSES, FailureClass

FAIL_EXIT = 1
# `any` is every verdict that names a failure: unknown (too little evidence, or nothing failed) is not one.
KEYWORDS: dict[str, frozenset[FailureClass]] = {
    "infra": frozenset(INFRA_CLASSES),
    "any": frozenset(FailureClass) - {FailureClass.UNKNOWN},
}
HELP = (
    "exit 1 when the diagnosis (batch: any job's) is in this set: comma-separated classes, "
    f"infra ({', '.join(sorted(c.value for c in INFRA_CLASSES))}) or any (every class but unknown)"
)
EXIT_CODES = (
    "Exit codes: 0 done (and no --fail-on match), 1 the diagnosis matched --fail-on, "
    "2 bad input or usage, 70 internal error, 130 interrupted."
)


def parse_fail_on(spec: str | None) -> frozenset[FailureClass]:
    """The classes `spec` names (empty when None); InputError naming the bad word and the valid ones."""
    if spec is None:
        return frozenset()
    words = [w.strip().lower() for w in spec.split(",")]
    if not any(words):
        raise InputError("--fail-on needs class names, infra or any (e.g. --fail-on gpu_hardware,network)")
    chosen: set[FailureClass] = set()
    for word in words:
        if word in KEYWORDS:
            chosen |= KEYWORDS[word]
            continue
        try:
            chosen.add(FailureClass(word))
        except ValueError:
            valid = ", ".join([*KEYWORDS, *(c.value for c in FailureClass)])
            raise InputError(f"--fail-on: {word!r} is not a failure class; use {valid}") from None
    return frozenset(chosen)


def fails(wanted: frozenset[FailureClass], found: Iterable[FailureClass]) -> bool:
    """Whether any verdict found is one --fail-on asked to fail on."""
    return any(c in wanted for c in found)

"""What real failures with an exception like this one turned out to be: a naive Bayes prior learned from labels.

A ValueError or KeyError that no rule explains is, by its name, a bug; but in the public threads of the corpus
(evals/corpus/dev) most such exceptions were settings the user got wrong or records of a dataset, and which one
shows in the message's words, the frames' packages and where it was raised. The prior holds, per class, how
often each such feature was seen (agent/exception_reading.py makes the features and asks); it speaks only where
it is sure and no rule knew the exception.

Written by hand, not with scikit-learn: counting and one sum of logs per class is all it is, and scikit-learn's
import alone (about 0.5 s) would cost more than the diagnosis of a small log.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from pydantic import Field, PrivateAttr

from crashcart.knowledge.records import Strict
from crashcart.knowledge.taxonomy import FailureClass

PRIOR_FILE = Path(__file__).parent / "exception_prior.json"
SMOOTHING = 1.0  # Laplace: a feature never seen with a class neither rules the class out nor favours it


class Reading(Strict):
    """The prior's answer for one exception: the likeliest class and its posterior probability."""

    failure_class: FailureClass
    probability: float = Field(ge=0.0, le=1.0)
    cases: int  # labeled cases of that class the prior learned from


class ExceptionPrior(Strict):
    """Per class: how many labeled cases, and the weight of each feature over that class's exceptions."""

    cases: dict[FailureClass, int]
    features: dict[FailureClass, dict[str, float]]
    _vocabulary: frozenset[str] = PrivateAttr(default=frozenset())
    _mass: dict[FailureClass, float] = PrivateAttr(default_factory=dict)  # a class's smoothed feature weight

    def read(self, features: Iterable[str]) -> Reading | None:
        """The posterior's best class for an exception with these features; None without any known feature."""
        vocab = self._vocabulary
        known = [f for f in set(features) if f in vocab]
        if not known or not self.cases:
            return None
        total_cases = sum(self.cases.values())
        scores: dict[FailureClass, float] = {}
        for cls, count in self.cases.items():
            seen, mass = self.features.get(cls, {}), self._mass[cls]
            scores[cls] = math.log(count / total_cases) + sum(
                math.log((seen.get(f, 0.0) + SMOOTHING) / mass) for f in known
            )
        best = max(scores, key=lambda c: scores[c])
        top = scores[best]
        probability = 1.0 / sum(math.exp(s - top) for s in scores.values())
        return Reading(failure_class=best, probability=round(probability, 4), cases=self.cases[best])

    def model_post_init(self, context: object, /) -> None:
        self._vocabulary = frozenset(f for seen in self.features.values() for f in seen)
        smoothed = SMOOTHING * len(self._vocabulary)
        self._mass = {cls: sum(self.features.get(cls, {}).values()) + smoothed for cls in self.cases}


def learn(cases: Iterable[tuple[FailureClass, list[frozenset[str]]]]) -> ExceptionPrior:
    """A prior from labeled cases, each the feature sets of its exceptions; a case's exceptions share one vote,
    so a log with twenty ranks' tracebacks counts as much as one with a single traceback."""
    counts: dict[FailureClass, int] = {}
    weights: dict[FailureClass, dict[str, float]] = {}
    for cls, exceptions in cases:
        distinct = set(exceptions)
        if not distinct:
            continue
        counts[cls] = counts.get(cls, 0) + 1
        seen = weights.setdefault(cls, {})
        for features in distinct:
            for f in features:
                seen[f] = seen.get(f, 0.0) + 1.0 / len(distinct)
    ordered = sorted(counts, key=lambda c: c.value)
    return ExceptionPrior(
        cases={c: counts[c] for c in ordered},
        features={c: {f: round(w, 4) for f, w in sorted(weights[c].items())} for c in ordered},
    )


@lru_cache(maxsize=1)
def load_prior() -> ExceptionPrior:
    """The shipped prior (learned from the corpus' development half by `python -m crashcart.evals.prior`)."""
    return ExceptionPrior.model_validate_json(PRIOR_FILE.read_bytes())

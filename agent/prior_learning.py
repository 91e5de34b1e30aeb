"""Learning the exception prior (knowledge/exception_prior.py) from labeled failed jobs.

Each job is scanned as triage scans it, and the most telling exception of each of its tracebacks gives the
prior one example of the job's class, whether or not a rule knew it: the exceptions no rule knows are too few
in a corpus the rules were written from to learn from alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from crashcart.agent.exception_reading import features
from crashcart.agent.tracebacks import telling_exceptions
from crashcart.knowledge.exception_prior import ExceptionPrior, learn
from crashcart.knowledge.rules import Rule, load_rules
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.parsers.scan import scan_sources
from crashcart.parsers.sources import discover


def learn_prior(cases: Iterable[tuple[Path, FailureClass]], rules: Sequence[Rule] | None = None) -> ExceptionPrior:
    """The prior of these labeled jobs (a log file or a folder of logs each, with the class it failed of)."""
    return learn(_examples(cases, list(rules) if rules is not None else load_rules()))


def _examples(
    cases: Iterable[tuple[Path, FailureClass]], rules: list[Rule]
) -> Iterator[tuple[FailureClass, list[frozenset[str]]]]:
    for path, failure_class in cases:
        scans = scan_sources(discover([str(path)]).sources, rules, 1)
        yield failure_class, [features(exc, tb) for exc, tb in telling_exceptions(scans)]

"""The exception prior: counting labeled cases' features, and reading an exception's class off them."""

from __future__ import annotations

import math

from crashcart.knowledge.exception_prior import ExceptionPrior, learn, load_prior
from crashcart.knowledge.taxonomy import FailureClass

CONFIG, DATA = FailureClass.CONFIG_ERROR, FailureClass.DATA_ERROR


def _toy() -> ExceptionPrior:
    return learn(
        [
            (CONFIG, [frozenset({"type:ValueError", "word:argument"})]),
            (CONFIG, [frozenset({"type:ValueError", "word:must"})]),
            (DATA, [frozenset({"type:IndexError", "word:index"}), frozenset({"type:KeyError", "word:column"})]),
        ]
    )


def test_a_case_counts_once_however_many_exceptions_it_holds() -> None:
    prior = _toy()
    assert prior.cases == {CONFIG: 2, DATA: 1}
    assert math.isclose(sum(prior.features[DATA].values()), 2 * 1.0)  # two features an exception, half a vote each
    assert prior.features[DATA]["type:IndexError"] == 0.5
    assert prior.features[CONFIG]["type:ValueError"] == 2.0


def test_the_likeliest_class_is_read_with_its_probability() -> None:
    prior = _toy()
    config = prior.read({"type:ValueError", "word:argument", "word:unseen"})
    data = prior.read({"type:IndexError", "word:index", "word:column"})
    assert config is not None and data is not None
    assert (config.failure_class, config.cases) == (CONFIG, 2)
    assert data.failure_class is DATA
    assert 0.5 < config.probability <= 1.0
    weaker = prior.read({"type:ValueError"})
    assert weaker is not None and weaker.probability < config.probability  # fewer telling features, less sure


def test_an_exception_with_nothing_the_prior_has_seen_gets_no_reading() -> None:
    assert _toy().read({"type:ZeroDivisionError", "word:division"}) is None
    assert ExceptionPrior(cases={}, features={}).read({"type:ValueError"}) is None


def test_the_shipped_prior_loads_and_reads_a_settings_error_as_one() -> None:
    prior = load_prior()
    assert sum(prior.cases.values()) >= 300  # learned from the corpus' development half
    reading = prior.read({"type:ValueError", "word:argument", "word:must", "word:specified", "raiser:transformers"})
    assert reading is not None and reading.failure_class is CONFIG

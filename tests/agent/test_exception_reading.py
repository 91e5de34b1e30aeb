"""What the prior reads of an exception, and when its reading is asked for at all."""

from __future__ import annotations

from real_tracebacks import HUB_REFUSED, UNPACK
from traceback_records import traceback_from

from crashcart.agent.exception_reading import SURE, features, learned
from crashcart.agent.traceback_findings import LEARNED
from crashcart.knowledge.exception_prior import ExceptionPrior, learn
from crashcart.knowledge.taxonomy import FailureClass


def _sure_of(cls: FailureClass, *examples: str) -> ExceptionPrior:
    """A prior that has seen the exceptions of `examples` only in cases of `cls` (and one unrelated case)."""
    seen = [features(tb.chain[-1], tb) for tb in map(traceback_from, examples)]
    return learn([(cls, seen)] * 20 + [(FailureClass.CODE_BUG, [frozenset({"type:NameError"})])])


def test_what_is_read_of_an_exception() -> None:
    tb = traceback_from(HUB_REFUSED)
    found = features(tb.chain[-1], tb)
    assert {"type:HTTPError", "kind:python", "raiser:requests", "package:huggingface_hub"} <= found
    assert {"word:unauthorized", "word:client", "word:config"} <= found
    assert not any(f.startswith("word:") and any(c.isdigit() for c in f) for f in found)  # no numbers, no ids


def test_a_sure_prior_names_the_class_of_a_library_exception() -> None:
    prior = _sure_of(FailureClass.CONFIG_ERROR, HUB_REFUSED)
    tb = traceback_from(HUB_REFUSED)
    finding = learned(tb.chain[-1], tb, prior)
    assert finding is not None
    assert (finding.failure_class, finding.priority) == (FailureClass.CONFIG_ERROR, LEARNED)
    assert finding.reason == "learned_reading"
    assert "config error" in finding.label


def test_an_unsure_prior_says_nothing() -> None:
    tb = traceback_from(HUB_REFUSED)
    seen = [features(tb.chain[-1], tb)]
    split = learn([(FailureClass.CONFIG_ERROR, seen), (FailureClass.NETWORK, seen)])
    reading = split.read(features(tb.chain[-1], tb))
    assert reading is not None and reading.probability < SURE
    assert learned(tb.chain[-1], tb, split) is None


def test_the_users_own_code_is_never_read() -> None:
    own = traceback_from(UNPACK)
    assert learned(own.chain[-1], own, _sure_of(FailureClass.DATA_ERROR, UNPACK)) is None


def test_a_bare_line_is_read_by_its_type_and_words_alone() -> None:
    # hqucv/siamban#31 (evals/corpus/dev): no frames, so no raiser, kind or package to read
    bare = traceback_from("ValueError: Number of processes must be at least 1\n")
    words = {"word:number", "word:processes", "word:must", "word:least"}
    assert features(bare.chain[-1], bare) == {"type:ValueError", *words}

"""The shipped exception prior is what the corpus' development half teaches today."""

from __future__ import annotations

from pathlib import Path

from crashcart.evals.prior import main, prior_of
from crashcart.knowledge.exception_prior import ExceptionPrior, load_prior

DEV = Path(__file__).parents[2] / "evals" / "corpus" / "dev"


def test_the_shipped_prior_is_learned_from_the_development_half_as_it_is_now() -> None:
    # a new case, rule or parser change that alters what is learned shows here: run
    # `python -m crashcart.evals.prior evals/corpus/dev` and commit the file
    assert prior_of(DEV) == load_prior()


def test_the_command_writes_a_prior_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "prior.json"
    main([str(DEV), "-o", str(out)])
    assert ExceptionPrior.model_validate_json(out.read_bytes()) == load_prior()

"""Learn the shipped exception prior from an eval set: `python -m crashcart.evals.prior evals/corpus/dev`.

Only the corpus' development half is ever learned from; the held-out half measures what was learned.
tests/evals/test_prior.py checks that the shipped file is what this learns from the development half today.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from crashcart.api import ExceptionPrior, learn_prior
from crashcart.evals.dataset import load_evalset
from crashcart.knowledge.exception_prior import PRIOR_FILE


def prior_of(root: Path) -> ExceptionPrior:
    """The prior learned from every case of the eval set at `root`."""
    return learn_prior((case.resolve(root), case.failure_class) for case in load_evalset(root))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m crashcart.evals.prior", description=__doc__)
    parser.add_argument("evalset", type=Path, help="the eval set to learn from (DIR/labels.jsonl)")
    parser.add_argument("-o", "--out", type=Path, default=PRIOR_FILE, help="where to write the prior")
    args = parser.parse_args(argv)
    args.out.write_text(prior_of(args.evalset).model_dump_json(indent=0) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

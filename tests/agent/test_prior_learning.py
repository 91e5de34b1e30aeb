"""Learning the prior from labeled logs: each traceback's telling exception is one example of its job's class."""

from __future__ import annotations

from pathlib import Path

from real_tracebacks import HUB_REFUSED, UNPACK

from crashcart.agent.prior_learning import learn_prior
from crashcart.knowledge.taxonomy import FailureClass


def test_each_jobs_tracebacks_teach_its_class(tmp_path: Path) -> None:
    hub, unpack, quiet = tmp_path / "hub.log", tmp_path / "unpack", tmp_path / "quiet.log"
    hub.write_text(HUB_REFUSED)
    unpack.mkdir()
    for rank in range(4):  # four ranks print one traceback: still one case's vote
        (unpack / f"rank{rank}.log").write_text(UNPACK)
    quiet.write_text("nothing failed here\n")
    prior = learn_prior(
        [(hub, FailureClass.CONFIG_ERROR), (unpack, FailureClass.CODE_BUG), (quiet, FailureClass.NETWORK)]
    )
    # a job without a traceback teaches nothing
    assert prior.cases == {FailureClass.CODE_BUG: 1, FailureClass.CONFIG_ERROR: 1}
    assert prior.features[FailureClass.CONFIG_ERROR]["raiser:requests"] == 1.0
    assert prior.features[FailureClass.CODE_BUG]["type:ValueError"] == 1.0
    assert prior.features[FailureClass.CODE_BUG]["raiser:user"] == 1.0

"""crashcart's public Python API: what the CLI, the bot, batch triage, evals and users' scripts call.

Each name is a library function or record re-exported under one stable home, so callers never import the
layers below by their module paths.
"""

from __future__ import annotations

from crashcart.agent.consult import LLMOptions
from crashcart.agent.pipeline import triage
from crashcart.agent.prior_learning import learn_prior
from crashcart.agent.report import Report, ScanStats
from crashcart.knowledge.exception_prior import ExceptionPrior

__all__ = ["ExceptionPrior", "LLMOptions", "Report", "ScanStats", "learn_prior", "triage"]

"""The diagnosis record: what failed, where, the lines that prove it, and what to do next."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from crashcart.knowledge.records import Evidence, Strict
from crashcart.knowledge.taxonomy import Action, FailureClass, Stage


class Alternative(Strict):
    """A class the evidence also points to, ranked below the chosen one."""

    failure_class: FailureClass
    score: float  # the rules' signal score; for the model's answer, its confidence (0-1)
    source: Literal["rules", "llm"] = "rules"


class SimilarIncident(Strict):
    """A past incident close to the current job, as shown in a diagnosis."""

    id: str
    similarity: float
    failure_class: FailureClass
    action: Action
    resolution: str | None = None
    job: str
    created_at: datetime
    match: Literal["close", "weak", "distant"] = "distant"  # close: may decide; weak: only listed (agent/memory.py)


class Diagnosis(Strict):
    """One root cause for the job (the contract of DEVELOPERS.md plus what operators need)."""

    failure_class: FailureClass
    action: Action
    confidence: float = Field(ge=0.0, le=1.0)
    summary: str
    faulty_nodes: list[str] = []
    faulty_ranks: list[int] = []
    stage: Stage | None = None
    iteration: int | None = None
    evidence: list[Evidence] = []
    mitigation: list[str] = []
    # rules: a signature; structure: a traceback, a trend or the progress timeline (agent/diagnose.py)
    decided_by: Literal["rules", "structure", "memory", "llm", "none"] = "rules"
    alternatives: list[Alternative] = []
    similar: list[SimilarIncident] = []  # most similar past incidents, best first (empty without memory)
    novel: bool | None = None  # True: nothing in memory is similar; None: memory not consulted or empty


class ModelVerdict(Strict):
    """The model's answer where it contradicted a sure root-cause verdict of the rules, which stood."""

    failure_class: FailureClass
    action: Action
    confidence: float
    faulty_nodes: list[str] = []
    summary: str


class LLMUsage(Strict):
    """What one diagnosis cost, for the JSON report and for eval."""

    model: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    cost_usd: float | None = None
    samples: int = 0
    valid_answers: int = 0
    agreement: float = 0.0
    fallback: bool = False
    budget_exhausted: bool = False
    timed_out: bool = False  # the diagnosis's deadline (--llm-timeout) ended the model's work
    disagreement: ModelVerdict | None = None  # the model overruled by the rules' sure verdict
    errors: list[str] = Field(default_factory=list)
    redactions: dict[str, int] = Field(default_factory=dict)
    tool_calls: int = 0  # the model's calls of the log tools (agent/llm_tools.py)

"""Failure scenarios for the synthetic job generator: which lines a fault prints, where and when.

A scenario is data, in evals/scenarios.yaml beside this module: line templates with `{placeholders}` that
the generator fills per rank and node (`{rank}`, `{local_rank}`, `{node}`, `{iteration}`, `{ts}` ...; see
PLACEHOLDERS), and text several scenarios share written once as `${fragments}`. The lines are modelled on
what real jobs print (PyTorch's ProcessGroupNCCL watchdog, NCCL WARN lines, the NVIDIA driver's XID messages,
the kernel OOM killer, Megatron's tracebacks, srun/slurmstepd errors), so a triage that works on these has a
fair chance on real logs. This module holds the model, loads the file at import, and builds a scenario from
a real case's log.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from crashcart.knowledge.loading import load_versioned
from crashcart.knowledge.records import Strict
from crashcart.knowledge.taxonomy import FailureClass

# Every placeholder a template may use, with a sample value (templates are checked against it at load).
PLACEHOLDERS: dict[str, object] = {
    "rank": 59,
    "local_rank": 3,
    "node": "node07",
    "iteration": 1201,
    "ts": "1128 07:35:07.606841",
    "date": "2025-11-28 07:35:07",
    "iso": "2025-11-28T07:35:07",
    "pid": 41235,
    "tid": 41399,
    "agent_pid": 41102,
    "world_size": 128,
    "jobid": 4411923,
    "fault_node": "node07",
    "first_node": "node00",
    "peer_ip": "10.64.0.9",
    "ip": "10.64.0.8",
    "port": 44206,
    "pci": "61:00",
    "busid": "61000",
    "nic": "0c:00",
    "hca": 3,
    "seq": 14413,
    "seq_prev": 14412,
    "numel": 101187584,
    "timeout_ms": 600000,
    "elapsed_ms": 600042,
    "consumed": 1229824,
    "train_iters": 500000,
    "ckpt_dir": "/lustre/ckpt/gpt-175b",
    "task": 7,
}

SCENARIO_FILE = Path(__file__).parent / "scenarios.yaml"
SCHEMA_VERSION = 1
_FRAGMENT = re.compile(r"\$\{(\w+)\}")  # ${name}: a fragment of scenarios.yaml
_LINE_FIELDS = ("root_lines", "kernel_lines", "agent_lines", "symptom_lines", "scheduler_lines")


class Scenario(Strict):
    """One way a job dies: the lines each party prints, and how the job ends.

    root_lines go to the faulty rank (every node's logging rank when scope is "job"); kernel_lines to the
    faulty node's kernel log (syslog prefix added); agent_lines to its torchrun agent; symptom_lines to every
    rank of every other node (of every node when scope is "job") symptom_delay_s later; scheduler_lines to
    the Slurm job output scheduler_delay_s after the fault (None: at the very end).
    """

    name: str
    failure_class: FailureClass | None
    description: str = ""
    root_lines: list[str] = []
    kernel_lines: list[str] = []
    agent_lines: list[str] = []
    symptom_lines: list[str] = []
    scheduler_lines: list[str] = []
    exitcode: int = 1  # the faulty rank's exit status in the launcher's report (-9: SIGKILL, -6: SIGABRT)
    symptom_delay_s: float = 600.0
    scheduler_delay_s: float | None = None
    scope: Literal["node", "job"] = "node"
    node_dies: bool = False  # the faulty node prints nothing after the fault; the others are killed
    verbatim: bool = False  # root lines are written without launcher prefixes (text taken from a real log)
    evidence: list[str] = []  # substrings of the lines that prove the class (labels.jsonl's `evidence`)

    @field_validator("root_lines", "kernel_lines", "agent_lines", "symptom_lines", "scheduler_lines")
    @classmethod
    def _known_placeholders(cls, lines: list[str]) -> list[str]:
        for line in lines:
            try:
                line.format_map(PLACEHOLDERS)
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(
                    f"template {line!r} uses an unknown placeholder or bad braces ({exc});"
                    f" known: {', '.join(PLACEHOLDERS)}; write literal braces as {{{{ }}}}"
                ) from exc
        return lines


class ScenarioFile(Strict):
    """The shape of scenarios.yaml: shared text (fragments), and the scenarios with every ${fragment} expanded."""

    version: int = SCHEMA_VERSION
    fragments: dict[str, str | list[str]] = {}
    scenarios: list[Scenario] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _expand(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        known: dict[str, object] = {}  # the model checks the types once expanded
        for name, value in (data.get("fragments") or {}).items():
            known[name] = _expand_lines(value, known) if isinstance(value, list) else _inline(value, known)
        scenarios = [
            {k: _expand_lines(v, known) if k in _LINE_FIELDS and isinstance(v, list) else v for k, v in s.items()}
            if isinstance(s, dict)
            else s
            for s in data.get("scenarios") or []
        ]
        return {**data, "fragments": known, "scenarios": scenarios}

    @model_validator(mode="after")
    def _unique(self) -> ScenarioFile:
        names = [s.name for s in self.scenarios]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"scenario named twice: {', '.join(twice)}; give each its own name")
        return self


def _expand_lines(lines: list[object], known: dict[str, object]) -> list[object]:
    """A line that is only ${name} of a list fragment becomes its lines; ${name} of a text is replaced in place."""
    out: list[object] = []
    for line in lines:
        whole = _FRAGMENT.fullmatch(line) if isinstance(line, str) else None
        value = known.get(whole[1]) if whole else None
        if isinstance(value, list):
            out.extend(value)
        else:
            out.append(_inline(line, known))
    return out


def _inline(text: object, known: dict[str, object]) -> object:
    def fragment(match: re.Match[str]) -> str:
        value = known.get(match[1])
        if isinstance(value, list):
            raise ValueError(f"${{{match[1]}}} is a list of lines: use it as a line of its own, not inside {text!r}")
        if not isinstance(value, str):
            raise ValueError(
                f"unknown fragment ${{{match[1]}}} in {text!r}; define it under `fragments`, above its"
                f" first use (defined so far: {', '.join(known) or 'none'})"
            )
        return value

    return _FRAGMENT.sub(fragment, text) if isinstance(text, str) else text


def load_scenarios(path: Path = SCENARIO_FILE) -> ScenarioFile:
    """The scenario file validated, fragments expanded; any problem is a KnowledgeError naming the file."""
    return load_versioned(path, ScenarioFile, "scenario file", SCHEMA_VERSION)


_FILE = load_scenarios()
SCENARIOS: dict[str, Scenario] = {s.name: s for s in _FILE.scenarios}
# What every healthy rank prints when a peer stops answering; a real case injected with --case gets them too.
TIMEOUT_SYMPTOMS: list[str] = list(_FILE.fragments["timeout_symptoms"])


def scenario_from_case(
    path: Path, failure_class: FailureClass | str | None, evidence: list[str] | None = None
) -> Scenario:
    """A scenario whose root lines are a real case's log text, written verbatim on the faulty rank."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    lines = [ln.replace("{", "{{").replace("}", "}}") for ln in text.splitlines()]
    cls = FailureClass(failure_class) if failure_class is not None else None
    return Scenario(
        name=f"case:{Path(path).stem}",
        failure_class=cls,
        description=f"real log text from {Path(path).name}",
        root_lines=lines,
        symptom_lines=TIMEOUT_SYMPTOMS,
        verbatim=True,
        evidence=evidence or [],
    )

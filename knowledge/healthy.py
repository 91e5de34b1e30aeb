"""The healthy corpus: lines of training jobs that went well, which no proposed rule may match.

A rule that fires on a healthy run would send every job to the wrong fix, so a proposal is tried on these
lines before anyone confirms it (agent/proposals.py). The corpus is data in knowledge/healthy/: one .log file
per program family or launcher layout (Megatron, DeepSpeed, HF Trainer, torchrun, NCCL INFO, Slurm, kernel:
the benign lines that look alarming, and a small healthy job in the eval generator's per-node and Slurm
layouts), and sources.yaml, which says for each file which programs print such lines and where they come from.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator

from crashcart.knowledge.errors import KnowledgeError
from crashcart.knowledge.loading import load_versioned
from crashcart.knowledge.records import Frozen, Strict

HEALTHY_DIR = Path(__file__).parent / "healthy"
SOURCES = "sources.yaml"
SCHEMA_VERSION = 1


class HealthySample(Frozen):
    """One sample file: the real programs that print its lines, and how the file was made."""

    file: str = Field(pattern=r"^[\w.-]+\.log$")
    printed_by: list[str] = Field(min_length=1)
    origin: str = Field(min_length=8)


class HealthySources(Strict):
    """The shape of healthy/sources.yaml; the samples are read in its order."""

    version: int = SCHEMA_VERSION
    samples: list[HealthySample] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> HealthySources:
        files = [s.file for s in self.samples]
        if len(set(files)) != len(files):
            raise ValueError(f"a file is listed twice: {sorted(f for f in set(files) if files.count(f) > 1)}")
        return self


def load_sources(folder: Path) -> HealthySources:
    """folder/sources.yaml, checked against the folder: every .log file listed, every listed file there."""
    manifest = folder / SOURCES
    if not manifest.is_file():
        raise KnowledgeError(
            f"no healthy log samples in {folder} (no {SOURCES}): reinstall crashcart with its "
            f"package data (knowledge/healthy/*.log and {SOURCES})"
        )
    sources = load_versioned(manifest, HealthySources, "healthy-corpus manifest", SCHEMA_VERSION)
    listed = {s.file for s in sources.samples}
    missing = sorted(name for name in listed if not (folder / name).is_file())
    if missing:
        raise KnowledgeError(
            f"{manifest} lists {', '.join(missing)}, not in {folder}: reinstall crashcart with "
            "its package data, or remove the entry"
        )
    unlisted = sorted(p.name for p in folder.glob("*.log") if p.name not in listed)
    if unlisted:
        raise KnowledgeError(
            f"{', '.join(unlisted)} in {folder} not in {manifest}: add an entry saying which "
            "program prints its lines and where they come from"
        )
    return sources


def healthy_corpus() -> list[str]:
    """Distinct healthy training-log lines (about 2,100), in the manifest's file order, read once per process."""
    return list(_healthy())


@lru_cache(maxsize=1)
def _healthy() -> tuple[str, ...]:
    lines: dict[str, None] = {}
    for sample in load_sources(HEALTHY_DIR).samples:
        lines.update(dict.fromkeys((HEALTHY_DIR / sample.file).read_text(encoding="utf-8").splitlines()))
    lines.pop("", None)
    return tuple(lines)

"""Records of batch triage: a failed job to triage, and its outcome."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, PlainSerializer

from crashcart.agent.models import Diagnosis
from crashcart.knowledge.records import Strict
from crashcart.parsers.models import Skipped
from crashcart.parsers.sources import printable

# Written out with names that are not UTF-8 escaped (JSON and SQLite take only UTF-8); opened by the real name.
LogPath = Annotated[Path, PlainSerializer(printable, return_type=str)]


class BatchJob(Strict):
    """One failed job: where its logs are, and what it cost (GPUs x elapsed time)."""

    job_id: str  # Slurm job id, or the job folder's path relative to the tree root
    name: str = ""
    state: str = ""  # Slurm state (FAILED, NODE_FAIL, TIMEOUT, OUT_OF_MEMORY, CANCELLED) or "" for a tree
    nodes: list[str] = Field(default_factory=list)
    gpus: int = 0  # GPUs allocated (all nodes together); 0 when unknown
    elapsed_s: float = 0.0
    start: datetime | None = None
    end: datetime | None = None
    exit_code: str = ""
    log_paths: list[LogPath] = Field(default_factory=list)
    metadata_error: str | None = None  # why its job.json could not be read: the job is reported, not triaged

    @property
    def gpu_hours(self) -> float:
        return self.gpus * self.elapsed_s / 3600


class BatchResult(Strict):
    """The triage of one job in a batch, or why it could not be triaged."""

    job: BatchJob
    status: Literal["ok", "error", "no_logs"]
    diagnosis: Diagnosis | None = None
    error: str | None = None
    logs_key: str = ""  # identity of the logs (paths, sizes, mtimes): a rerun skips a job whose key is unchanged
    skipped: list[Skipped] = Field(default_factory=list)  # the report's: files not read, or not to the end, and why
    bytes: int = 0
    seconds: float = 0.0
    triaged_at: datetime | None = None
    # The error is the run's (its stores, rules or configuration), not this job's logs: the batch stops on it and
    # never stores it as the job's result. Never written out (exclude): it travels from a worker only.
    run_wide: bool = Field(default=False, exclude=True)


class JobPages(Strict):
    """Where a batch writes each job's HTML report: a folder beside the batch's own page, which they link back to."""

    folder: Path
    batch_page: str  # the batch page's file name, in the folder's parent

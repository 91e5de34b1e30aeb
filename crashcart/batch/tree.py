"""Find the failed jobs under a folder tree: one job per folder of logs, with what it cost from its metadata.

A job folder is the first folder on a path down from the root that holds a metadata file (`job.json`, or the
generator's `manifest.json`), a `logs/` subfolder, or log files of its own; everything below it is that job's.
When the layout is ambiguous (per-node subfolders with no files beside them), put a `job.json` in each job
folder. The root itself is a job only when it holds log files and no folder below it is a job. The job id is
the folder's path relative to the root ("." for the root). Metadata files are never read as logs.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from crashcart.batch.hostlist import MAX_HOSTS
from crashcart.batch.models import BatchJob
from crashcart.knowledge.errors import InputError
from crashcart.knowledge.records import Strict
from crashcart.parsers.sources import (  # the same files a folder triage skips (checkpoints, images ...)
    _SKIP_SUFFIXES,
    printable,
    walk_logs,
)

JOB_META = "job.json"
MANIFEST = "manifest.json"  # written by evals.generator beside logs/
META_FILES = frozenset({JOB_META, MANIFEST})
LOGS_DIR = "logs"


class JobMeta(Strict):
    """The schema of `job.json`: what a job folder says about its job. Every field is optional.

    GPU-hours are gpus x elapsed_s; when elapsed_s is absent it is end - start. Example:
    {"name": "gpt-7b-pretrain", "state": "FAILED", "nodes": ["node03", "node04"], "gpus": 16, "elapsed_s": 7200}
    """

    name: str = ""
    state: str = ""  # the scheduler's final state: FAILED, NODE_FAIL, TIMEOUT, OUT_OF_MEMORY, CANCELLED ...
    nodes: list[str] = Field(default_factory=list)  # host names; a count (`"nodes": 4`) names none
    gpus: int = Field(0, ge=0)  # GPUs allocated, all nodes together
    elapsed_s: float | None = Field(None, ge=0)
    start: datetime | None = None
    end: datetime | None = None
    exit_code: str = ""

    @field_validator("nodes", mode="before")
    @classmethod
    def _a_count_names_no_host(cls, value: object) -> object:
        """A count of nodes is a real way to write a job's size (sacct's NNodes); it names no host to keep."""
        return [] if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else value

    def elapsed(self) -> float:
        if self.elapsed_s is not None:
            return self.elapsed_s
        if self.start is not None and self.end is not None:
            return max(0.0, (_utc(self.end) - _utc(self.start)).total_seconds())  # one may carry a zone
        return 0.0


class _GeneratorSpec(BaseModel):
    """The part of evals.generator's JobSpec that says what the job cost (a view: other keys are ignored)."""

    model_config = ConfigDict(extra="ignore")

    nodes: int = Field(ge=1, le=MAX_HOSTS)
    gpus_per_node: int = Field(8, ge=1)
    hostname: str = "node{:02d}"
    start: datetime | None = None


class _GeneratorManifest(BaseModel):
    """A view of evals.generator's manifest.json (it belongs to the generator, so unknown keys are ignored)."""

    model_config = ConfigDict(extra="ignore")

    spec: _GeneratorSpec
    fault_time: datetime | None = None


def discover_jobs(root: Path) -> list[BatchJob]:
    """Every job folder under root, sorted by job id; InputError when root is not a folder or holds no job."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root} is not a folder: give the root of a tree of job folders")
    folders = _job_folders(root, root)
    if not folders and _loose_logs(root):
        folders = [root]
    if not folders:
        raise InputError(
            f"no job folders under {root}: a job folder holds log files, a logs/ subfolder or a {JOB_META}"
        )
    return sorted((_job(folder, root) for folder in folders), key=lambda j: j.job_id)


def _job_folders(folder: Path, root: Path) -> list[Path]:
    """The first job folder down each path below folder, in sorted order; a stack, not recursion, so a tree
    1,000 folders deep is walked like any other."""
    found: list[Path] = []
    stack = _subfolders(folder)[::-1]
    while stack:
        sub = stack.pop()
        if _is_job(sub):
            found.append(sub)
        else:
            stack += _subfolders(sub)[::-1]
    return found


def _is_job(folder: Path) -> bool:
    names = {e.name for e in _entries(folder)}
    return bool(names & META_FILES) or (folder / LOGS_DIR).is_dir() or bool(_loose_logs(folder))


def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError as exc:
        raise InputError(f"cannot list {folder}: {exc.strerror or exc}; check its permissions") from exc


def _subfolders(folder: Path) -> list[Path]:
    return [Path(e.path) for e in _entries(folder) if e.is_dir(follow_symlinks=False)]


def _is_log_name(name: str) -> bool:
    return name not in META_FILES and Path(name).suffix.lower() not in _SKIP_SUFFIXES


def _loose_logs(folder: Path) -> list[Path]:
    """The log files directly in folder (not below it)."""
    return [Path(e.path) for e in _entries(folder) if e.is_file() and _is_log_name(e.name)]


def job_logs(folder: Path) -> list[Path]:
    """The job's log files, sorted: everything under its logs/ if it has one, else everything under it."""
    base = folder / LOGS_DIR if (folder / LOGS_DIR).is_dir() else folder
    return [path for path, error in walk_logs(base) if error is None and path.name not in META_FILES]


def _job(folder: Path, root: Path) -> BatchJob:
    """The job of a folder; an unreadable job.json is that job's error, so the batch goes on without it."""
    try:
        meta, error = read_meta(folder), None
    except InputError as exc:
        meta, error = JobMeta(), str(exc)
    job_id = printable(folder.relative_to(root).as_posix()) or "."  # a key in SQLite and JSON: UTF-8 only
    return BatchJob(
        job_id=job_id,
        name=meta.name or printable(folder.name),
        state=meta.state,
        nodes=meta.nodes,
        gpus=meta.gpus,
        elapsed_s=meta.elapsed(),
        start=meta.start,
        end=meta.end,
        exit_code=meta.exit_code,
        log_paths=job_logs(folder),
        metadata_error=error,
    )


def read_meta(folder: Path) -> JobMeta:
    """job.json if the folder has one (InputError when it is invalid), else what the generator's manifest says."""
    path = folder / JOB_META
    if path.is_file():
        try:
            return JobMeta.model_validate_json(path.read_bytes())
        except (OSError, ValidationError) as exc:
            first = exc.errors()[0] if isinstance(exc, ValidationError) else {"msg": str(exc), "loc": ()}
            where = ".".join(str(p) for p in first["loc"]) or "the file"
            raise InputError(
                f"{path}: invalid job metadata at {where}: {first['msg']}; fix it (fields: "
                f"{', '.join(JobMeta.model_fields)}) or remove it"
            ) from exc
    manifest = folder / MANIFEST
    return _from_manifest(manifest) if manifest.is_file() else JobMeta()


def _from_manifest(path: Path) -> JobMeta:
    """GPUs and nodes from the generator's spec; elapsed = fault_time - spec.start when both are there, else 0.

    A manifest.json that is not the generator's (another tool's) gives no metadata rather than an error.
    """
    try:
        manifest = _GeneratorManifest.model_validate(json.loads(path.read_bytes()))
    except (OSError, ValueError):
        return JobMeta()
    spec = manifest.spec
    try:
        nodes = [spec.hostname.format(i) for i in range(spec.nodes)]
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):  # `{0.x}`, `{0[x]}`, `{1}` ...
        nodes = []
    elapsed = 0.0
    if manifest.fault_time is not None and spec.start is not None:
        elapsed = max(0.0, (_utc(manifest.fault_time) - _utc(spec.start)).total_seconds())
    return JobMeta(
        nodes=nodes, gpus=spec.nodes * spec.gpus_per_node, elapsed_s=elapsed, start=spec.start, end=manifest.fault_time
    )


def _utc(t: datetime) -> datetime:
    """A naive time read as UTC, as the generator writes it."""
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)

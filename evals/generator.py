"""Synthetic logs of a large multi-node training job (Megatron on torchrun/Slurm) with one injected fault.

Real failed jobs are few, small and private; throughput and attribution need gigabytes of per-node logs
where the one line that matters is buried. `generate_job` writes such a job into OUT/logs: realistic
launch preambles, Megatron iteration lines with timers, checkpoints, validation and benign noise, then the
scenario's root cause on the faulty node, the symptoms on the others minutes later, and each launcher's
teardown; plus OUT/manifest.json with the expected diagnosis (outside logs/, so a triage never reads it).

    crashcart generate OUT --nodes 16 --total-mb 1024 --scenario xid79 --fault-node 7 --seed 1
"""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Literal

import zstandard
from pydantic import Field, model_validator

from crashcart.evals.logends import Event, events_text, head_events, tail_events
from crashcart.evals.logtext import BLOCK, FilePlan, JobPlan, body_chunks
from crashcart.evals.scenarios import SCENARIOS, Scenario
from crashcart.knowledge.records import Strict
from crashcart.knowledge.taxonomy import FailureClass

MANIFEST = "manifest.json"
LOGS = "logs"  # the job's log files go in OUT/logs, so a triage of that folder never reads the manifest
_SUFFIX = {"none": "", "gzip": ".gz", "zstd": ".zst"}


class JobSpec(Strict):
    """What to generate.

    total_mb sets how many iterations are logged (N); the logs end at the fault as real failed jobs do, so
    fail_at_fraction places the fault in the planned run: the lines read `iteration N/ TOTAL` with
    TOTAL = N / fail_at_fraction (the LR schedule and the checkpoint count follow).
    """

    nodes: int = Field(ge=1, le=4096)
    gpus_per_node: int = Field(8, ge=1, le=64)
    total_mb: float = Field(gt=0, description="approximate uncompressed size of all files together")
    scenario: str | Scenario = "xid79"
    fault_node: int = Field(0, ge=0)
    fail_at_fraction: float = Field(0.8, gt=0, le=1)
    seed: int = 0
    layout: Literal["per_node", "per_rank", "slurm"] = "per_node"
    torchrun_prefix: bool = True
    kernel_log: bool = True
    compression: Literal["none", "gzip", "zstd"] = "none"
    hostname: str = "node{:02d}"
    start: datetime | None = None  # default: a seed-chosen day of the current year (year-less stamps stay right)

    @model_validator(mode="after")
    def _check(self) -> JobSpec:
        if self.fault_node >= self.nodes:
            raise ValueError(
                f"fault_node {self.fault_node} is not a node of a {self.nodes}-node job: use 0..{self.nodes - 1}"
            )
        if isinstance(self.scenario, str) and self.scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {self.scenario!r}: use one of {', '.join(SCENARIOS)}")
        try:
            names = {self.hostname.format(i) for i in range(self.nodes)}
        except (IndexError, KeyError, ValueError) as exc:
            raise ValueError(
                f"hostname pattern {self.hostname!r} does not format an index ({exc}): e.g. 'node{{:02d}}'"
            ) from exc
        if len(names) != self.nodes:
            raise ValueError(f"hostname pattern {self.hostname!r} gives duplicate names: put {{}} in it")
        return self

    def resolved_scenario(self) -> Scenario:
        return SCENARIOS[self.scenario] if isinstance(self.scenario, str) else self.scenario


class GeneratedFile(Strict):
    """One written file; bytes is the size on disk, uncompressed_bytes the log text it holds."""

    name: str  # relative to the output folder: logs/node07.log
    kind: Literal["train", "kernel", "scheduler"]
    node: str | None = None
    rank: int | None = None
    bytes: int
    uncompressed_bytes: int


class GeneratedJob(Strict):
    """The manifest: what was written and the diagnosis a correct triage gives it."""

    spec: JobSpec
    scenario: str
    failure_class: FailureClass | None
    faulty_node: str | None
    faulty_rank: int | None
    evidence: list[str]
    iterations: int
    train_iters: int
    fault_time: datetime | None
    files: list[GeneratedFile]
    total_bytes: int
    uncompressed_bytes: int
    seconds: float = Field(0.0, exclude=True)  # generation wall time; kept out of manifest.json


def plan_job(spec: JobSpec, n_iters: int = BLOCK) -> JobPlan:
    """The job's fixed facts (hosts, clock, fault place) for a given number of logged iterations."""
    scenario = spec.resolved_scenario()
    rng = random.Random(f"job:{spec.seed}")
    if spec.start is not None:
        start = spec.start.replace(tzinfo=spec.start.tzinfo or UTC).timestamp()
    else:
        year = datetime.now(UTC).year
        start = datetime(year, 1, 1, tzinfo=UTC).timestamp() + rng.randrange(0, 200 * 86400)
    healthy = scenario.failure_class is None
    return JobPlan(
        hosts=[spec.hostname.format(i) for i in range(spec.nodes)],
        gpus_per_node=spec.gpus_per_node,
        layout=spec.layout,
        torchrun_prefix=spec.torchrun_prefix,
        kernel_log=spec.kernel_log,
        seed=spec.seed,
        jobid=4000000 + rng.randrange(900000),
        start=start,
        train_start=start + 180.0,
        iter_s=round(rng.uniform(3.2, 5.6), 3),
        n_iters=n_iters,
        train_iters=n_iters if healthy else max(n_iters + 1, math.ceil(n_iters / spec.fail_at_fraction)),
        save_interval=1000,
        eval_interval=1000,
        fault_node=None if scenario.scope == "job" else spec.fault_node,
        fault_local=rng.randrange(spec.gpus_per_node),
        scenario=scenario,
    )


def file_plans(plan: JobPlan) -> list[FilePlan]:
    """The files of the layout and which streams each one carries."""
    gpn, nodes = plan.gpus_per_node, range(len(plan.hosts))
    slurm = f"slurm-{plan.jobid}.out"
    dmesg = [] if plan.kernel_log else list(nodes)
    files = []
    if plan.layout == "per_node":
        files = [
            FilePlan(
                name=f"{h}.log",
                ranks=list(range(n * gpn, (n + 1) * gpn)),
                agents=[n],
                dmesg=[n] if not plan.kernel_log else [],
            )
            for n, h in enumerate(plan.hosts)
        ]
        files.append(FilePlan(name=slurm, sched=True))
    elif plan.layout == "per_rank":
        files = [FilePlan(name=f"rank_{r}.out", ranks=[r]) for r in range(plan.world)]
        files.append(FilePlan(name=slurm, sched=True, agents=list(nodes), dmesg=dmesg))
    else:
        agents = list(nodes) if plan.torchrun_prefix else []
        files = [FilePlan(name=slurm, ranks=list(range(plan.world)), agents=agents, dmesg=dmesg, sched=True)]
    if plan.kernel_log:
        files += [FilePlan(name=f"kernel-{h}.log", kernels=[n]) for n, h in enumerate(plan.hosts)]
    return files


def _size_iterations(spec: JobSpec, files: list[FilePlan]) -> int:
    """How many iterations make total_mb: measure one block and the fixed head and tail, then solve."""
    probe = plan_job(spec, 2 * BLOCK)
    head, tail = _ends(probe)
    fixed = sum(len(events_text(probe, fp, head)) + len(events_text(probe, fp, tail)) for fp in files)
    per_iter = sum(len(c) for fp in files for c in body_chunks(probe, fp, BLOCK, 2 * BLOCK)) / BLOCK
    return max(1, round((spec.total_mb * 1e6 - fixed) / max(per_iter, 1.0)))


def _open(path: Path, compression: str) -> BinaryIO:
    if compression == "gzip":
        return gzip.open(path, "wb", compresslevel=1)  # type: ignore[return-value]
    if compression == "zstd":
        return zstandard.ZstdCompressor(level=3).stream_writer(open(path, "wb"), closefd=True)
    return open(path, "wb", buffering=1 << 20)


def _write_part(
    plan: JobPlan, fp: FilePlan, path: Path, a: int, b: int, ends: tuple[bool, bool], compression: str
) -> int:
    """Write iterations a+1..b of fp (with its head and/or tail) to path; returns the text's size."""
    size = 0
    with _open(path, compression) as out:
        if ends[0]:
            data = events_text(plan, fp, _ends(plan)[0]).encode()
            out.write(data)
            size += len(data)
        for lo in range(a, b, BLOCK):
            for chunk in body_chunks(plan, fp, lo, min(lo + BLOCK, b)):
                data = chunk.encode()
                out.write(data)
                size += len(data)
        if ends[1]:
            data = events_text(plan, fp, _ends(plan)[1]).encode()
            out.write(data)
            size += len(data)
    return size


_ENDS: dict[str, tuple[list[Event], list[Event]]] = {}


def _ends(plan: JobPlan) -> tuple[list[Event], list[Event]]:
    """The job's head and tail events, built once per process (every file of the job picks from them)."""
    key = plan.model_dump_json()
    if key not in _ENDS:
        _ENDS.clear()
        _ENDS[key] = (head_events(plan), tail_events(plan))
    return _ENDS[key]


def _tasks(plan: JobPlan, files: list[FilePlan], out_dir: Path, compression: str, workers: int) -> list[tuple]:
    """(plan, file, part path, first, last, ends, compression) work items; big files split into parts."""
    big = [fp for fp in files if fp.ranks]
    blocks = math.ceil(plan.n_iters / BLOCK)
    parts = max(1, min(blocks, math.ceil(2 * workers / max(1, len(big))))) if workers > 1 else 1
    tasks = []
    for fp in files:
        path = out_dir / LOGS / (fp.name + _SUFFIX[compression])
        n = parts if fp in big else 1
        cuts = [plan.n_iters * i // n // BLOCK * BLOCK for i in range(n)] + [plan.n_iters]
        for i in range(n):
            part = path if n == 1 else path.with_name(f"{path.name}.part{i}")
            tasks.append((plan, fp, part, cuts[i], cuts[i + 1], (i == 0, i == n - 1), compression))
    return tasks


def _run_task(task: tuple) -> int:
    return _write_part(*task)


def _clear(out_dir: Path) -> None:
    """Remove the files of an earlier generation here; refuse a folder holding anything else."""
    manifest = out_dir / MANIFEST
    if manifest.is_file():
        for entry in json.loads(manifest.read_text()).get("files", []):
            (out_dir / entry["name"]).unlink(missing_ok=True)
        manifest.unlink()
        if (out_dir / LOGS).is_dir() and not any((out_dir / LOGS).iterdir()):
            (out_dir / LOGS).rmdir()
    if any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty: generate into a new or empty folder")


def generate_job(out_dir: Path, spec: JobSpec, workers: int | None = None) -> GeneratedJob:
    """Write the job's files and manifest.json into out_dir; memory stays flat whatever total_mb is."""
    began = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _clear(out_dir)
    (out_dir / LOGS).mkdir()
    files = file_plans(plan_job(spec))
    plan = plan_job(spec, _size_iterations(spec, files))
    files = file_plans(plan)
    workers = workers or (1 if spec.total_mb < 24 else min(os.cpu_count() or 1, 16))
    tasks = _tasks(plan, files, out_dir, spec.compression, workers)
    order = sorted(range(len(tasks)), key=lambda i: -(tasks[i][4] - tasks[i][3]) * len(tasks[i][1].ranks))
    sizes = [0] * len(tasks)
    if workers == 1:
        for i in order:
            sizes[i] = _run_task(tasks[i])
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for i, size in zip(order, pool.map(_run_task, [tasks[i] for i in order], chunksize=1), strict=True):
                sizes[i] = size
    job = _manifest(plan, spec, files, tasks, sizes, out_dir)
    job.seconds = time.perf_counter() - began
    return job


def _join_parts(path: Path, parts: list[Path]) -> None:
    if parts == [path]:
        return
    with open(path, "wb") as out:
        for part in parts:
            with open(part, "rb") as src:
                shutil.copyfileobj(src, out, 8 << 20)
            part.unlink()


def _manifest(
    plan: JobPlan, spec: JobSpec, files: list[FilePlan], tasks: list[tuple], sizes: list[int], out_dir: Path
) -> GeneratedJob:
    written = []
    for fp in files:
        path = out_dir / LOGS / (fp.name + _SUFFIX[spec.compression])
        mine = [i for i, t in enumerate(tasks) if t[1] is fp]
        _join_parts(path, [tasks[i][2] for i in mine])
        kind = "kernel" if fp.kernels else ("train" if fp.ranks else "scheduler")
        node = (
            plan.hosts[fp.kernels[0]]
            if fp.kernels
            else (plan.hosts[fp.ranks[0] // plan.gpus_per_node] if plan.layout == "per_node" and fp.ranks else None)
        )
        rank = fp.ranks[0] if plan.layout == "per_rank" and fp.ranks else None
        written.append(
            GeneratedFile(
                name=f"{LOGS}/{path.name}",
                kind=kind,
                node=node,
                rank=rank,
                bytes=path.stat().st_size,
                uncompressed_bytes=sum(sizes[i] for i in mine),
            )
        )
    s = plan.scenario
    faulty = plan.fault_node if s.failure_class is not None and s.scope == "node" else None
    tail = _ends(plan)[1]
    evidence = []
    for needle in s.evidence:  # the first full line (as printed, prefixes aside) holding each proof
        evidence += [ln for e in tail for ln in e.lines if needle in ln][:1]
    job = GeneratedJob(
        spec=spec,
        scenario=s.name,
        failure_class=s.failure_class,
        faulty_node=plan.hosts[faulty] if faulty is not None else None,
        faulty_rank=faulty * plan.gpus_per_node + plan.fault_local if faulty is not None else None,
        evidence=evidence,
        iterations=plan.n_iters,
        train_iters=plan.train_iters,
        fault_time=datetime.fromtimestamp(min(e.t for e in tail), UTC) if s.failure_class else None,
        files=written,
        total_bytes=sum(f.bytes for f in written),
        uncompressed_bytes=sum(f.uncompressed_bytes for f in written),
    )
    (out_dir / MANIFEST).write_text(job.model_dump_json(indent=2) + "\n")
    return job

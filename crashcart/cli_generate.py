"""`crashcart generate`: a big synthetic multi-node job with one injected fault (thin: parse, call, print).

A real typer command, so its options show in `--help`; the library is crashcart.evals.generator. A bad value
is one line naming the flag to fix, never pydantic's multi-line report.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from crashcart.knowledge.errors import InputError

# crashcart.evals.scenarios.SCENARIOS, named here so that --help does not import the generator (a test keeps
# them equal)
SCENARIO_NAMES = (
    "code_bug",
    "ecc",
    "gpu_oom",
    "host_oom",
    "ib_link",
    "nan_loss",
    "node_fail",
    "none",
    "storage",
    "timeout_only",
    "xid79",
)
# JobSpec's field -> the flag that sets it, for error messages
FLAGS = {
    "nodes": "--nodes",
    "gpus_per_node": "--gpus-per-node",
    "total_mb": "--total-mb",
    "scenario": "--scenario",
    "fault_node": "--fault-node",
    "fail_at_fraction": "--fail-at",
    "seed": "--seed",
    "layout": "--layout",
    "compression": "--compression",
    "hostname": "--hostname",
}


class Layout(str, Enum):
    per_node = "per_node"
    per_rank = "per_rank"
    slurm = "slurm"


class Compression(str, Enum):
    none = "none"
    gzip = "gzip"
    zstd = "zstd"


def generate(
    out: Annotated[Path, typer.Argument(help="folder to write (new or empty): OUT/logs, manifest")],
    nodes: Annotated[int, typer.Option(help="nodes of the job")] = 4,
    gpus_per_node: Annotated[int, typer.Option(help="GPUs (ranks) per node")] = 8,
    total_mb: Annotated[float, typer.Option(help="approximate uncompressed MB of all files together")] = 64.0,
    scenario: Annotated[
        str, typer.Option(metavar="NAME", help=f"the injected fault: {', '.join(SCENARIO_NAMES)}")
    ] = "xid79",
    case: Annotated[Path | None, typer.Option(help="inject this real log file as the root cause instead")] = None,
    case_class: Annotated[str | None, typer.Option(metavar="CLASS", help="failure class of --case")] = None,
    fault_node: Annotated[int, typer.Option(help="index of the faulty node, 0 to nodes-1")] = 0,
    fail_at: Annotated[float, typer.Option(help="fraction of the planned run where it fails")] = 0.8,
    seed: Annotated[int, typer.Option(help="same seed, same job")] = 0,
    layout: Annotated[
        Layout, typer.Option(help="per_node, per_rank or slurm: one file per node, per rank, or Slurm's")
    ] = Layout.per_node,
    no_torchrun_prefix: Annotated[bool, typer.Option("--no-torchrun-prefix", help="no torchrun rank prefixes")] = False,
    no_kernel_log: Annotated[bool, typer.Option("--no-kernel-log", help="no dmesg file per node")] = False,
    compression: Annotated[Compression, typer.Option(help="compress each file")] = Compression.none,
    hostname: Annotated[str, typer.Option(help="host name pattern, formatted with the node index")] = "node{:02d}",
    workers: Annotated[int | None, typer.Option(help="processes (default: one per core)")] = None,
) -> None:
    """Write a large synthetic multi-node job with one injected fault, and the diagnosis it should get."""
    from pydantic import ValidationError

    from crashcart.evals.generator import LOGS, MANIFEST, JobSpec, generate_job
    from crashcart.evals.scenarios import scenario_from_case
    from crashcart.knowledge.taxonomy import FailureClass

    try:
        chosen = scenario_from_case(case, case_class or FailureClass.UNKNOWN) if case is not None else scenario
    except ValueError as exc:
        raise InputError(f"--case-class {case_class!r} is not a failure class: see `crashcart cases add -h`") from exc
    except OSError as exc:
        raise InputError(f"cannot read --case {case}: {exc.strerror or exc}") from exc
    try:
        spec = JobSpec(
            nodes=nodes,
            gpus_per_node=gpus_per_node,
            total_mb=total_mb,
            scenario=chosen,
            fault_node=fault_node,
            fail_at_fraction=fail_at,
            seed=seed,
            layout=layout.value,
            torchrun_prefix=not no_torchrun_prefix,
            kernel_log=not no_kernel_log,
            compression=compression.value,
            hostname=hostname,
        )
    except ValidationError as exc:
        raise InputError(one_line(exc)) from exc
    try:
        job = generate_job(out, spec, workers=workers)
    except (ValueError, FileExistsError) as exc:  # a non-empty folder: one line that names it
        raise InputError(f"{exc}") from exc
    mb = job.uncompressed_bytes / 1e6
    print(
        f"wrote {len(job.files)} files, {mb:.1f} MB of log text ({job.total_bytes / 1e6:.1f} MB on disk) to"
        f" {out} in {job.seconds:.1f}s ({mb / max(job.seconds, 1e-9):.0f} MB/s)"
    )
    cls = job.failure_class.value if job.failure_class else "none (healthy)"
    print(f"expected: {cls} on {job.faulty_node or '-'}; manifest: {out / MANIFEST}")
    print(f"triage it with: crashcart triage {out / LOGS}")


def one_line(exc) -> str:
    """The first error of a pydantic ValidationError as `--flag: what is wrong` (the model's own check as is)."""
    first = exc.errors()[0]
    msg = str(first.get("msg", exc)).removeprefix("Value error, ")
    loc = first.get("loc") or ()
    field = str(loc[0]) if loc else ""
    flag = FLAGS.get(field)
    return f"{flag}: {msg.lower()}" if flag else msg

"""Failed jobs from Slurm accounting, as BatchJobs ready for batch triage (`crashcart batch --slurm`).

Why subprocess and not slurmrestd or pyslurm: sacct/scontrol are on every login node and need no extra
daemon, token or compiled binding. The runner is injectable so tests replay recorded output without Slurm.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from crashcart.batch.models import BatchJob
from crashcart.batch.sacct import SACCT_FIELDS, SacctRow, parse_sacct, tres_gpus
from crashcart.batch.slurm_paths import comment_paths, derived_paths, existing, scontrol_paths
from crashcart.knowledge.errors import InputError

__all__ = [
    "DEFAULT_STATES",
    "SacctRow",
    "job_ended",
    "job_log_paths",
    "parse_sacct",
    "parse_scontrol",
    "slurm_job_logs",
    "slurm_job_state",
    "slurm_jobs",
    "tres_gpus",
]

DEFAULT_STATES = ("FAILED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED")
DEFAULT_WINDOW = timedelta(days=1)
# sacct's short state names, so `--states f,to` filters the rows as sacct selected them
STATE_ALIASES = {
    "BF": "BOOT_FAIL",
    "CA": "CANCELLED",
    "CD": "COMPLETED",
    "DL": "DEADLINE",
    "F": "FAILED",
    "NF": "NODE_FAIL",
    "OOM": "OUT_OF_MEMORY",
    "PR": "PREEMPTED",
    "TO": "TIMEOUT",
}
TIMEOUT_S = 120
# The states of a job that has not ended (squeue(1)'s JOB STATE CODES); any other state is final.
ACTIVE_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "RESV_DEL_HOLD",
    }
)
Runner = Callable[..., subprocess.CompletedProcess]


class NotInAccounting(InputError):
    """sacct has no record of the job: a wrong id, or one submitted a moment ago (slurmdbd records it after
    slurmctld has it)."""


_SCONTROL_FIELD = re.compile(r"(\w[\w:/]*)=(.*?)(?=\s+\w[\w:/]*=|\s*$)")


def slurm_jobs(
    *,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    states: Sequence[str] | None = DEFAULT_STATES,
    sacct: str = "sacct",
    scontrol: str = "scontrol",
    runner: Runner = subprocess.run,
) -> list[BatchJob]:
    """Jobs that ended in one of `states` between `since` (default: a day ago) and `until` (default: now).

    Each job's log paths are the existing files found from its comment, `scontrol show job`, or its sbatch
    options; a job with none (never started, logs deleted) comes back with no paths.
    """
    since = since if since is not None else datetime.now() - DEFAULT_WINDOW
    states = [STATE_ALIASES.get(s.upper(), s.upper()) for s in states] if states else list(DEFAULT_STATES)
    argv = [
        sacct,
        "--parsable2",
        "--noheader",
        "--allocations",
        "--starttime",
        _when(since),
        "--endtime",
        _when(until if until is not None else "now"),
        "--state",
        ",".join(states),
        "--format",
        ",".join(SACCT_FIELDS),
    ]
    rows = [r for r in parse_sacct(_call(argv, runner, "sacct")) if r.state in states]
    live = _scontrol_jobs(scontrol, runner) if rows else {}
    load_script = _script_loader(sacct, runner)
    return [_batch_job(row, job_log_paths(row, live.get(row.job_id_raw), load_script)) for row in rows]


def slurm_job_logs(
    job_id: str, *, sacct: str = "sacct", scontrol: str = "scontrol", runner: Runner = subprocess.run
) -> list[Path]:
    """The log files of one job (`123`, `123_4`), for the chat bot: any state, any age sacct still holds."""
    argv = [sacct, "--parsable2", "--noheader", "--allocations", "--jobs", job_id, "--format", ",".join(SACCT_FIELDS)]
    rows = [r for r in parse_sacct(_call(argv, runner, "sacct")) if job_id in (r.job_id, r.job_id_raw)]
    if not rows:
        raise NotInAccounting(f"job {job_id} not found in Slurm accounting: check the id with `sacct -j {job_id}`")
    row = rows[-1]
    live = _scontrol_jobs(scontrol, runner, row.job_id_raw or job_id)
    return job_log_paths(row, live.get(row.job_id_raw), _script_loader(sacct, runner))


def slurm_job_state(
    job_id: str, *, sacct: str = "sacct", scontrol: str = "scontrol", runner: Runner = subprocess.run
) -> str:
    """The job's state now (`RUNNING`, `FAILED` ...): slurmctld's, which is live, else accounting's once the
    controller has forgotten the job (MinJobAge); an InputError when neither knows it."""
    live = _scontrol_jobs(scontrol, runner, job_id).get(job_id)
    if live and live.get("JobState"):
        return live["JobState"].split(" ")[0]
    argv = [sacct, "--parsable2", "--noheader", "--allocations", "--jobs", job_id, "--format", ",".join(SACCT_FIELDS)]
    rows = [r for r in parse_sacct(_call(argv, runner, "sacct")) if job_id in (r.job_id, r.job_id_raw)]
    if not rows:
        raise InputError(f"job {job_id} not found in Slurm: check the id with `sacct -j {job_id}`")
    return rows[-1].state


def job_ended(state: str) -> bool:
    """Whether a job in this state is over (COMPLETED, FAILED, NODE_FAIL, CANCELLED, TIMEOUT ...)."""
    return state.upper() not in ACTIVE_STATES


def job_log_paths(
    row: SacctRow, live: dict[str, str] | None = None, load_script: Callable[[str], str] | None = None
) -> list[Path]:
    """The first source that names existing files: comment, then scontrol's StdOut/StdErr, then sbatch options.

    The stored batch script (`sacct -B`, needs AccountingStoreFlags=job_script) is fetched only when the
    command line alone points nowhere, since it costs one sacct call per job. A job that never got a node
    (cancelled while pending) wrote nothing: a file with its default name would be someone else's.
    """
    if not row.nodes:
        return []
    for candidates in (comment_paths(row.comment), scontrol_paths(live or {}, row), derived_paths(row)):
        found = existing(candidates)
        if found:
            return found
    if load_script is not None and row.submit_line:
        return existing(derived_paths(row, load_script(row.job_id_raw or row.job_id)))
    return []


def parse_scontrol(text: str) -> dict[str, dict[str, str]]:
    """`scontrol show job --oneliner` -> {JobId: {field: value}}; values may hold spaces (Comment, paths)."""
    jobs: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        fields = {m.group(1): m.group(2) for m in _SCONTROL_FIELD.finditer(line.strip())}
        if "JobId" in fields:
            jobs[fields["JobId"]] = fields
    return jobs


def _batch_job(row: SacctRow, log_paths: list[Path]) -> BatchJob:
    return BatchJob(
        job_id=row.job_id,
        name=row.name,
        state=row.state,
        nodes=row.nodes,
        gpus=row.gpus,
        elapsed_s=float(row.elapsed_s),
        start=row.start,
        end=row.end,
        exit_code=row.exit_code,
        log_paths=log_paths,
    )


def _scontrol_jobs(scontrol: str, runner: Runner, job_id: str = "") -> dict[str, dict[str, str]]:
    """Jobs slurmctld still holds (within MinJobAge); {} when scontrol is missing or fails: it is only a hint."""
    argv = [scontrol, "--oneliner", "show", "job", *([job_id] if job_id else [])]
    try:
        proc = runner(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_scontrol(proc.stdout) if proc.returncode == 0 else {}


def _script_loader(sacct: str, runner: Runner) -> Callable[[str], str]:
    def load(job_id: str) -> str:
        """The batch script sacct stored; '' when the site does not store scripts."""
        try:
            proc = runner(
                [sacct, "--batch-script", "--jobs", job_id], capture_output=True, text=True, timeout=TIMEOUT_S
            )
        except (OSError, subprocess.SubprocessError):
            return ""
        lines = proc.stdout.splitlines()
        if proc.returncode != 0 or len(lines) < 3 or not lines[1].startswith("---"):
            return ""
        script = "\n".join(lines[2:])
        return "" if script.strip() == "NONE" else script

    return load


def _call(argv: list[str], runner: Runner, tool: str) -> str:
    """Run a Slurm client; its absence or failure is the user's to fix, so both become InputError."""
    try:
        proc = runner(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    except FileNotFoundError:
        raise InputError(f"{tool} not found: run on a Slurm login node or pass ROOT") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"{tool} did not answer in {TIMEOUT_S}s: check slurmdbd with `sacct -X`") from None
    if proc.returncode != 0:
        raise InputError(
            f"{tool} failed (exit {proc.returncode}): {_reason(proc.stderr or '')}; "
            f"check that `{tool}` works on this node"
        )
    return proc.stdout


def _reason(stderr: str) -> str:
    """sacct's first stderr line, unless a later `fatal:` line says more (an unconfigured node prints
    three DNS errors before `fatal: Could not establish a configuration source`)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return next((line for line in lines if "fatal:" in line), lines[0] if lines else "no message")


def _when(value: datetime | str) -> str:
    """sacct reads times in the local zone: an aware datetime is converted, a string (`now-2hours`) passes."""
    if isinstance(value, str):
        return value
    if value.tzinfo is not None:
        value = value.astimezone().replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S")

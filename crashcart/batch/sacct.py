"""Read `sacct --parsable2` rows into records: one SacctRow per job allocation.

Why parsable2 and not `--json`: in Slurm 22.05 the JSON reports a plain non-zero exit as success, while the
`ExitCode` column is right; the text form is also what every Slurm release since 21.08 prints the same way.
Free text (SubmitLine) comes last so a `|` or a newline inside it cannot shift the other columns.
"""

from __future__ import annotations

import re
from datetime import datetime

from crashcart.batch.hostlist import expand_hostlist
from crashcart.knowledge.records import Strict
from crashcart.parsers.numbers import small_int

# The columns `slurm_jobs` asks for, in order. All exist in Slurm 22.05 (checked with `sacct --helpformat`).
SACCT_FIELDS = (
    "JobID",
    "JobIDRaw",
    "JobName",
    "State",
    "ExitCode",
    "User",
    "NodeList",
    "AllocTRES",
    "ElapsedRaw",
    "Start",
    "End",
    "WorkDir",
    "Comment",
    "SubmitLine",
)
NOT_ARRAY_TASK = "4294967294"  # what 22.05 writes for %a in a job that is not an array task (measured)
_JOB_ID = re.compile(r"^\d+(?:[_+][\w\[\]\-,%]+)?(?:\.\S+)?$")
_GPU_TRES = re.compile(r"(?:^|,)gres/gpu(?::([\w.\-]+))?=(\d+)")


class SacctRow(Strict):
    """One job allocation as sacct prints it; derived views (hosts, GPUs, array ids) are properties."""

    job_id: str  # JobID: "123", "123_4" (array task), "123+0" (het job component)
    job_id_raw: str = ""  # JobIDRaw: the task's own numeric id, what %j expands to
    name: str = ""
    state: str = ""  # first word of State: "CANCELLED by 0" -> "CANCELLED"
    exit_code: str = ""  # "1:0" = exit status 1, signal 0
    user: str = ""
    node_list: str = ""  # compressed hostlist, e.g. "node[01-03]"; "None assigned" when it never ran
    alloc_tres: str = ""
    elapsed_s: int = 0
    start: datetime | None = None
    end: datetime | None = None
    work_dir: str = ""
    comment: str = ""
    submit_line: str = ""

    @property
    def nodes(self) -> list[str]:
        return expand_hostlist(self.node_list)

    @property
    def gpus(self) -> int:
        return tres_gpus(self.alloc_tres)

    @property
    def array_job_id(self) -> str:
        """%A: the array's master id, or the job's own id when it is not an array task."""
        return self.job_id.split("_")[0] if "_" in self.job_id else self.job_id_raw or self.job_id

    @property
    def array_task_id(self) -> str:
        """%a: the task index, or Slurm's NO_VAL marker when the job is not an array task."""
        return self.job_id.split("_", 1)[1] if "_" in self.job_id else NOT_ARRAY_TASK


def tres_gpus(tres: str) -> int:
    """GPUs in a TRES string: `gres/gpu=8`, or the sum of typed `gres/gpu:h100=8` when no untyped count."""
    untyped, typed = None, 0
    for match in _GPU_TRES.finditer(tres):
        count = small_int(match.group(2)) or 0
        if match.group(1) is None:
            untyped = count
        else:
            typed += count
    return untyped if untyped is not None else typed


def parse_sacct(text: str, fields: tuple[str, ...] = SACCT_FIELDS) -> list[SacctRow]:
    """Rows of `sacct --parsable2 --noheader --format <fields>`; a header line, if present, is skipped.

    A line with too few columns continues the previous row's last column (a newline inside SubmitLine);
    extra `|` go to the last column too.
    """
    cells: list[list[str]] = []
    for line in text.splitlines():
        parts = line.split("|")
        if parts[0] == fields[0]:
            continue  # a header
        if len(parts) < len(fields) or not _JOB_ID.match(parts[0]):
            if cells:
                cells[-1][-1] += "\n" + line
            continue
        cells.append(parts[: len(fields) - 1] + ["|".join(parts[len(fields) - 1 :])])
    return [_row(dict(zip(fields, values, strict=True))) for values in cells]


def _row(col: dict[str, str]) -> SacctRow:
    return SacctRow(
        job_id=col.get("JobID", ""),
        job_id_raw=col.get("JobIDRaw", ""),
        name=col.get("JobName", ""),
        state=col.get("State", "").split(" ")[0],
        exit_code=col.get("ExitCode", ""),
        user=col.get("User", ""),
        node_list=col.get("NodeList", ""),
        alloc_tres=col.get("AllocTRES", ""),
        elapsed_s=small_int(col.get("ElapsedRaw", "")) or 0,
        start=_time(col.get("Start", "")),
        end=_time(col.get("End", "")),
        work_dir=col.get("WorkDir", ""),
        comment=col.get("Comment", ""),
        submit_line=col.get("SubmitLine", ""),
    )


def _time(value: str) -> datetime | None:
    """sacct's local time `2024-05-01T12:00:00`; `Unknown` / `None` (never started or still running) -> None."""
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None

"""A batch's summary for people (a terminal table, Markdown) and for programs (CSV one row per job, JSON)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from crashcart.batch.models import BatchResult
from crashcart.batch.summary import BatchSummary, Totals, decider
from crashcart.knowledge.records import Strict
from crashcart.printable import counted, printable, printable_name

CSV_COLUMNS = [
    "job_id",
    "state",
    "class",
    "action",
    "decided_by",
    "faulty_nodes",
    "gpus",
    "elapsed_s",
    "gpu_hours",
    "status",
    "error",
]


class BatchOutput(Strict):
    """The JSON contract of `crashcart batch --format json`: the summary and every job's result."""

    summary: BatchSummary
    results: list[BatchResult]


def to_json(summary: BatchSummary, results: Sequence[BatchResult]) -> str:
    return BatchOutput(summary=summary, results=list(results)).model_dump_json(indent=2)


def csv_row(r: BatchResult) -> dict[str, str | int | float]:
    d = r.diagnosis
    return {
        "job_id": r.job.job_id,
        "state": r.job.state,
        "class": d.failure_class.value if d else "",
        "action": d.action.value if d else "",
        "decided_by": decider(r) if d else "",
        "faulty_nodes": " ".join(d.faulty_nodes) if d else "",
        "gpus": r.job.gpus,
        "elapsed_s": r.job.elapsed_s,
        "gpu_hours": round(r.job.gpu_hours, 3),
        "status": r.status,
        "error": r.error or "",
    }


def to_csv(results: Sequence[BatchResult]) -> str:
    """One row per job; decided_by is rules, structure, memory, llm or unknown (as in the summary); nodes
    space-separated."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in results:
        writer.writerow(csv_row(r))
    return out.getvalue()


def _pct(share: float) -> str:
    return f"{share * 100:.1f}%"


def headline(t: Totals) -> str:
    """One line: what was done, what was reused, and how fast."""
    return (
        f"{counted(t.jobs, 'job')}: {t.triaged} triaged, {counted(t.errors, 'error')}, {t.no_logs} without logs; "
        f"{t.gpu_hours:,.1f} GPU-hours. This run: {t.new_jobs} new, {t.reused} unchanged (reused), "
        f"{t.new_bytes / 1e6:,.1f} MB in {t.wall_s:.1f} s = {t.jobs_per_min:,.1f} jobs/min, "
        f"{t.mb_per_s:,.1f} MB/s"
    )


def _sections(s: BatchSummary, code: Callable[[str], str] = str) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, columns, rows) of every table, shared by the terminal and Markdown renderers (code marks commands)."""
    infra = ", ".join(c.value for c in s.infrastructure_classes)
    return [
        (
            "Failure classes by GPU-hours",
            ["class", "jobs", "% jobs", "GPU-hours", "% GPU-hours", "infra"],
            [
                [
                    c.failure_class.value,
                    str(c.jobs),
                    _pct(c.job_share),
                    f"{c.gpu_hours:,.1f}",
                    _pct(c.gpu_hour_share),
                    "yes" if c.infrastructure else "",
                ]
                for c in s.classes
            ],
        ),
        (
            f"Infrastructure ({infra}) vs the rest",
            ["", "jobs", "% jobs", "GPU-hours", "% GPU-hours"],
            [
                [name, str(x.jobs), _pct(x.job_share), f"{x.gpu_hours:,.1f}", _pct(x.gpu_hour_share)]
                for name, x in (("infrastructure", s.infrastructure), ("other", s.other))
            ],
        ),
        (
            "Who decided",
            ["decided by", "jobs", "% jobs"],
            [[d.decided_by, str(d.jobs), _pct(d.share)] for d in s.deciders],
        ),
        (
            "Repeat offenders (drain these nodes)",
            ["node", "jobs", "classes", "GPU-hours", "drain"],
            [
                [o.node, str(o.jobs), ", ".join(c.value for c in o.classes), f"{o.gpu_hours:,.1f}", code(o.drain)]
                for o in s.offenders
            ],
        ),
        (  # job ids and errors name folders and files: escaped exactly, colour codes too
            "Not triaged",
            ["job", "status", "why"],
            [[printable_name(p.job_id), p.status, printable_name(p.error)] for p in s.problems],
        ),
    ]


def to_table(summary: BatchSummary, drains: bool = True) -> RenderableType:
    """The summary as rich tables (empty sections left out); the drain commands after them, unless the caller
    prints drain_lines itself as plain text (the CLI: a console would still cut them at its width)."""
    parts: list[RenderableType] = [Text(headline(summary.totals), style="bold")]
    for title, columns, rows in _sections(summary):
        if not rows:
            continue
        drain = columns[-1] == "drain"  # the command goes after the tables whole, to copy; a cell would wrap it
        table = Table(*columns[: -1 if drain else None], title=title, title_justify="left", box=None, pad_edge=False)
        for row in rows:
            cells = row[:-1] if drain else row
            table.add_row(*(Text(printable(cell)) for cell in cells))  # job ids, nodes, errors: never markup
        parts += [Text(""), table]
    if drains:
        parts += [Text(line, no_wrap=True) for line in drain_lines(summary)]
    return Group(*parts)


def drain_lines(summary: BatchSummary) -> list[str]:
    """The drain commands, to print after the tables as plain lines: a table would wrap them, a copy breaks."""
    if not summary.offenders:
        return []
    return ["", "drain them with:", *(printable(o.drain) for o in summary.offenders)]


def _md_cell(text: str) -> str:
    return printable(text.replace("|", "\\|").replace("\n", " "))


def to_markdown(summary: BatchSummary) -> str:
    """The summary as Markdown tables, to paste into an incident channel or a report."""
    lines = ["# crashcart batch", "", headline(summary.totals)]
    for title, columns, rows in _sections(summary, code=lambda c: f"`{c}`"):
        if not rows:
            continue
        lines += ["", f"## {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"

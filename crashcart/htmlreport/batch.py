"""A batch's HTML report: GPU-hours and jobs by class, the infrastructure share, the repeat offenders with their
drain commands, and a table of the jobs, each linking to its own page when the pages were written."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

from crashcart.batch.models import BatchResult
from crashcart.batch.render import headline
from crashcart.batch.summary import BatchSummary, ClassRow, Split, decider
from crashcart.htmlreport.page import esc, legend, page, section, table
from crashcart.htmlreport.svg import n, tip
from crashcart.printable import counted

WIDTH, LABEL, BAR_H = 1100, 190, 14
JOBS, HOURS, INFRA, OTHER = "#5c7cfa", "#c62828", "#c62828", "#9aa5b1"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def page_name(job_id: str) -> str:
    """A job's page file name: its id made safe as one file name, and a digest so that two ids never share one."""
    slug = _UNSAFE.sub("_", job_id).strip("._")[:60] or "job"
    return f"{slug}-{hashlib.sha256(job_id.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}.html"


def to_html(summary: BatchSummary, results: Sequence[BatchResult], links: Mapping[str, str]) -> str:
    """The page; `links` maps a job id to its page's address (relative to this page), for the jobs that have one."""
    s = summary
    body = [
        "<h1>crashcart batch</h1>",
        f'<p id="headline">{esc(headline(s.totals))}</p>',
        section("classes", "GPU-hours and jobs by failure class", _classes(s.classes)),
        section("infra", "Infrastructure share", _infra(s)),
        section("offenders", "Repeat offenders: drain these nodes", _offenders(s)),
        section("deciders", "Who decided", _deciders(s)),
        section("jobs", "Jobs", _jobs(results, links)),
        "<footer>Made by crashcart: no script, nothing fetched.</footer>",
    ]
    return page("crashcart batch", body)


def _bars(rows: Sequence[tuple[str, float, str, float, str]]) -> str:
    """Two bars a row: (label, job share, its text, GPU-hour share, its text)."""
    height = 8 + len(rows) * (2 * BAR_H + 10)
    width = WIDTH - LABEL - 150
    out = [
        f'<svg class="bars" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
        f'height="{height}" role="img" aria-label="jobs and GPU-hours by class">'
    ]
    for i, (label, jobs, jobs_text, hours, hours_text) in enumerate(rows):
        y = 4 + i * (2 * BAR_H + 10)
        out.append(f'<text x="6" y="{n(y + BAR_H + 4)}">{esc(label)}</text>')
        for j, (share, text, colour) in enumerate(((jobs, jobs_text, JOBS), (hours, hours_text, HOURS))):
            top = y + j * BAR_H
            w = max(share * width, 1)
            out.append(
                f'<rect class="bar" x="{LABEL}" y="{n(top)}" width="{n(w)}" height="{BAR_H - 2}" fill="{colour}">'
                f"{tip(f'{label}: {text}')}</rect>"
                f'<text x="{n(LABEL + w + 6)}" y="{n(top + BAR_H - 3)}">{esc(text)}</text>'
            )
    out.append("</svg>")
    return "".join(out)


def _classes(classes: Sequence[ClassRow]) -> str:
    if not classes:
        return "<p class=dim>No job was triaged.</p>"
    rows = [
        (
            c.failure_class.value + (" (infra)" if c.infrastructure else ""),
            c.job_share,
            f"{counted(c.jobs, 'job')}, {c.job_share:.0%}",
            c.gpu_hour_share,
            f"{c.gpu_hours:,.1f} GPU-h, {c.gpu_hour_share:.0%}",
        )
        for c in classes
    ]
    return legend([(JOBS, "share of jobs"), (HOURS, "share of GPU-hours")]) + _bars(rows)


def _infra(s: BatchSummary) -> str:
    """One stacked bar for jobs and one for GPU-hours: infrastructure against the rest."""
    names = ", ".join(c.value for c in s.infrastructure_classes)
    width, height = WIDTH - LABEL - 20, 2 * (BAR_H + 12) + 8
    out = [
        f'<svg class="infra" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
        f'height="{height}" role="img" aria-label="infrastructure share">'
    ]
    for i, (label, infra, other) in enumerate(
        (
            ("jobs", s.infrastructure.job_share, s.other.job_share),
            ("GPU-hours", s.infrastructure.gpu_hour_share, s.other.gpu_hour_share),
        )
    ):
        y = 4 + i * (BAR_H + 12)
        out.append(f'<text x="6" y="{n(y + BAR_H - 2)}">{esc(label)}</text>')
        x = float(LABEL)
        for share, colour, what in ((infra, INFRA, "infrastructure"), (other, OTHER, "other")):
            if share <= 0:
                continue
            w = share * width
            out.append(
                f'<rect class="share" x="{n(x)}" y="{n(y)}" width="{n(w)}" height="{BAR_H + 2}" fill="{colour}">'
                f"{tip(f'{what}: {share:.1%} of {label}')}</rect>"
            )
            if w > 60:
                out.append(f'<text x="{n(x + 5)}" y="{n(y + BAR_H - 1)}" style="fill:#fff">{share:.1%}</text>')
            x += w
    out.append("</svg>")
    rows = [_split_row(name, x) for name, x in (("infrastructure", s.infrastructure), ("other", s.other))]
    return (
        legend([(INFRA, f"infrastructure ({names})"), (OTHER, "the rest")])
        + "".join(out)
        + table(["", "jobs", "% jobs", "GPU-hours", "% GPU-hours"], rows, numeric=[1, 2, 3, 4])
    )


def _split_row(name: str, x: Split) -> list[str]:
    return [name, str(x.jobs), f"{x.job_share:.1%}", f"{x.gpu_hours:,.1f}", f"{x.gpu_hour_share:.1%}"]


def _offenders(s: BatchSummary) -> str:
    if not s.offenders:
        return "<p class=dim>No node was named faulty by infrastructure failures of two jobs or more.</p>"
    rows = [
        [
            f"<b>{esc(o.node)}</b>",
            str(o.jobs),
            esc(", ".join(c.value for c in o.classes)),
            f"{o.gpu_hours:,.1f}",
            esc(", ".join(o.job_ids[:10]) + (" ..." if len(o.job_ids) > 10 else "")),
            f"<code>{esc(o.drain)}</code>",
        ]
        for o in s.offenders
    ]
    return table(["node", "jobs", "classes", "GPU-hours", "job ids", "drain"], rows, numeric=[1, 3])


def _deciders(s: BatchSummary) -> str:
    rows = [[esc(d.decided_by), str(d.jobs), f"{d.share:.1%}"] for d in s.deciders]
    return table(["decided by", "jobs", "% jobs"], rows, numeric=[1, 2])


def _jobs(results: Sequence[BatchResult], links: Mapping[str, str]) -> str:
    rows = []
    for r in sorted(results, key=lambda r: -r.job.gpu_hours):
        d = r.diagnosis
        job = esc(r.job.job_id)
        href = links.get(r.job.job_id)
        rows.append(
            [
                f'<a href="{esc(href)}">{job}</a>' if href else job,
                esc(r.job.state),
                esc(d.failure_class.value) if d else "",
                esc(d.action.value) if d else "",
                esc(decider(r)) if d else "",
                esc(", ".join(d.faulty_nodes[:5]) + (" ..." if len(d.faulty_nodes) > 5 else "")) if d else "",
                str(r.job.gpus),
                f"{r.job.gpu_hours:,.1f}",
                esc(r.status) + (f": {esc(r.error[:200])}" if r.error else ""),
            ]
        )
    note = "" if links else '<p class="dim">Written with -o, the batch report gets a page per job beside it.</p>'
    columns = ["job", "state", "class", "action", "decided by", "faulty nodes", "GPUs", "GPU-hours", "status"]
    return note + table(columns, rows, numeric=[6, 7])

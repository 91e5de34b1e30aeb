"""One job's HTML report: the verdict, the timeline, the heatmap, the evidence in context, similar incidents and
the next steps, all from the same Report the JSON output prints."""

from __future__ import annotations

from crashcart.agent.report import Report
from crashcart.htmlreport.context import Excerpt, excerpts
from crashcart.htmlreport.heatmap import Heatmap, build_heatmap, heatmap_svg
from crashcart.htmlreport.lanes import MAX_LANES, Timeline, build_timeline, zoom_window
from crashcart.htmlreport.page import esc, legend, page, section, table
from crashcart.htmlreport.placing import Placer
from crashcart.htmlreport.svg import COLOURS
from crashcart.htmlreport.timeline_svg import timeline_svg
from crashcart.printable import counted
from crashcart.render import empty_note, model_note, where

_CALM = {"unknown", "cancelled"}


def to_html(report: Report, *, back: str | None = None) -> str:
    """The page; `back` links to the batch report it belongs to."""
    placer = Placer(report)
    d = report.diagnosis
    body = [
        f'<p><a href="{esc(back)}">&larr; batch report</a></p>' if back else "",
        _verdict(report),
        section("timeline", "Timeline", _timeline(build_timeline(report, placer))),
        _zoom(report, placer),
        section("heatmap", "Error templates per node over time", _heatmap(build_heatmap(report, placer))),
        section("evidence", "Evidence", _evidence(excerpts(report.paths, d.evidence), len(d.evidence))),
        section("similar", "Similar incidents", _similar(report)),
        section("next", "Next steps", _steps(report)),
    ]
    if report.skipped:
        rows = [[f"<code>{esc(s.path)}</code>", esc(s.reason)] for s in report.skipped[:50]]
        more = f"<p class=dim>... and {len(report.skipped) - 50} more (the JSON report lists them all)</p>"
        body.append(
            section(
                "skipped",
                f"Skipped: {len(report.skipped)} not read, or not to the end",
                table(["file", "why"], rows) + (more if len(report.skipped) > 50 else ""),
            )
        )
    st = report.stats
    body.append(
        f"<footer>{counted(st.files, 'file')}, {counted(st.lines, 'line')}, {st.bytes / 1e6:.1f} MB read in "
        f"{st.seconds:.2f}s; {esc(', '.join(report.paths))}. Made by crashcart: no script, nothing fetched.</footer>"
    )
    return page(f"crashcart: {d.failure_class.value} ({', '.join(d.faulty_nodes[:3]) or 'job'})", body)


def _verdict(report: Report) -> str:
    d = report.diagnosis
    calm = " calm" if d.failure_class.value in _CALM else ""
    notes = "".join(f'<p class="note">{esc(x)}</p>' for x in (empty_note(report), model_note(report)) if x)
    alts = ", ".join(f"{a.failure_class.value} ({a.score:.2f})" for a in d.alternatives)
    return (
        f'<h1>crashcart diagnosis</h1><div class="verdict{calm}" id="verdict">'
        f'<div><span class="cls">{esc(d.failure_class.value)}</span> &rarr; <b>{esc(d.action.value)}</b> '
        f'<span class="dim">confidence {d.confidence:.2f}, decided by {esc(d.decided_by)}</span></div>'
        f"<p>{esc(d.summary)}</p><div>{esc(where(report))}</div>"
        + (f'<div class="dim">also possible: {esc(alts)}</div>' if alts else "")
        + notes
        + "</div>"
    )


def _timeline(t: Timeline, zoomed: bool = False) -> str:
    if not t.lanes:
        return "<p class=dim>No event of this job could be placed on a time line.</p>"
    keys = [
        (COLOURS["progress"], "progress (to the last iteration)"),
        (COLOURS["checkpoint"], "checkpoint"),
        (COLOURS["warning"], "warning / context"),
        (COLOURS["symptom"], "symptom"),
        (COLOURS["root_cause"], "root cause (the dashed line: the failure point)"),
        ("#fde3c8", "the cascade of symptoms after it"),
    ]
    notes = [f"{counted(t.lanes_total, 'lane')}"]
    if t.lanes_folded:
        notes.append(f"{t.lanes_folded} folded into a lane with the same events (“+N alike”)")
    if t.lanes_not_drawn:
        notes.append(f"{t.lanes_not_drawn} more not drawn (only the first {MAX_LANES}: the root cause's first)")
    if t.events_not_placed:
        notes.append(f"{counted(t.events_not_placed, 'event')} without a time in a file with no timed line: not drawn")
    if t.events_outside:
        notes.append(f"{counted(t.events_outside, 'event')} before this window (in the whole-job timeline above)")
    if t.events_omitted and not zoomed:
        notes.append(f"{t.events_omitted:,} further events were not kept in the report")
    if t.axis.mode == "line":
        notes.append("no line has a timestamp: each event is drawn at its position in its own file")
    else:
        notes.append("a dashed outline: time estimated from the file's timed lines around it")
    return (legend(keys) if not zoomed else "") + timeline_svg(t) + f'<p class="dim">{esc("; ".join(notes))}.</p>'


def _zoom(report: Report, placer: Placer) -> str:
    window = zoom_window(report, placer)
    if window is None:
        return ""
    start, end = window
    title = f"Around the failure: {start:%H:%M:%S} to {end:%H:%M:%S}"
    return section("zoom", title, _timeline(build_timeline(report, placer.zoomed(start, end)), zoomed=True))


def _heatmap(h: Heatmap) -> str:
    if not h.rows:
        return "<p class=dim>No error template with a place in time.</p>"
    notes = [f"{counted(h.rows_total, 'node')} printed error templates"]
    if h.rows_folded:
        notes.append(f"{h.rows_folded} folded into a row with the same cells")
    if h.rows_not_drawn:
        notes.append(f"{h.rows_not_drawn} more rows not drawn")
    if h.not_placed:
        notes.append(f"{counted(h.not_placed, 'template')} in files with no timed line: not drawn")
    notes.append("darker: more distinct error templates live on that node in that slice")
    key = table(
        ["", "template"], ([f"T{i + 1}", f"<code>{esc(t[:300])}</code>"] for i, t in enumerate(h.templates)), css="key"
    )
    return heatmap_svg(h) + f'<p class="dim">{esc("; ".join(notes))}.</p>' + key


def _evidence(found: list[Excerpt], total: int) -> str:
    if not found:
        return "<p class=dim>No evidence line.</p>"
    out = []
    for ex in found:
        ev = ex.evidence
        who = " ".join(x for x in (ev.node, None if ev.rank is None else f"rank {ev.rank}") if x)
        rule = f" &middot; {esc(ev.rule_id)}" if ev.rule_id else ""
        role = f" ({esc(ev.role.value)})" if ev.role else ""
        pad = len(str(ex.lines[-1][0]))
        lines = "\n".join(
            (f'<span class="hit">{no:>{pad}} {esc(text)}</span>' if no == ev.line else f"{no:>{pad}} {esc(text)}")
            for no, text in ex.lines
        )
        out.append(
            f'<div class="ev"><code>{esc(ev.file)}:{ev.line}</code> {esc(who)}{rule}{role}<pre>{lines}</pre></div>'
        )
    if total > len(found):
        out.append(f"<p class=dim>... and {total - len(found)} more evidence lines (the JSON report lists them).</p>")
    return "".join(out)


def _similar(report: Report) -> str:
    d = report.diagnosis
    if not d.similar:
        if d.novel:
            return '<p class="note">Nothing similar in incident memory: a new failure.</p>'
        return "<p class=dim>Incident memory was not consulted, or holds nothing yet.</p>"
    rows = [
        [
            f"{s.similarity:.2f}",
            esc(s.match),
            f"<code>{esc(s.id)}</code>",
            f"{esc(s.failure_class.value)} &rarr; {esc(s.action.value)}",
            esc(s.job),
            esc(s.resolution or ""),
        ]
        for s in d.similar
    ]
    return table(["similarity", "match", "incident", "class → action", "job", "resolution"], rows, numeric=[0])


def _steps(report: Report) -> str:
    steps = report.diagnosis.mitigation
    return "<ol>" + "".join(f"<li>{esc(s)}</li>" for s in steps) + "</ol>" if steps else "<p class=dim>-</p>"

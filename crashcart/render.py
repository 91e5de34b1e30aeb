"""Rendering a Report for people (terminal, Markdown) and machines (JSON).

Every text that comes from logs, file names or the model goes through `printable` in the human formats, so no
escape sequence reaches the reader's terminal; JSON escapes control characters itself and keeps the text exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crashcart.agent.report import Report
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.printable import counted, printable, printable_name

if TYPE_CHECKING:
    from rich.console import RenderableType

_CLASS_STYLE = {"unknown": "yellow", "cancelled": "cyan"}
MAX_SKIPPED = 10  # skipped files listed one a line; past this many, a count (the JSON lists them all)


def empty_note(report: Report) -> str | None:
    """One line when nothing was read at all: the report stands, but there was nothing to diagnose."""
    st = report.stats
    if st.lines or st.bytes:
        return None
    return f"the input is empty ({counted(st.files, 'file')}, 0 lines): nothing to diagnose"


def to_json(report: Report) -> str:
    """The contract object: diagnosis.failure_class, action, faulty_nodes, evidence[file, line, text], ..."""
    return report.model_dump_json(indent=2)


def where(report: Report) -> str:
    """Nodes, ranks and stage in one line, for every human-facing format."""
    d = report.diagnosis
    parts = []
    if d.faulty_nodes:
        parts.append("nodes: " + ", ".join(d.faulty_nodes))
    if d.faulty_ranks:
        parts.append("ranks: " + ", ".join(map(str, d.faulty_ranks)))
    if d.stage is not None:
        parts.append("stage: " + d.stage.value + (f" (iteration {d.iteration})" if d.iteration is not None else ""))
    return printable("; ".join(parts)) or "not localised to a node"


def _cite(file: str, line: int) -> str:
    return f"{printable_name(file)}:{line}"


def skipped_lines(report: Report, quote: str = "") -> list[str]:
    """One line per file that was not read (or not to the end) and why; past MAX_SKIPPED, how many more."""
    lines = [f"{quote}{printable_name(s.path)}{quote}: {printable(s.reason)}" for s in report.skipped[:MAX_SKIPPED]]
    if len(report.skipped) > MAX_SKIPPED:
        lines.append(f"... and {len(report.skipped) - MAX_SKIPPED} more (the JSON report lists them all)")
    return lines


def overruled(report: Report) -> str | None:
    """One line when the model contradicted a sure verdict of the rules, or could not tell, and the rules' verdict
    stood (llm.disagreement)."""
    seen = report.llm.disagreement if report.llm is not None else None
    if seen is None:
        return None
    if seen.failure_class is FailureClass.UNKNOWN:
        return "the model could not tell (unknown); the rules' verdict stands"
    nodes = f" on {printable(', '.join(seen.faulty_nodes))}" if seen.faulty_nodes else ""
    return f"the model answered {seen.failure_class.value} → {seen.action.value}{nodes}; the rules' sure verdict stands"


def model_note(report: Report) -> str | None:
    """One line when the model was asked: that it fell back to the rules and why, or that it was overruled."""
    usage = report.llm
    if usage is None:
        return None
    if usage.fallback:
        if usage.timed_out:
            why = "it did not answer in time"
        elif usage.budget_exhausted:
            why = "the token budget ran out"
        elif usage.errors:
            why = usage.errors[-1]
        else:
            why = "no valid answer came back"
        return printable(f"the model ({usage.model}) was asked and the rules' diagnosis stands: {why}"[:300])
    return overruled(report)


def to_terminal(report: Report) -> RenderableType:
    """A compact screen: verdict panel, evidence table, next steps, and what was read."""
    from rich.console import Group  # rich is imported by the terminal formats only: JSON output never pays for it
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    d = report.diagnosis
    style = _CLASS_STYLE.get(d.failure_class.value, "bold red")
    head = Text.assemble(
        (d.failure_class.value, style),
        "  →  ",
        (d.action.value, "bold"),
        f"   confidence {d.confidence:.2f}\n",
        printable(d.summary, newlines=True),
        "\n",
        (where(report), "dim"),
    )
    for note in (empty_note(report), model_note(report)):
        if note:
            head.append(f"\n{note}", style="yellow")
    evidence = Table(show_header=True, header_style="bold", expand=True, box=None)
    evidence.add_column("where", no_wrap=True, style="cyan")
    evidence.add_column("node/rank", no_wrap=True)
    evidence.add_column("line", overflow="fold")
    for ev in d.evidence:
        who = "/".join(x for x in (ev.node, None if ev.rank is None else f"rank{ev.rank}") if x) or "-"
        row = (_cite(ev.file, ev.line), printable(who), printable(ev.text[:400]))
        evidence.add_row(*map(Text, row))  # log text is not markup
    steps = Text("\n".join(f"{i}. {printable(s)}" for i, s in enumerate(d.mitigation, 1)) or "-")
    st = report.stats
    footer = Text(
        f"{counted(st.files, 'file')}, {counted(st.lines, 'line')}, {st.bytes / 1e6:.1f} MB, "
        f"{counted(st.rule_hits, 'rule hit')}, {counted(st.templates, 'template')} in {st.seconds:.2f}s "
        f"({st.mb_per_s:.0f} MB/s)",
        style="dim",
    )
    parts: list[RenderableType] = [
        Panel(head, title="crashcart diagnosis", border_style=style),
        Panel(evidence, title="evidence"),
        Panel(steps, title="next steps"),
    ]
    if d.similar or d.novel:
        parts.append(Panel(_similar_table(report), title="seen before?"))
    if report.skipped:
        title = f"skipped: {len(report.skipped)} not read, or not to the end"
        parts.append(Panel(Text("\n".join(skipped_lines(report))), title=title, border_style="yellow"))
    return Group(*parts, footer)


def _similar_table(report: Report) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    d = report.diagnosis
    if d.novel:
        note = Text("nothing similar in incident memory: a new failure", style="yellow")
        if not d.similar:
            return note
    table = Table(box=None, expand=True)
    for name in ("sim", "incident", "class → action"):
        table.add_column(name, no_wrap=True)
    table.add_column("job / resolution", no_wrap=True, overflow="ellipsis", ratio=1)
    for item in d.similar:
        table.add_row(
            f"{item.similarity:.2f}",
            Text(printable(item.id)),
            f"{item.failure_class.value} → {item.action.value}",
            Text(printable(item.job + (f": {item.resolution}" if item.resolution else ""))),
        )
    return Group(note, table) if d.novel else table


def to_markdown(report: Report) -> str:
    """Markdown fit to paste into an incident channel."""
    d = report.diagnosis
    lines = [
        f"**crashcart: `{d.failure_class.value}` → `{d.action.value}`** (confidence {d.confidence:.2f})",
        "",
        printable(d.summary, newlines=True),
        "",
        f"*{where(report)}*",
        *[f"_{note}_" for note in (empty_note(report), model_note(report)) if note],
        "",
        "**Evidence**",
        "",
    ]
    for ev in d.evidence:
        who = printable(" ".join(x for x in (ev.node, None if ev.rank is None else f"rank {ev.rank}") if x))
        lines.append(f"- `{_cite(ev.file, ev.line)}`{' (' + who + ')' if who else ''}")
        lines.append(f"  ```\n  {printable(ev.text[:400]).replace('```', '` ` `')}\n  ```")
    if d.mitigation:
        lines += ["", "**Next steps**", ""]
        lines += [f"{i}. {printable(step)}" for i, step in enumerate(d.mitigation, 1)]
    if d.novel:
        lines += ["", "_Nothing similar in incident memory: a new failure._"]
    if d.similar:
        lines += ["", "**Similar past incidents**", ""]
        lines += [
            f"- `{printable(s.id)}` ({s.similarity:.2f}): `{s.failure_class.value}` → `{s.action.value}`, "
            f"job {printable(s.job)}" + (f"; resolved: {printable(s.resolution[:200])}" if s.resolution else "")
            for s in d.similar
        ]
    if report.skipped:
        lines += ["", f"**Skipped: {len(report.skipped)} not read, or not to the end**", ""]
        lines += [f"- {line}" for line in skipped_lines(report, quote="`")]
    st = report.stats
    read = f"{counted(st.files, 'file')}, {counted(st.lines, 'line')}, {st.bytes / 1e6:.1f} MB"
    lines += ["", f"_{read} read in {st.seconds:.2f}s_"]
    return "\n".join(lines) + "\n"

"""Showing an `EvalReport`: rich tables for a terminal, Markdown for a PR comment or a results file."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from crashcart.evals.memory_eval import MemoryEvalReport
from crashcart.evals.metrics import ERROR_COLUMN, CaseResult, EvalReport
from crashcart.printable import printable, printable_name


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _summary_rows(report: EvalReport) -> list[tuple[str, str]]:
    """The headline figures, shared by both renderers so they never disagree."""
    return [
        ("cases", str(report.cases)),
        ("failed triages", str(report.errors)),
        ("accuracy", _pct(report.accuracy)),
        ("macro-F1", f"{report.macro_f1:.3f}"),
        ("action accuracy", _pct(report.action_accuracy)),
        ("evidence hit rate", f"{_pct(report.evidence_hit_rate)} of {report.evidence_cases}"),
        ("faulty-node hit rate", f"{_pct(report.faulty_node_hit_rate)} of {report.faulty_node_cases}"),
        (
            "seconds/case (mean / p50 / max)",
            f"{report.seconds_per_case:.3f} / {report.seconds_p50:.3f} / {report.seconds_max:.3f}",
        ),
    ]


def _confusion_axes(report: EvalReport) -> tuple[list[str], list[str]]:
    """Rows are the expected classes; columns every class predicted or expected, then errors if any."""
    rows = [c for c in report.per_class if c in report.confusion]  # per_class is in taxonomy order
    predicted = {p for row in report.confusion.values() for p in row}
    cols = [c for c in report.per_class if c in predicted or c in report.confusion]
    if ERROR_COLUMN in predicted:
        cols.append(ERROR_COLUMN)
    return rows, cols


def misclassified(report: EvalReport) -> list[CaseResult]:
    """The cases whose class is wrong or whose triage failed, in set order."""
    return [r for r in report.results if not r.correct]


def _predicted_label(r: CaseResult) -> str:
    if r.error is not None:
        return f"{ERROR_COLUMN}: {r.error}"
    return r.predicted_class.value if r.predicted_class else "-"


def render_text(report: EvalReport) -> RenderableType:
    """Summary, per-class P/R/F1, the confusion matrix (numbered columns to stay narrow) and the misses."""
    summary = Table(title="crashcart eval", show_header=False)
    summary.add_column("metric")
    summary.add_column("value", justify="right")
    for name, value in _summary_rows(report):
        summary.add_row(name, value)

    per_class = Table(title="per class")
    per_class.add_column("class", justify="left")
    for col in ("P", "R", "F1", "n"):
        per_class.add_column(col, justify="right")
    for cls, m in report.per_class.items():
        per_class.add_row(cls, f"{m.precision:.2f}", f"{m.recall:.2f}", f"{m.f1:.2f}", str(m.support))

    rows, cols = _confusion_axes(report)
    confusion = Table(title="confusion: expected × predicted")
    confusion.add_column("expected")
    for i, col in enumerate(cols, start=1):
        confusion.add_column("err" if col == ERROR_COLUMN else str(i), justify="right")
    index = {c: i for i, c in enumerate(cols, start=1)}
    for row in rows:
        counts = report.confusion.get(row, {})
        cells = [Text(str(counts[c]), style="green" if c == row else "red") if counts.get(c) else "·" for c in cols]
        confusion.add_row(f"{index[row]} {row}", *cells)

    parts: list[RenderableType] = [summary, per_class, confusion]
    if report.calibration:
        calib = Table(title="calibration: how often each path's verdicts were wrong")
        for col in ("decided by", "confidence", "cases", "wrong", "error"):
            calib.add_column(col, justify="left" if col == "decided by" else "right")
        for band in report.calibration:
            calib.add_row(band.decided_by, band.band, str(band.cases), str(band.wrong), f"{band.error_rate:.2f}")
        parts.append(calib)
    misses = misclassified(report)
    if misses:
        wrong = Table(title=f"misclassified ({len(misses)})")
        for col in ("case", "expected", "predicted"):
            wrong.add_column(col)
        for r in misses:  # case ids and errors carry file names: plain text, escaped, never markup
            wrong.add_row(Text(printable_name(r.id)), r.expected_class.value, Text(printable_name(_predicted_label(r))))
        parts.append(wrong)
    return Group(*parts)


def _md_table(header: list[str], rows: list[list[str]], align: list[str]) -> list[str]:
    def cell(value: str) -> str:
        return value.replace("|", "\\|").replace("\n", " ")

    sep = ["---:" if a == "right" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def render_markdown(report: EvalReport) -> str:
    """The same four parts as `render_text`, as GitHub-flavoured Markdown."""
    out = ["# crashcart eval", ""]
    out += _md_table(["metric", "value"], [list(r) for r in _summary_rows(report)], ["left", "right"])
    out += ["", "## Per class", ""]
    out += _md_table(
        ["class", "precision", "recall", "F1", "support"],
        [
            [c, f"{m.precision:.2f}", f"{m.recall:.2f}", f"{m.f1:.2f}", str(m.support)]
            for c, m in report.per_class.items()
        ],
        ["left", "right", "right", "right", "right"],
    )
    rows, cols = _confusion_axes(report)
    out += ["", "## Confusion (rows expected, columns predicted)", ""]
    out += _md_table(
        ["expected \\ predicted", *cols],
        [[r, *(str(report.confusion.get(r, {}).get(c, "")) for c in cols)] for r in rows],
        ["left", *["right"] * len(cols)],
    )
    misses = misclassified(report)
    out += ["", f"## Misclassified ({len(misses)})", ""]
    if misses:
        out += [
            f"- `{printable_name(r.id)}`: {r.expected_class.value} → {printable_name(_predicted_label(r))}"
            for r in misses
        ]
    else:
        out.append("None.")
    return "\n".join(out) + "\n"


def render_memory(report: MemoryEvalReport) -> RenderableType:
    """Rules alone vs rules + memory (leave-one-out) vs retrieval alone, with neighbour recall."""
    table = Table(
        title=f"incident memory on {report.cases} cases (k={report.k}, novelty threshold {report.threshold:.2f})"
    )
    table.add_column("mode")
    for col in ("accuracy", "macro-F1", "action acc.", "evidence hit"):
        table.add_column(col, justify="right")
    modes = [
        ("rules", report.rules),
        ("rules + memory (LOO)", report.rules_memory_loo),
        ("retrieval only", report.retrieval_only),
    ]
    if report.rules_memory_llm is not None:
        modes.append(("rules + memory + LLM", report.rules_memory_llm))
    for name, r in modes:
        table.add_row(
            name,
            f"{r.accuracy:.3f}",
            f"{r.macro_f1:.3f}",
            f"{r.action_accuracy:.3f}",
            "-" if r.evidence_hit_rate is None else f"{r.evidence_hit_rate:.3f}",
        )
    footer = (
        f"correct class is the top neighbour in {report.top1_recall:.1%} of cases, among the top "
        f"{report.k} in {report.topk_recall:.1%}; memory decided {report.memory_decided}, "
        f"{report.novel_cases} reported as new; calibrated novelty threshold {report.calibrated_threshold:.2f}"
        f"\nseen-before floor {report.close_similarity:.2f} (calibrated: {report.calibrated_close:.2f})"
    )
    again = report.recurrence
    if again is not None:
        footer += (
            f"\nrecurrence: {again.cases} cases, each buried in a {again.nodes}-node job of {again.mb_per_node:g} MB "
            f"per node: recognised {again.recurrence_recall:.3f} (rules alone {again.rules_accuracy:.3f}), own "
            f"incident nearest in {again.own_first:.1%}; {again.healthy_false_alarms} false alarms on "
            f"{again.healthy_jobs} healthy jobs"
        )
    u = report.llm_usage
    if u is not None:
        cost = "unknown cost" if u.cost_usd is None else f"${u.cost_usd:.4f}"
        footer += (
            f"\nLLM {u.model}: consulted on {u.consulted} cases, {u.calls} calls, {u.input_tokens:,} in / "
            f"{u.output_tokens:,} out tokens, {u.seconds:.1f}s, {cost}, {u.fallbacks} fallbacks, "
            f"{u.proposals} rule proposals"
        )
    return Group(table, Text(printable(footer, newlines=True)))  # the model's name is the user's: not markup

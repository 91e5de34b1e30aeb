"""render_text / render_markdown show the figures, the matrix and the misses."""

from __future__ import annotations

from rich.console import Console

from crashcart.evals.metrics import CaseResult, compute_metrics
from crashcart.evals.render import misclassified, render_markdown, render_text
from crashcart.knowledge.taxonomy import Action, FailureClass

GH, NET, OOM, STO = (
    FailureClass.GPU_HARDWARE,
    FailureClass.NETWORK,
    FailureClass.GPU_OOM,
    FailureClass.STORAGE,
)
DRAIN, FIX, ESC = Action.DRAIN_NODE_AND_RETRY, Action.FIX_JOB, Action.ESCALATE_INFRA


def report():
    """3 right (gh, net, oom), 1 wrong (gh -> network), 1 failed (storage): accuracy 3/5 = 60.0%."""
    return compute_metrics(
        [
            CaseResult(
                id="ok-gh",
                expected_class=GH,
                expected_action=DRAIN,
                predicted_class=GH,
                predicted_action=DRAIN,
                seconds=0.5,
                expected_evidence=["ECC"],
                predicted_evidence=["ECC x"],
            ),
            CaseResult(
                id="ok-net",
                expected_class=NET,
                expected_action=DRAIN,
                predicted_class=NET,
                predicted_action=DRAIN,
                seconds=0.25,
            ),
            CaseResult(
                id="ok-oom",
                expected_class=OOM,
                expected_action=FIX,
                predicted_class=OOM,
                predicted_action=FIX,
                seconds=0.25,
            ),
            CaseResult(
                id="bad-gh",
                expected_class=GH,
                expected_action=DRAIN,
                predicted_class=NET,
                predicted_action=DRAIN,
                seconds=1.0,
            ),
            CaseResult(id="err-sto", expected_class=STO, expected_action=ESC, error="InputError: empty | file"),
        ]
    )


def as_text(renderable) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_misclassified_includes_errors_in_order() -> None:
    assert [r.id for r in misclassified(report())] == ["bad-gh", "err-sto"]


def test_render_text() -> None:
    text = as_text(render_text(report()))
    assert "accuracy" in text and "60.0%" in text
    assert "evidence hit rate" in text and "100.0% of 1" in text
    assert "faulty-node hit rate" in text and "n/a of 0" in text
    assert "0.400 / 0.250 / 1.000" in text  # mean / p50 / max seconds
    assert "failed triages" in text
    # per class: gpu_hardware P 1.00 R 0.50 F1 0.67, support 2
    assert any("gpu_hardware" in ln and "1.00" in ln and "0.50" in ln and "0.67" in ln for ln in text.splitlines())
    # confusion rows are numbered; an error column appears because one triage failed
    assert "1 gpu_hardware" in text and "err" in text
    assert "bad-gh" in text and "err-sto" in text and "InputError: empty | file" in text
    assert "ok-gh" not in text


def test_render_text_without_misses_has_no_miss_table() -> None:
    rep = compute_metrics(
        [CaseResult(id="a", expected_class=GH, expected_action=DRAIN, predicted_class=GH, predicted_action=DRAIN)]
    )
    text = as_text(render_text(rep))
    assert "misclassified" not in text and "100.0%" in text


def test_render_markdown() -> None:
    md = render_markdown(report())
    lines = md.splitlines()
    assert lines[0] == "# crashcart eval"
    assert "| accuracy | 60.0% |" in lines
    assert "| macro-F1 | 0.583 |" in lines  # (2/3 + 2/3 + 1 + 0) / 4 = 0.5833 over gh, net, oom, storage
    assert "| gpu_hardware | 1.00 | 0.50 | 0.67 | 2 |" in lines
    assert "| network | 0.50 | 1.00 | 0.67 | 1 |" in lines
    assert "| expected \\ predicted | gpu_hardware | network | gpu_oom | storage | error |" in lines
    assert "| gpu_hardware | 1 | 1 |  |  |  |" in lines
    assert "| storage |  |  |  |  | 1 |" in lines
    assert "## Misclassified (2)" in lines
    assert "- `bad-gh`: gpu_hardware → network" in lines
    assert "- `err-sto`: storage → error: InputError: empty | file" in lines
    assert md.endswith("\n")


def test_render_markdown_all_correct() -> None:
    rep = compute_metrics(
        [CaseResult(id="a", expected_class=GH, expected_action=DRAIN, predicted_class=GH, predicted_action=DRAIN)]
    )
    md = render_markdown(rep)
    assert "## Misclassified (0)" in md and "None." in md
    assert "| accuracy | 100.0% |" in md and "| macro-F1 | 1.000 |" in md


def test_case_ids_and_errors_reach_the_terminal_and_markdown_escaped() -> None:
    # a case folder `x[` / `]` (rich markup raises on `[/]`) whose log's name holds an ESC
    rep = compute_metrics(
        [
            CaseResult(
                id="x[/]",
                expected_class=STO,
                expected_action=ESC,
                error="InputError: x[/]/\x1b]0;pwned\x07.log: is a binary file",
            )
        ]
    )
    for text in (as_text(render_text(rep)), render_markdown(rep)):
        assert "\x1b" not in text and "\x07" not in text
        assert "x[/]/\\x1b]0;pwned\\x07.log: is a binary file" in text

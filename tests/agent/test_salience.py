"""Which templates deserve attention: rule hits first, then lines new late in a file, then rare ones."""

from __future__ import annotations

from pathlib import Path

from crashcart.agent.salience import ERRORISH, mark_rare, salient_templates, template_totals
from crashcart.knowledge.rules import load_rules
from crashcart.parsers.scan import scan_sources
from crashcart.parsers.sources import discover


def _scans(tmp_path: Path):
    lines = [f"step {i} loss 2.{i % 10}" for i in range(300)]
    lines[5] = "warming up the frobnicator"
    lines += ["zeta-scheduler: giving up after quorum loss", "OSError: [Errno 28] No space left on device"]
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "b.log").write_text("step 1 loss 2.0\nwarming up the frobnicator\n")
    return scan_sources(discover([str(tmp_path)]).sources, load_rules(), workers=1)


def test_rare_new_and_hit_templates_are_flagged_and_ordered(tmp_path: Path) -> None:
    scans = _scans(tmp_path)
    mark_rare(scans)
    by_text = {(s.template, scan.file): s for scan in scans for s in scan.templates}
    quorum = by_text[("zeta-scheduler: giving up after quorum loss", "a.log")]
    assert quorum.new and quorum.rare and not quorum.rule_ids
    warm = by_text[("warming up the frobnicator", "a.log")]
    assert warm.rare and not warm.new  # seen early in a.log: not new
    assert not by_text[("warming up the frobnicator", "b.log")].new  # b.log is too short for "late"
    step = next(s for (t, f), s in by_text.items() if t.startswith("step") and f == "a.log")
    assert not step.rare and template_totals(scans)[step.template_id] == 299 + 1
    order = [s.template for s in salient_templates(scans)]
    assert order[0].startswith("OSError") and order[1].startswith("zeta-scheduler")
    assert all(not t.startswith("step") for t in order)


def test_errorish_words() -> None:
    assert ERRORISH.search("CRITICAL: giving up on step 4") and not ERRORISH.search("step 4 loss 2.31 lr 1e-4")

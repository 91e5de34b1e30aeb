"""Which templates deserve attention: rule hits first, then lines new late in a file, then rare ones."""

from __future__ import annotations

from pathlib import Path

from crashcart.agent.salience import ERRORISH, mark_rare, salient_templates, template_totals
from crashcart.knowledge.rules import load_rules
from crashcart.parsers.scan import scan_sources
from crashcart.parsers.sources import discover

# Real lines (Loghub's Zookeeper_2k.log, in ../shared/data) no rule knows: a quorum peer starting, and a leader's
# learner handler dying on an exception; between them the HF Trainer's progress lines.
START = "2015-07-30 23:46:27,304 - INFO  [main:QuorumPeerMain@127] - Starting quorum peer"
SHUTDOWN = (
    "2015-07-29 19:04:30,989 - ERROR [LearnerHandler-/10.10.34.11:52265:LearnerHandler@562] - "
    "Unexpected exception causing shutdown while sock still open"
)


def _progress(i: int) -> str:
    return f"{{'loss': {2 + i % 10 / 10}, 'learning_rate': 4.9e-05, 'epoch': {i / 100}}}"


def _scans(tmp_path: Path):
    lines = [_progress(i) for i in range(300)]
    lines[5] = START
    lines += [SHUTDOWN, "OSError: [Errno 28] No space left on device"]
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "b.log").write_text(_progress(1) + "\n" + START + "\n")
    return scan_sources(discover([str(tmp_path)]).sources, load_rules(), workers=1)


def test_rare_new_and_hit_templates_are_flagged_and_ordered(tmp_path: Path) -> None:
    scans = _scans(tmp_path)
    mark_rare(scans)
    by_line = {(s.first.text, scan.file): s for scan in scans for s in scan.templates}
    shutdown = by_line[(SHUTDOWN, "a.log")]
    assert shutdown.new and shutdown.rare and not shutdown.rule_ids
    start = by_line[(START, "a.log")]
    assert start.rare and not start.new  # seen early in a.log: not new
    assert not by_line[(START, "b.log")].new  # b.log is too short for "late"
    step = next(s for (t, f), s in by_line.items() if t.startswith("{'loss'") and f == "a.log")
    assert not step.rare and template_totals(scans)[step.template_id] == 299 + 1
    order = [s.template for s in salient_templates(scans)]
    assert order[0].startswith("OSError") and order[1] == shutdown.template
    assert all(not t.startswith("{'loss'") for t in order)


def test_errorish_words() -> None:
    assert ERRORISH.search("CRITICAL: giving up on step 4") and not ERRORISH.search("step 4 loss 2.31 lr 1e-4")

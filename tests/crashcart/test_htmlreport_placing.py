"""crashcart/htmlreport/placing.py: a line without a time is placed by its file's timed lines around it."""

from __future__ import annotations

from pathlib import Path

import crashcart
from crashcart.htmlreport.placing import Placer
from crashcart.knowledge.records import LineRef

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "xid79-job" / "logs"


def test_untimed_lines_fall_between_their_files_timed_lines() -> None:
    report = crashcart.triage([str(EXAMPLE)], workers=1)
    placer = Placer(report)
    assert placer.axis.mode == "time"
    timed = [e for e in report.events if e.time is not None]
    untimed = [e for e in report.events if e.time is None]
    assert timed and untimed  # the example has both (checkpoint lines carry no timestamp)
    for ev in untimed:
        found = placer.time_of(ev)
        if found is None:
            continue
        when, estimated = found
        assert estimated
        same_file = sorted((e.line, e.time) for e in timed if e.file == ev.file)
        before = [t for line, t in same_file if line < ev.line]
        after = [t for line, t in same_file if line > ev.line]
        if before and after:
            assert before[-1].replace(tzinfo=None) <= when <= after[0].replace(tzinfo=None)
    for ev in timed:
        place = placer.place(ev)
        assert place is not None and not place.estimated and 0 <= place.x <= 1


def test_a_file_with_no_timed_line_is_not_placed_and_a_zoom_moves_the_axis() -> None:
    report = crashcart.triage([str(EXAMPLE)], workers=1)
    placer = Placer(report)
    stray = LineRef(file="no-such-file.log", line=3, text=report.events[0].text)
    assert placer.place(stray) is None
    assert placer.axis.start is not None and placer.axis.end is not None
    middle = placer.axis.start + (placer.axis.end - placer.axis.start) / 2
    zoomed = placer.zoomed(middle, placer.axis.end)
    first = next(e for e in report.events if e.time is not None and e.time.replace(tzinfo=None) < middle)
    place = zoomed.place(first)
    assert place is not None and place.x < 0  # before the window: the timeline leaves it out

"""Tests for knowledge/context_lines.py: hint and teardown lines are data, each family with real, sourced examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.knowledge.context_lines import CONTEXT_LINES, hint_pattern, load_context_lines, teardown_scope
from crashcart.knowledge.errors import KnowledgeError


def test_the_shipped_file_loads_and_every_example_names_its_source() -> None:
    shipped = load_context_lines()
    families = [*shipped.hints, *shipped.teardown]
    assert {f.id for f in shipped.hints} >= {"hint.cuda_async", "hint.cuda_launch_blocking", "hint.torch_use_cuda_dsa"}
    assert {f.scope for f in shipped.teardown} == {"node", "job"}
    assert all(e.seen_in for f in families for e in f.examples)
    assert len({f.id for f in families}) == len(families)


def test_every_hint_example_matches_the_combined_pattern_and_no_listed_message_does() -> None:
    shipped = load_context_lines()
    assert all(hint_pattern().match(e.line.lstrip()) for f in shipped.hints for e in f.examples)
    # WangLibo1995/GeoSeg#20, sgl-project/sglang#3460, open-mmlab/mmsegmentation#1356: the message comes first
    assert [s.line for s in shipped.not_hints if hint_pattern().match(s.line)] == []
    assert len(shipped.not_hints) >= 3


def test_every_teardown_example_is_found_with_its_scope_and_a_hint_is_no_teardown() -> None:
    shipped = load_context_lines()
    assert all(teardown_scope(e.line) == f.scope for f in shipped.teardown for e in f.examples)
    assert all(teardown_scope(e.line) is None for f in shipped.hints for e in f.examples)


_HEAD = (
    "version: 1\nteardown: [{id: teardown.x, printed_by: some launcher, scope: job, words: [x], pattern: 'x', "
    "examples: [{line: x, seen_in: a/b#1}]}]\n"
)
_HINT = "hints: [{id: hint.x, printed_by: a program, pattern: 'x', examples: [{line: x, seen_in: %s}]}]\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (  # both lines as printed in bghira/SimpleTuner#1775
            _HEAD + "hints: [{id: hint.x, printed_by: a program, pattern: 'For debugging consider passing', "
            "examples: [{line: 'Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.', "
            "seen_in: a/b#1}]}]\n",
            "does not match its example",
        ),
        (
            _HEAD + "hints: [{id: hint.x, printed_by: a program, pattern: '(unclosed', "
            "examples: [{line: x, seen_in: a/b#1}]}]\n",
            "does not compile",
        ),
        (
            _HEAD + _HINT % "nowhere",
            "seen_in",
        ),
        (
            _HEAD + _HINT % "a/b#1" + "not_hints: [{line: 'x then more', seen_in: a/b#2}]\n",
            "listed under not_hints",
        ),
        (_HEAD.replace("words: [x]", "words: [y]") + _HINT % "a/b#1", "holds none of its words"),
        (
            _HEAD.replace("version: 1", "version: 2") + _HINT % "a/b#1",
            "has version 2",
        ),
    ],
)
def test_a_broken_file_is_one_knowledge_error_naming_it(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / CONTEXT_LINES.name
    path.write_text(text)
    with pytest.raises(KnowledgeError, match=r"context-lines file") as err:
        load_context_lines(path)
    assert str(path) in str(err.value) and message in str(err.value)
